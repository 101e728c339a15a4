package wiretest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// TestFixtureDecidesEveryField fails as soon as spec/capabilities.yaml gains
// a field the fixture does not list: the new field is zero (unspecified)
// in the keyed literal until someone writes its line.
func TestFixtureDecidesEveryField(t *testing.T) {
	c := wiretest.Capabilities()
	for _, f := range wire.CapabilityFields() {
		require.True(t, f.Of(&c).Valid(), "wiretest.Capabilities does not decide %q: add it to the fixture", f.Name)
	}
	require.NoError(t, c.Validate())
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var members map[string]bool
	require.NoError(t, json.Unmarshal(b, &members))
	require.Len(t, members, wire.NumCapabilities)
}

func TestFixtureSupportsEverything(t *testing.T) {
	c := wiretest.Capabilities()
	for _, f := range wire.CapabilityFields() {
		require.Equal(t, wire.Supported, *f.Of(&c), f.Name)
	}
}

// each applies opt to a fresh fixture and reports the value of every field.
func each(opt wiretest.Option) map[string]wire.CapabilitySupport {
	c := wiretest.Capabilities(opt)
	out := map[string]wire.CapabilitySupport{}
	for _, f := range wire.CapabilityFields() {
		out[f.Name] = *f.Of(&c)
	}
	return out
}

func TestOptions(t *testing.T) {
	for _, f := range wire.CapabilityFields() {
		t.Run(f.Name, func(t *testing.T) {
			for opt, want := range map[string]struct {
				o       wiretest.Option
				named   wire.CapabilitySupport
				others  wire.CapabilitySupport
				isValid bool
			}{
				"Unsupports":  {wiretest.Unsupports(f.Name), wire.Unsupported, wire.Supported, true},
				"Unspecified": {wiretest.Unspecified(f.Name), wire.CapabilityUnspecified, wire.Supported, false},
				"Only":        {wiretest.Only(f.Name), wire.Supported, wire.Unsupported, true},
			} {
				got := each(want.o)
				for name, v := range got {
					if name == f.Name {
						require.Equal(t, want.named, v, "%s(%s): %s", opt, f.Name, name)
					} else {
						require.Equal(t, want.others, v, "%s(%s): %s", opt, f.Name, name)
					}
				}
				c := wiretest.Capabilities(want.o)
				if want.isValid {
					require.NoError(t, c.Validate(), opt)
				} else {
					var fe *wire.FieldError
					require.ErrorAs(t, c.Validate(), &fe, opt)
					require.Equal(t, f.Name, fe.Field)
				}
			}
			// Supports undoes Unsupports; options apply in order.
			c := wiretest.Capabilities(wiretest.Unsupports(f.Name), wiretest.Supports(f.Name))
			require.Equal(t, wiretest.Capabilities(), c)
		})
	}
}

func TestOptionsTakeSeveralNames(t *testing.T) {
	c := wiretest.Capabilities(wiretest.Only("streaming", "usage"))
	require.Equal(t, wire.Supported, c.Streaming)
	require.Equal(t, wire.Supported, c.Usage)
	require.Equal(t, wire.Unsupported, c.Resume)
	c = wiretest.Capabilities(wiretest.Unsupports("resume", "mcp_http_bearer_auth"))
	require.Equal(t, wire.Unsupported, c.Resume)
	require.Equal(t, wire.Unsupported, c.MCPHTTPBearerAuth)
	require.Equal(t, wire.Supported, c.MCPHTTPRequired)
	// A plain closure is an Option too.
	c = wiretest.Capabilities(func(c *wire.AgentKindCapabilities) { c.Steering = wire.Unsupported })
	require.Equal(t, wire.Unsupported, c.Steering)
}

func TestUnknownNamePanicsWhereItIsWritten(t *testing.T) {
	for name, build := range map[string]func(){
		"Supports":    func() { wiretest.Supports("teleport") },
		"Unsupports":  func() { wiretest.Unsupports("streaming", "Streaming") },
		"Unspecified": func() { wiretest.Unspecified("") },
		"Only":        func() { wiretest.Only("tool_items") },
	} {
		require.Panics(t, build, name)
	}
}

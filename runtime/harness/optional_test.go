package harness_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Supports decides every field: the named ones Supported, all the others
// Unsupported, none left unspecified.
func TestSupportsDecidesEveryCapability(t *testing.T) {
	named := map[string]bool{"streaming": true, "steering": true, "mcp_http_bearer_auth": true}
	c, err := harness.Supports("streaming", "steering", "mcp_http_bearer_auth", "steering")
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Len(t, wire.CapabilityFields(), wire.NumCapabilities)
	for _, f := range wire.CapabilityFields() {
		assert.Equal(t, wire.Support(named[f.Name]), *f.Of(&c), f.Name)
	}
	none, err := harness.Supports()
	require.NoError(t, err)
	require.NoError(t, none.Validate())
	for _, f := range wire.CapabilityFields() {
		assert.Equal(t, wire.Unsupported, *f.Of(&none), f.Name)
	}
}

// A misspelt capability is refused by name, never silently unsupported.
func TestSupportsRefusesAnUnknownName(t *testing.T) {
	_, err := harness.Supports("streaming", "steerring")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"steerring" is not a capability`)
	assert.Contains(t, err.Error(), "steering", "the known names are listed")
}

// EveryTurn is the admission table's always row: a declaration supporting
// just those (and the Session's environment row) admits a plain Turn, and
// one missing any of them does not.
func TestEveryTurnIsWhatAPlainTurnRequires(t *testing.T) {
	assert.Equal(t, []string{"streaming", "steering", "tool_observations", "preparation", "execution_controls",
		"durable_input_receipts", "durable_turns"}, harness.EveryTurn())
	req, err := wire.RequiredCapabilities(wire.AdmissionInput{Environment: wire.EnvironmentTypeNone, Agent: wire.AgentFeatures{MultiAgentEnabled: true}})
	require.NoError(t, err)
	c, err := harness.Supports(append(harness.EveryTurn(), "environment_none", "subagent_observations")...)
	require.NoError(t, err)
	require.NoError(t, req.Check(c, true))
	for _, n := range harness.EveryTurn() {
		f, _ := wire.CapabilityFieldByName(n)
		less := c
		*f.Of(&less) = wire.Unsupported
		assert.Error(t, req.Check(less, true), n)
	}
}

func ExampleSupports() {
	caps, err := harness.Supports(append(harness.EveryTurn(), "environment_none", "subagent_control")...)
	if err != nil {
		panic(err)
	}
	d := harness.Declaration{Kind: "shout", Available: true, Capabilities: caps}
	fmt.Println(d.Validate() == nil, caps.Streaming, caps.Permissions)
	// Output: true supported unsupported
}

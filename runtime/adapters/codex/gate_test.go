package codex

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The adapter runs the capability gate on its own side of the interface:
// an operation the Turn's snapshot does not declare is refused before any
// native call (there is no process here to call).
func TestGateRefusesUndeclaredOperations(t *testing.T) {
	caps := wiretest.Capabilities(wiretest.Unsupports("steering", "permissions", "message_images"))
	e := &executor{cur: &turnRun{runID: "r", caps: caps, turnKnown: make(chan struct{}), endedCh: make(chan struct{}),
		asked: map[string]*question{}, byRPC: map[string]*question{}, steers: map[string]*steer{}}}
	err := e.Steer(t.Context(), "r", "in-1", text("more"))
	assert.ErrorIs(t, err, harness.ErrUnsupportedOperation)
	yes := true
	err = e.Decide(t.Context(), "r", harnessAnswer("p", &wire.PermissionDecision{DeliveryID: "d", Approved: &yes}))
	assert.ErrorIs(t, err, harness.ErrUnsupportedOperation)
	assert.ErrorIs(t, e.Steer(t.Context(), "other", "in-1", text("more")), harness.ErrRunInactive)

	// With the capabilities declared, an image is still refused and an
	// unknown interaction is not pending.
	e.cur.caps = wiretest.Capabilities()
	err = e.Steer(t.Context(), "r", "in-2", wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentImage, ImageURL: "https://x/y.png"}}}})
	assert.ErrorIs(t, err, harness.ErrUnsupportedOperation)
	err = e.Decide(t.Context(), "r", harnessAnswer("nope", &wire.PermissionDecision{DeliveryID: "d", Approved: &yes}))
	assert.ErrorIs(t, err, harness.ErrRunInactive)
}

func TestNewExecutorRunsTheGate(t *testing.T) {
	cfg := testConfig(fakeCodex(t, "codex-cli "+PinnedVersion))
	cfg.StateDir = t.TempDir()
	a, err := New(cfg)
	assert.NoError(t, err)
	hc := hcfg(a, t.TempDir())
	hc.Declaration.Capabilities = wiretest.Capabilities(wiretest.Unsupports("resume"))
	hc.Configuration.AgentSessionID = "thread-1"
	_, err = a.NewExecutor(t.Context(), hc)
	assert.ErrorIs(t, err, harness.ErrUnsupportedOperation)
	hc = hcfg(a, t.TempDir())
	hc.Configuration.AgentOptions = &wire.AgentOptions{HarnessConfig: wire.NativeJSON(`{"a":1}`)}
	_, err = a.NewExecutor(t.Context(), hc)
	assert.ErrorContains(t, err, "harness_config")
}

package gateway_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/placement"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// scriptedPolicy answers every Order with the same IDs and records what
// it was offered.
type scriptedPolicy struct {
	mu      sync.Mutex
	answer  []string
	offered [][]string
}

func (p *scriptedPolicy) Order(t placement.Turn, ds []placement.Device) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	p.offered = append(p.offered, ids)
	return p.answer
}

func (p *scriptedPolicy) set(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = ids
}

// The policy orders the eligible devices and nothing else: it is offered
// only this project's devices that admit the Turn, the device it prefers
// runs the Turn, and the IDs it invents (another project's device, one
// that is not connected) are ignored. A policy that chooses none leaves
// the Turn queued and says why.
func TestPlacementPolicyOrdersOnlyEligibleDevices(t *testing.T) {
	policy := &scriptedPolicy{}
	e := newEnvStore(t, true, memory.New(), func(c *gateway.Config) { c.Placement = policy })
	e.runtime("dev-a", wiretest.Capabilities())
	e.waitDeclared("dev-a", true)
	b := e.runtime("dev-b", wiretest.Capabilities())
	e.waitDeclared("dev-b", true)
	q := e.issue(store.KindDevice, "dev-q", "q")
	ws, _, err := e.dial("dev-q", q)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.CloseNow() })
	yes := true
	(&runtimeSide{t: t, ws: ws}).send("", wire.Heartbeat{TS: 1, SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()}}})
	e.waitDeclared("dev-q", true)

	policy.set()
	turn := e.queueTurn("none")
	e.gw.Kick()
	require.NoError(t, e.gw.Settled(context.Background()))
	w, ok := e.gw.Waiting(turn.ID)
	require.True(t, ok)
	assert.Equal(t, "device_busy", w.Reason)
	assert.Contains(t, w.Detail, "placement policy")

	policy.set("dev-q", "dev-gone", "dev-b", "dev-a")
	e.gw.Kick()
	prepID, _ := b.prepare()
	s := b.start(prepID)
	got := e.waitTurn(turn.ID, store.TurnRunning)
	assert.Equal(t, "dev-b", got.DeviceID, "the first eligible device the policy named")
	b.send(s.RunID, wire.Done{})
	e.waitTurn(turn.ID, store.TurnCompleted)

	policy.mu.Lock()
	defer policy.mu.Unlock()
	require.NotEmpty(t, policy.offered)
	for _, ids := range policy.offered {
		assert.ElementsMatch(t, []string{"dev-a", "dev-b"}, ids, "only the Turn's project's eligible devices are offered")
	}
}

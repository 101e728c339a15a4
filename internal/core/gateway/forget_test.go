package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// TestConnectionForgetsWhatItsDriverForgets: a connection keeps its
// records of a Turn's preparation, Run and questions only while its driver
// retains the instances: once they are past the driver's retention, the
// records of a completed Turn (which asked a question) and of a Turn whose
// preparation failed before any Run started are gone.
func TestConnectionForgetsWhatItsDriverForgets(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()
	one := e.queueTurn("one")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	r.send(s.RunID, wire.PermissionRequest{RequestID: "perm-1", Tool: "shell", Title: "run ls"})
	r.send(s.RunID, wire.Done{})
	e.waitTurn(one.ID, store.TurnCompleted)

	two := e.queueTurn("two")
	e.gw.Kick()
	m := r.next()
	require.Equal(t, wire.TypeExecutionPrepare, m.Type)
	r.send(m.ID, wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpPrepare, ErrorCode: wire.PrepCodeExecutorCapacity})
	e.waitTurn(two.ID, store.TurnFailed)

	n, ok := e.gw.TickRecords(ctx, "dev-1")
	require.True(t, ok)
	assert.Equal(t, [3]int{2, 2, 1}, n, "kept while the driver retains the instances")

	// A heartbeat halfway keeps the connection inside its read deadline
	// (60 s on the same clock) while the retention (a minute) runs out.
	e.clock.Advance(30 * time.Second)
	frames, _ := e.gw.Sync(ctx, "dev-1")
	r.send("", wire.Heartbeat{TS: 2, SupportedAgentKinds: heartbeatKinds()})
	require.Eventually(t, func() bool {
		now, ok := e.gw.Sync(ctx, "dev-1")
		return ok && now > frames
	}, 10*time.Second, time.Millisecond)
	n, _ = e.gw.TickRecords(ctx, "dev-1")
	assert.Equal(t, [3]int{2, 2, 1}, n, "within the retention")

	e.clock.Advance(31 * time.Second)
	n, ok = e.gw.TickRecords(ctx, "dev-1")
	require.True(t, ok, "the connection is still up")
	assert.Equal(t, [3]int{0, 0, 0}, n, "forgotten with the driver's instances")
}

func heartbeatKinds() []wire.SupportedAgentKind {
	yes := true
	return []wire.SupportedAgentKind{{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()}}
}

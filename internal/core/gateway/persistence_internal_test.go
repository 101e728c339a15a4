package gateway

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/peer"
)

// An unwritten Turn's mark outlives the write of its failure for as long
// as its worker holds the Turn: a batch its connection hands the writer
// after the failure was written (frames delivered before the loop saw the
// abort) writes nothing of it; the mark goes with the worker.
func TestUnwrittenMarkOutlivesTheFailureWrite(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &Gateway{turns: map[string]*turn.Instance{}, wake: make(chan struct{}, 1), ctx: ctx, stores: ctx}
	g.cfg = Config{Store: st, Clock: peer.NewManualClock(now), Logger: slog.New(slog.DiscardHandler), Journal: nopJournal{st}}
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: now}))
	require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses", Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: now}))
	require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: "t", SessionID: "ses", Input: []byte(`[]`), CreatedAt: now}))
	claim := store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run", At: now}
	for _, m := range []store.TurnMove{
		{TurnID: "t", From: store.TurnQueued, To: store.TurnClaimed, Claim: &claim, At: now},
		{TurnID: "t", RunID: "run", From: store.TurnClaimed, To: store.TurnStarting, At: now},
		{TurnID: "t", RunID: "run", From: store.TurnStarting, To: store.TurnRunning, At: now},
	} {
		require.NoError(t, st.MoveTurn(ctx, m))
	}
	g.turns["t"] = turn.NewInstance(turn.Ref{ID: "t", RunID: "run", State: store.TurnRunning})

	g.markUnwritten("t", "run", assert.AnError)
	g.recordUnwritten()
	got, err := st.GetTurn(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, store.ReasonPersistenceFailed, got.Outcome.Reason)
	assert.Empty(t, g.UnwrittenTurns(), "the failure is written")

	late := store.Batch{Events: []store.Event{{TurnID: "t", RunID: "run", Type: "done", Payload: []byte(`{}`), At: now}},
		Finishes: []store.TurnMove{{TurnID: "t", RunID: "run", From: store.TurnRunning, To: store.TurnCompleted, At: now}}}
	assert.True(t, g.withoutUnwritten(late).Empty(), "a batch after the failure writes nothing of the Turn")

	delete(g.turns, "t") // the worker lets the Turn go
	g.recordUnwritten()
	assert.False(t, g.isUnwritten("t"), "the mark went with the worker")
}

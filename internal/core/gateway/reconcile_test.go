package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/peer"
)

// A Core that starts on a store an earlier process left resolves that
// process's Turns (claimed: delivery_unknown, running:
// event_stream_incomplete, running with a journaled cancellation:
// cancel_unconfirmed), replays none, keeps the queued ones and marks
// its devices offline.
func TestStartReconcilesWhatAnEarlierCoreLeft(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := clock.Now()
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: now}))
	// A Session per Turn: a Session has one active Turn at a time.
	for _, id := range []string{"queued", "claimed", "starting", "cancelled-early", "running", "cancelling", "done"} {
		require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses-" + id, Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: now}))
		require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: id, SessionID: "ses-" + id, Input: []byte(`[]`), CreatedAt: now}))
	}
	epoch, err := st.AcquireOwner(ctx, "dev-1", now)
	require.NoError(t, err)
	claim := func(id string) store.Claim {
		c := store.Claim{DeviceID: "dev-1", OwnerEpoch: epoch, RunID: "run-" + id, At: now}
		require.NoError(t, st.MoveTurn(ctx, storetest.ClaimMove(id, c)))
		return c
	}
	claim("claimed")
	require.NoError(t, st.MoveTurn(ctx, storetest.ClaimMove("starting", store.Claim{DeviceID: "dev-1", OwnerEpoch: epoch, RunID: "run-starting", At: now})))
	require.NoError(t, st.MoveTurn(ctx, store.TurnMove{TurnID: "starting", RunID: "run-starting", From: store.TurnClaimed, To: store.TurnStarting, At: now}))
	claim("cancelled-early")
	require.NoError(t, st.MoveTurn(ctx, store.TurnMove{TurnID: "cancelled-early", RunID: "run-cancelled-early", From: store.TurnClaimed, To: store.TurnCancelling, At: now}))
	start := func(id string) {
		require.NoError(t, storetest.Start(st, id, store.Claim{DeviceID: "dev-1", OwnerEpoch: epoch, RunID: "run-" + id, At: now}))
	}
	start("running")
	start("cancelling")
	_, err = st.AppendEvent(ctx, store.Event{TurnID: "cancelling", RunID: "run-cancelling", Type: gateway.JournalCancelRequested,
		Payload: []byte(`{"delivery_id":"dlv-1"}`), At: now})
	require.NoError(t, err)
	// A cancellation of an earlier Run of the Turn is not this Run's.
	_, err = st.AppendEvent(ctx, store.Event{TurnID: "running", RunID: "run-other", Type: gateway.JournalCancelRequested,
		Payload: []byte(`{"delivery_id":"dlv-0"}`), At: now})
	require.NoError(t, err)
	start("done")
	require.NoError(t, st.MoveTurn(ctx, storetest.FinishMove("done", "run-done", store.TurnRunning, store.TurnCompleted, store.Outcome{}, now)))

	// A poll interval beyond the test keeps the worker from claiming the
	// queued Turn (no device is connected anyway).
	g := gateway.New(gateway.Config{Store: st, Credentials: credential.Issuer{Store: st, Now: clock.Now}, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: time.Hour})
	defer g.Close()

	for id, want := range map[string]store.Status{
		"queued":   {State: "queued"},
		"claimed":  {State: "failed", Reason: store.ReasonDeliveryUnknown},
		"starting": {State: "failed", Reason: store.ReasonDeliveryUnknown},
		// Cancelled before its start: nothing of it ran.
		"cancelled-early": {State: "cancelled"},
		"running":         {State: "failed", Reason: store.ReasonEventStreamIncomplete},
		"cancelling":      {State: "failed", Reason: store.ReasonCancelUnconfirmed},
		"done":            {State: "completed"},
	} {
		tr, err := st.GetTurn(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, tr.Status(), id)
		assert.Empty(t, tr.Outcome.EngineErrorCode, "no native failure is invented")
	}
	evs, err := st.Events(ctx, "running", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, "observation", evs[1].Type)
	assert.JSONEq(t, `{"reason":"event_stream_incomplete","cause":"core_restarted"}`, string(evs[1].Payload))
	evs, err = st.Events(ctx, "cancelling", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 2, "the cancellation is kept, no receipt or done invented")
	assert.JSONEq(t, `{"reason":"cancel_unconfirmed","cause":"core_restarted"}`, string(evs[1].Payload))
	d, err := st.GetDevice(ctx, "dev-1")
	require.NoError(t, err)
	assert.False(t, d.Connected)
	assert.Equal(t, epoch, d.OwnerEpoch, "the next connection fences a new epoch")
}

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
	"github.com/agentwire/agentwire/core/gateway"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/peer"
)

// A Core that starts on a store an earlier process left resolves that
// process's Turns (claimed: delivery_unknown, running:
// event_stream_incomplete), replays none, keeps the queued ones and marks
// its devices offline.
func TestStartReconcilesWhatAnEarlierCoreLeft(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := clock.Now()
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: now}))
	require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses", Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: now}))
	for _, id := range []string{"queued", "claimed", "running", "done"} {
		require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: id, SessionID: "ses", Input: []byte(`[]`), CreatedAt: now}))
	}
	epoch, err := st.AcquireOwner(ctx, "dev-1", now)
	require.NoError(t, err)
	claim := func(id string) {
		require.NoError(t, st.ClaimTurn(ctx, id, store.Claim{DeviceID: "dev-1", OwnerEpoch: epoch, RunID: "run-" + id, At: now}))
	}
	claim("claimed")
	claim("running")
	require.NoError(t, st.StartTurn(ctx, "running", "run-running", now))
	claim("done")
	require.NoError(t, st.StartTurn(ctx, "done", "run-done", now))
	require.NoError(t, st.FinishTurn(ctx, "done", "run-done", store.TurnCompleted, store.Outcome{}, now))

	// A poll interval beyond the test keeps the worker from claiming the
	// queued Turn (no device is connected anyway).
	g := gateway.New(gateway.Config{Store: st, Credentials: credential.Issuer{Store: st, Now: clock.Now}, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: time.Hour})
	defer g.Close()

	for id, want := range map[string]store.Status{
		"queued":  {State: "queued"},
		"claimed": {State: "failed", Reason: store.ReasonDeliveryUnknown},
		"running": {State: "failed", Reason: store.ReasonEventStreamIncomplete},
		"done":    {State: "completed"},
	} {
		tr, err := st.GetTurn(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, tr.Status(), id)
		assert.Empty(t, tr.Outcome.EngineErrorCode, "no native failure is invented")
	}
	evs, err := st.Events(ctx, "running", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, "observation", evs[0].Type)
	assert.JSONEq(t, `{"reason":"event_stream_incomplete","cause":"core_restarted"}`, string(evs[0].Payload))
	d, err := st.GetDevice(ctx, "dev-1")
	require.NoError(t, err)
	assert.False(t, d.Connected)
	assert.Equal(t, epoch, d.OwnerEpoch, "the next connection fences a new epoch")
}

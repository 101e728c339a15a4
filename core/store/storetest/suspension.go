package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// A suspension attempt moves only from the state its writer expects; a
// settled attempt never moves again; an Environment has at most one
// unsettled attempt; the attempts outlive reopening the store (sqlite's
// own test) and are listed and found by Environment.
func testSuspensions(t *testing.T, s store.Store) {
	seed(t, s, 0)
	a := store.Suspension{ID: "s-1", EnvironmentID: "env", DeviceID: "dev", OwnerEpoch: 3, State: "idle", CreatedAt: T0}
	require.NoError(t, s.CreateSuspension(ctx, a))
	assert.ErrorIs(t, s.CreateSuspension(ctx, a), store.ErrConflict, "same ID")
	b := store.Suspension{ID: "s-2", EnvironmentID: "env", DeviceID: "dev", State: "idle", CreatedAt: T0.Add(time.Second)}
	assert.ErrorIs(t, s.CreateSuspension(ctx, b), store.ErrConflict, "a second unsettled attempt of the Environment")

	got, err := s.GetSuspension(ctx, "s-1")
	require.NoError(t, err)
	assert.Equal(t, a.EnvironmentID, got.EnvironmentID)
	assert.Equal(t, uint64(3), got.OwnerEpoch)
	assert.Equal(t, "idle", got.State)
	assert.False(t, got.Settled)
	assert.Equal(t, T0, got.UpdatedAt)
	_, err = s.GetSuspension(ctx, "nope")
	assert.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "s-1", From: "idle", To: "quiescing", At: T0.Add(time.Millisecond)}, ""))
	// A newer connection adopts it: only the owner epoch changes, and
	// only from the state its writer read.
	assert.ErrorIs(t, s.AdoptSuspension(ctx, "s-1", "idle", 4), store.ErrStale, "not in the expected state")
	assert.ErrorIs(t, s.AdoptSuspension(ctx, "nope", "quiescing", 4), store.ErrNotFound)
	require.NoError(t, s.AdoptSuspension(ctx, "s-1", "quiescing", 4))
	got, err = s.GetSuspension(ctx, "s-1")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), got.OwnerEpoch)
	assert.Equal(t, "quiescing", got.State)
	assert.Equal(t, T0.Add(time.Millisecond), got.UpdatedAt, "adoption dates nothing: the restored timers run from the last move")
	assert.ErrorIs(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "s-1", From: "idle", To: "suspended", At: T0}, ""), store.ErrStale, "not in the expected state")
	assert.ErrorIs(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "nope", From: "idle", To: "quiescing", At: T0}, ""), store.ErrNotFound)
	require.NoError(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "s-1", From: "quiescing", To: "quiesce_refused", At: T0.Add(2 * time.Millisecond)}, "resource_busy"))
	assert.ErrorIs(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "s-1", From: "quiescing", To: "suspended", At: T0}, ""), store.ErrStale, "settled attempts never move")
	// Moves the suspension table cannot make never reach the database.
	for _, bad := range []store.Move{
		{Machine: "suspension", Key: "s-1", From: "quiesce_refused", To: "resuming"}, // from a terminal state
		{Machine: "suspension", Key: "s-1", From: "quiescing", To: "quiesced"},       // no such state
		{Machine: "suspension", Key: "s-1", From: "resumed", To: "idle"},             // terminal, and backwards
		{Machine: "suspension", Key: "s-1", From: "suspended", To: "idle"},           // the table never returns to idle
		{Machine: "suspension", Key: "s-1", From: "quiescing", To: store.NotSent},    // only an unsent attempt ends unsent
		{Machine: "workspace_write", Key: "s-1", From: "beginning", To: "committing"},
	} {
		assert.ErrorIs(t, s.TransitionSuspension(ctx, bad, ""), store.ErrInvalid, "%+v", bad)
	}
	got, err = s.GetSuspension(ctx, "s-1")
	require.NoError(t, err)
	assert.Equal(t, "quiesce_refused", got.State)
	assert.True(t, got.Settled)
	assert.Equal(t, "resource_busy", got.ErrorCode)
	assert.Equal(t, T0.Add(2*time.Millisecond), got.UpdatedAt)
	assert.ErrorIs(t, s.AdoptSuspension(ctx, "s-1", "quiesce_refused", 5), store.ErrStale, "a settled attempt is carried by no connection")

	// Settled: a new attempt may open; an empty code keeps the old one.
	require.NoError(t, s.CreateSuspension(ctx, b))
	require.NoError(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "s-2", From: "idle", To: "quiescing", At: T0.Add(time.Second)}, ""))
	latest, err := s.LatestSuspension(ctx, "env")
	require.NoError(t, err)
	assert.Equal(t, "s-2", latest.ID)
	_, err = s.LatestSuspension(ctx, "other")
	assert.ErrorIs(t, err, store.ErrNotFound)
	open, err := s.OpenSuspensions(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
	assert.Equal(t, "s-2", open[0].ID)
	assert.Zero(t, open[0].OwnerEpoch, "an attempt created without an owner epoch reads 0")
}

// Concurrent writers that expect the same state: exactly one moves the
// attempt (a stale reply can never move it a second time), and of many
// attempts created at once for one Environment exactly one is stored.
func testSuspensionRace(t *testing.T, s store.Store) {
	seed(t, s, 0)
	n := race(t, 16, store.ErrConflict, func(i int) error {
		return s.CreateSuspension(ctx, store.Suspension{ID: fmt.Sprintf("s-%d", i), EnvironmentID: "env", DeviceID: "dev", State: "idle", CreatedAt: T0})
	})
	assert.Equal(t, 1, n)
	open, err := s.OpenSuspensions(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
	id := open[0].ID
	moves := []string{"quiescing", "expired"}
	n = race(t, 16, store.ErrStale, func(i int) error {
		return s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: id, From: "idle", To: moves[i%2], At: T0}, "")
	})
	assert.Equal(t, 1, n)
}

// The newest initialization outcome of an Environment is kept; an older
// one does not replace it; an unknown Environment is not found.
func testInitializations(t *testing.T, s store.Store) {
	seed(t, s, 0)
	_, err := s.GetInitialization(ctx, "env")
	assert.ErrorIs(t, err, store.ErrNotFound)
	first := store.Initialization{EnvironmentID: "env", DeviceID: "dev", OwnerEpoch: 1, Outcome: "rejected", Step: "/workspace/a", ErrorCode: "invalid_request", ExitCode: -1, At: T0.Add(time.Second)}
	require.NoError(t, s.RecordInitialization(ctx, first))
	older := first
	older.Outcome, older.At = "completed", T0
	require.NoError(t, s.RecordInitialization(ctx, older))
	got, err := s.GetInitialization(ctx, "env")
	require.NoError(t, err)
	assert.Equal(t, first, got, "an older outcome does not replace a newer one")
	newer := store.Initialization{EnvironmentID: "env", DeviceID: "dev", OwnerEpoch: 2, Outcome: "failed", Step: "configure", ErrorCode: "runtime_preparation_failed", ExitCode: 3, At: T0.Add(2 * time.Second)}
	require.NoError(t, s.RecordInitialization(ctx, newer))
	got, err = s.GetInitialization(ctx, "env")
	require.NoError(t, err)
	assert.Equal(t, newer, got)
	assert.ErrorIs(t, s.RecordInitialization(ctx, store.Initialization{EnvironmentID: "nope", At: T0}), store.ErrNotFound)

	// The declared initialization is kept with the Environment.
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "env-init", Project: "p", Type: "self_hosted", Binding: raw(`{"id":"x"}`), Initialization: raw(`{"files":[]}`), CreatedAt: T0}))
	e, err := s.GetEnvironment(ctx, "env-init")
	require.NoError(t, err)
	assert.JSONEq(t, `{"files":[]}`, string(e.Initialization))
	e, err = s.GetEnvironment(ctx, "env")
	require.NoError(t, err)
	assert.Nil(t, e.Initialization)
}

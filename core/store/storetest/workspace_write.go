package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// testWorkspaceWriteStates: a write keeps its owner through its machine
// states and an unknown end; only a release or an operator's resolution
// frees the Session for a successor, and every move is conditional.
func testWorkspaceWriteStates(t *testing.T, s store.Store) {
	seed(t, s, 0)
	w := store.WorkspaceWrite{MutationID: "m1", SessionID: "ses", Path: "a.txt", CreatedAt: T0,
		WriteDetail: store.WriteDetail{State: "beginning", DeviceID: "dev", SizeBytes: 5, SHA256: "ab"}}
	require.NoError(t, s.ReserveWorkspaceWrite(ctx, w))
	got, err := s.UnsettledWorkspaceWrite(ctx, "ses")
	require.NoError(t, err)
	assert.Equal(t, w.WriteDetail, got.WriteDetail)
	_, err = s.UnsettledWorkspaceWrite(ctx, "other")
	assert.ErrorIs(t, err, store.ErrNotFound)

	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, "m1", "staging", "committing", false, "", "", T0), store.ErrStale, "not in from")
	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, "m1", "beginning", "", false, "", "", T0), store.ErrInvalid)
	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, "missing", "beginning", "x", false, "", "", T0), store.ErrNotFound)
	require.NoError(t, s.TransitionWorkspaceWrite(ctx, "m1", "beginning", "committing", false, "", "", T0))
	assert.ErrorIs(t, s.ResolveWorkspaceWrite(ctx, "m1", store.ResolutionApplied, "", T0), store.ErrStale, "only an unknown write is resolved")
	require.NoError(t, s.TransitionWorkspaceWrite(ctx, "m1", "committing", store.WriteStateUnknown, false, "write_unconfirmed", "", T0))

	open, err := s.OpenWorkspaceWrites(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
	assert.Equal(t, store.WriteStateUnknown, open[0].State)
	assert.Equal(t, "write_unconfirmed", open[0].ErrorCode)
	assert.Empty(t, open[0].Outcome, "an unknown write keeps its owner")
	assert.ErrorIs(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m2", SessionID: "ses", CreatedAt: T0}), store.ErrConflict,
		"a successor waits while the outcome is unknown")

	assert.ErrorIs(t, s.ResolveWorkspaceWrite(ctx, "m1", "", "", T0), store.ErrInvalid)
	require.NoError(t, s.ResolveWorkspaceWrite(ctx, "m1", store.ResolutionNotApplied, "checked by hand", T0.Add(time.Minute)))
	got, err = s.GetWorkspaceWrite(ctx, "m1")
	require.NoError(t, err)
	assert.Equal(t, store.WriteResolved, got.Outcome)
	assert.Equal(t, store.ResolutionNotApplied, got.Resolution)
	assert.Equal(t, "checked by hand", got.Note)
	assert.Equal(t, "write_unconfirmed", got.ErrorCode, "the receipt's evidence stays")
	assert.True(t, got.SettledAt.Equal(T0.Add(time.Minute)))
	assert.ErrorIs(t, s.ResolveWorkspaceWrite(ctx, "m1", store.ResolutionApplied, "", T0), store.ErrStale)
	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, "m1", store.WriteStateUnknown, "completed", true, "", "", T0), store.ErrStale,
		"a released write does not move")

	require.NoError(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m2", SessionID: "ses", CreatedAt: T0.Add(time.Second),
		WriteDetail: store.WriteDetail{State: "beginning"}}))
	require.NoError(t, s.TransitionWorkspaceWrite(ctx, "m2", "beginning", "rejected", true, "write_rejected", "unsafe_destination", T0.Add(2*time.Second)))
	got, err = s.GetWorkspaceWrite(ctx, "m2")
	require.NoError(t, err)
	assert.Equal(t, "rejected", got.Outcome)
	assert.Equal(t, "unsafe_destination", got.Reason)
	open, err = s.OpenWorkspaceWrites(ctx)
	require.NoError(t, err)
	assert.Empty(t, open)
	_, err = s.UnsettledWorkspaceWrite(ctx, "ses")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// testWorkspaceWriteResolveRace: a late receipt and an operator racing on
// an unknown write: exactly one release wins.
func testWorkspaceWriteResolveRace(t *testing.T, s store.Store) {
	seed(t, s, 0)
	require.NoError(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m1", SessionID: "ses", CreatedAt: T0,
		WriteDetail: store.WriteDetail{State: store.WriteStateUnknown}}))
	wins := race(t, 16, store.ErrStale, func(i int) error {
		if i%2 == 0 {
			return s.ResolveWorkspaceWrite(ctx, "m1", store.ResolutionApplied, fmt.Sprint(i), T0)
		}
		return s.TransitionWorkspaceWrite(ctx, "m1", store.WriteStateUnknown, "completed", true, "", "", T0)
	})
	assert.Equal(t, 1, wins, "one release wins")
}

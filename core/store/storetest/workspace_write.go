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
		WriteDetail: store.WriteDetail{State: "beginning", DeviceID: "dev", OwnerEpoch: 7, SizeBytes: 5, SHA256: "ab"}}
	require.NoError(t, s.ReserveWorkspaceWrite(ctx, w))
	got, err := s.UnsettledWorkspaceWrite(ctx, "ses")
	require.NoError(t, err)
	assert.Equal(t, w.WriteDetail, got.WriteDetail)
	_, err = s.UnsettledWorkspaceWrite(ctx, "other")
	assert.ErrorIs(t, err, store.ErrNotFound)

	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: "staging", To: "committing", At: T0}, false, "", ""), store.ErrStale, "not in from")
	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: "beginning", To: "", At: T0}, false, "", ""), store.ErrInvalid)
	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "missing", From: "beginning", To: "committing", At: T0}, false, "", ""), store.ErrNotFound)
	require.NoError(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: "beginning", To: "committing", At: T0}, false, "", ""))
	assert.ErrorIs(t, s.ResolveWorkspaceWrite(ctx, "m1", store.ResolutionApplied, "", T0), store.ErrStale, "only an unknown write is resolved")
	require.NoError(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: "committing", To: store.WriteStateUnknown, At: T0}, false, "write_unconfirmed", ""))

	open, err := s.OpenWorkspaceWrites(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
	assert.Equal(t, store.WriteStateUnknown, open[0].State)
	assert.Equal(t, "write_unconfirmed", open[0].ErrorCode)
	assert.Empty(t, open[0].Outcome, "an unknown write keeps its owner")
	assert.Equal(t, uint64(7), open[0].OwnerEpoch, "the reservation's owner epoch outlives its moves")
	assert.ErrorIs(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m2", SessionID: "ses", CreatedAt: T0, WriteDetail: store.WriteDetail{State: "beginning"}}), store.ErrConflict,
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
	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: store.WriteStateUnknown, To: "completed", At: T0}, true, "", ""), store.ErrInvalid,
		"unknown is terminal in the table: only an operator's resolution releases it")
	assert.ErrorIs(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: "committing", To: "completed", At: T0}, true, "", ""), store.ErrStale,
		"a released write does not move")

	require.NoError(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m2", SessionID: "ses", CreatedAt: T0.Add(time.Second),
		WriteDetail: store.WriteDetail{State: "beginning"}}))
	require.NoError(t, s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m2", From: "beginning", To: "rejected", At: T0.Add(2 * time.Second)}, true, "write_rejected", "unsafe_destination"))
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

// testWorkspaceWriteResolveRace: receipts racing on an unconfirmed write,
// and operators racing on an unknown one: exactly one move wins each.
func testWorkspaceWriteResolveRace(t *testing.T, s store.Store) {
	seed(t, s, 0)
	require.NoError(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m1", SessionID: "ses", CreatedAt: T0,
		WriteDetail: store.WriteDetail{State: "unconfirmed"}}))
	wins := race(t, 16, store.ErrStale, func(i int) error {
		if i%2 == 0 {
			return s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: "unconfirmed", To: store.WriteStateUnknown, At: T0}, false, "write_unconfirmed", "")
		}
		return s.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: "m1", From: "unconfirmed", To: "completed", At: T0}, true, "", "")
	})
	assert.Equal(t, 1, wins, "one receipt's move wins")
	require.NoError(t, s.CreateSession(ctx, store.Session{ID: "ses2", Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: T0}))
	require.NoError(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m2", SessionID: "ses2", CreatedAt: T0,
		WriteDetail: store.WriteDetail{State: store.WriteStateUnknown}}))
	wins = race(t, 16, store.ErrStale, func(i int) error {
		return s.ResolveWorkspaceWrite(ctx, "m2", store.ResolutionApplied, fmt.Sprint(i), T0)
	})
	assert.Equal(t, 1, wins, "one operator's resolution wins")
}

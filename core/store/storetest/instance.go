package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// testInstances: a generic instance is created once, moves only from the
// state (and version) its writer read, only as its machine's table allows,
// never after it settles, and is listed while open.
func testInstances(t *testing.T, s store.Store) {
	mv := func(key, from, to string, version uint64, at time.Duration) store.Move {
		return store.Move{Machine: "suspension", Key: key, From: from, To: to, Version: version, At: T0.Add(at)}
	}
	in, err := s.MoveInstance(ctx, mv("a", "", "idle", 0, 0))
	require.NoError(t, err)
	assert.Equal(t, store.Instance{Machine: "suspension", Key: "a", State: "idle", Version: 1, UpdatedAt: T0}, in)
	_, err = s.MoveInstance(ctx, mv("a", "", "idle", 0, 0))
	assert.ErrorIs(t, err, store.ErrConflict, "created twice")
	_, err = s.MoveInstance(ctx, mv("b", "", "idle", 0, time.Millisecond))
	require.NoError(t, err)

	_, err = s.MoveInstance(ctx, mv("a", "idle", "quiescing", 2, time.Second))
	assert.ErrorIs(t, err, store.ErrStale, "a version nobody stored")
	in, err = s.MoveInstance(ctx, mv("a", "idle", "quiescing", 1, time.Second))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), in.Version)
	_, err = s.MoveInstance(ctx, mv("a", "idle", "quiescing", 0, time.Second))
	assert.ErrorIs(t, err, store.ErrStale, "not in from")
	_, err = s.MoveInstance(ctx, mv("nope", "idle", "quiescing", 0, time.Second))
	assert.ErrorIs(t, err, store.ErrNotFound)
	for _, bad := range []store.Move{
		mv("a", "quiescing", "idle", 0, 0),
		mv("a", "quiescing", "no_such_state", 0, 0),
		{Machine: "no_such_machine", Key: "a", To: "idle"},
	} {
		_, err = s.MoveInstance(ctx, bad)
		assert.ErrorIs(t, err, store.ErrInvalid, "%+v", bad)
	}

	open, err := s.OpenInstances(ctx, "suspension")
	require.NoError(t, err)
	require.Len(t, open, 2)
	assert.Equal(t, []string{"b", "a"}, []string{open[0].Key, open[1].Key}, "oldest move first")
	none, err := s.OpenInstances(ctx, "workspace_write")
	require.NoError(t, err)
	assert.Empty(t, none)

	in, err = s.MoveInstance(ctx, mv("a", "quiescing", "quiesce_refused", 0, 2*time.Second))
	require.NoError(t, err)
	assert.True(t, in.Settled)
	got, err := s.GetInstance(ctx, "suspension", "a")
	require.NoError(t, err)
	assert.Equal(t, in, got)
	_, err = s.GetInstance(ctx, "suspension", "nope")
	assert.ErrorIs(t, err, store.ErrNotFound)
	in, err = s.MoveInstance(ctx, mv("b", "idle", store.NotSent, 0, 2*time.Second))
	require.NoError(t, err)
	assert.True(t, in.Settled, "unsent settles")
	open, err = s.OpenInstances(ctx, "suspension")
	require.NoError(t, err)
	assert.Empty(t, open)
}

// testInstanceRace: of writers that read the same instance, exactly one
// moves it, and of creators of one key exactly one creates it.
func testInstanceRace(t *testing.T, s store.Store) {
	n := race(t, 16, store.ErrConflict, func(int) error {
		_, err := s.MoveInstance(ctx, store.Move{Machine: "workspace_write", Key: "w", To: "idle", At: T0})
		return err
	})
	assert.Equal(t, 1, n)
	to := []string{"beginning", "aborted"} // both rules of the table from idle
	n = race(t, 16, store.ErrStale, func(i int) error {
		_, err := s.MoveInstance(ctx, store.Move{Machine: "workspace_write", Key: "w", From: "idle", To: to[i%2], Version: 1, At: T0})
		return err
	})
	assert.Equal(t, 1, n)
	in, err := s.GetInstance(ctx, "workspace_write", "w")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), in.Version)
}

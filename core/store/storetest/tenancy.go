package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// testDeviceAssignment: a device is given to one project, once; the
// assignment survives connections and another project cannot take it.
func testDeviceAssignment(t *testing.T, s store.Store) {
	require.ErrorIs(t, s.AssignDevice(ctx, "", "p", T0), store.ErrInvalid)
	require.ErrorIs(t, s.AssignDevice(ctx, "dev", "", T0), store.ErrInvalid)

	require.NoError(t, s.AssignDevice(ctx, "dev", "p", T0))
	d, err := s.GetDevice(ctx, "dev")
	require.NoError(t, err)
	assert.Equal(t, "p", d.Project)
	assert.False(t, d.Connected)
	assert.Zero(t, d.OwnerEpoch)

	require.NoError(t, s.AssignDevice(ctx, "dev", "p", T0), "the same project again is a no-op")
	require.ErrorIs(t, s.AssignDevice(ctx, "dev", "q", T0), store.ErrConflict)

	epoch, err := s.AcquireOwner(ctx, "dev", T0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), epoch)
	require.NoError(t, s.ReleaseOwner(ctx, "dev", epoch, T0))
	d, err = s.GetDevice(ctx, "dev")
	require.NoError(t, err)
	assert.Equal(t, "p", d.Project, "a connection keeps the device's project")

	// A device that connected before it was assigned has no project until
	// an administrator gives it one.
	_, err = s.AcquireOwner(ctx, "old", T0)
	require.NoError(t, err)
	d, err = s.GetDevice(ctx, "old")
	require.NoError(t, err)
	assert.Empty(t, d.Project)
	require.NoError(t, s.AssignDevice(ctx, "old", "q", T0))
	d, err = s.GetDevice(ctx, "old")
	require.NoError(t, err)
	assert.Equal(t, "q", d.Project)
	assert.True(t, d.Connected, "assignment does not touch the connection")
}

func testDeviceAssignmentRace(t *testing.T, s store.Store) {
	projects := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	wins := race(t, len(projects), store.ErrConflict, func(i int) error {
		return s.AssignDevice(ctx, "dev", projects[i], T0)
	})
	assert.Equal(t, 1, wins)
}

// testEnvironmentList: a project lists only its own Environments, with
// the device that hosts each.
func testEnvironmentList(t *testing.T, s store.Store) {
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "e2", Project: "p", Type: "self_hosted", Binding: raw(`{"id":"e2"}`), DeviceID: "dev", CreatedAt: T0.Add(1)}))
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "e1", Project: "p", Type: "none", CreatedAt: T0}))
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "e3", Project: "q", Type: "self_hosted", DeviceID: "other", CreatedAt: T0}))

	e, err := s.GetEnvironment(ctx, "e2")
	require.NoError(t, err)
	assert.Equal(t, "dev", e.DeviceID)

	list, err := s.ListEnvironments(ctx, "p")
	require.NoError(t, err)
	var ids []string
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	assert.Equal(t, []string{"e1", "e2"}, ids)
	assert.Equal(t, "dev", list[1].DeviceID)

	all, err := s.ListEnvironments(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, 3)
	none, err := s.ListEnvironments(ctx, "nobody")
	require.NoError(t, err)
	assert.Empty(t, none)
}

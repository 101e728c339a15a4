package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/sqlite"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), t.TempDir())
		require.NoError(t, err)
		return s
	})
}

func TestCredentialsConformance(t *testing.T) {
	storetest.RunCredentials(t, func(t *testing.T) store.Credentials {
		s, err := sqlite.Open(context.Background(), t.TempDir())
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Records survive closing and reopening the data directory, and the
// migrations are not applied twice.
func TestReopenKeepsRecordsAndSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir)
	require.NoError(t, err)
	epoch, err := s.AcquireOwner(ctx, "dev", storetest.T0)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = sqlite.Open(ctx, dir)
	require.NoError(t, err)
	defer s.Close()
	next, err := s.AcquireOwner(ctx, "dev", storetest.T0)
	require.NoError(t, err)
	assert.Equal(t, epoch+1, next, "the owner epoch survives a restart")

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName))
	require.NoError(t, err)
	defer db.Close()
	var n, v int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &v))
	assert.Equal(t, sqlite.SchemaVersion(), n)
	assert.Equal(t, sqlite.SchemaVersion(), v)
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "wal", mode)
}

func TestNewerSchemaIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName))
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO schema_migrations(version) VALUES (999)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = sqlite.Open(ctx, dir)
	require.ErrorContains(t, err, "schema version 999 is newer")
}

// A suspension attempt and its state survive a restart, and its fence (one
// unsettled attempt per Environment) still holds afterwards.
func TestSuspensionSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "self_hosted", CreatedAt: storetest.T0}))
	require.NoError(t, s.CreateSuspension(ctx, store.Suspension{ID: "s-1", EnvironmentID: "env", DeviceID: "dev", State: "idle", CreatedAt: storetest.T0}))
	require.NoError(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "s-1", From: "idle", To: "suspended", At: storetest.T0}, ""))
	require.NoError(t, s.Close())

	s, err = sqlite.Open(ctx, dir)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.GetSuspension(ctx, "s-1")
	require.NoError(t, err)
	assert.Equal(t, "suspended", got.State)
	assert.ErrorIs(t, s.CreateSuspension(ctx, store.Suspension{ID: "s-2", EnvironmentID: "env", State: "idle", CreatedAt: storetest.T0}), store.ErrConflict)
	assert.ErrorIs(t, s.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: "s-1", From: "quiescing", To: "resumed", At: storetest.T0}, ""), store.ErrStale, "a stale writer cannot move it")
}

// The ceiling writes what Core writes for a Turn: each one completed with
// its events, across batch boundaries.
func TestDurableCeilingWritesWholeTurns(t *testing.T) {
	dir := t.TempDir()
	rate, err := sqlite.DurableCeiling(context.Background(), dir, 10, 3, 4)
	require.NoError(t, err)
	assert.Positive(t, rate)
	s, err := sqlite.Open(context.Background(), dir)
	require.NoError(t, err)
	defer s.Close()
	for i := range 10 {
		tr, err := s.GetTurn(context.Background(), fmt.Sprintf("turn-%d", i))
		require.NoError(t, err)
		assert.Equal(t, store.TurnCompleted, tr.State)
		evs, err := s.Events(context.Background(), tr.ID, 0, 0)
		require.NoError(t, err)
		assert.Len(t, evs, 3)
	}
}

// A data directory from before devices had projects (schema version 4):
// migration 5 keeps its device and local Environment, the device owned by
// no project and the Environment hosted by no device, until an
// administrator assigns the device.
func TestTenancyMigrationLeavesOldDevicesUnowned(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, sqlite.CreateAtVersion(ctx, dir, 4, `
INSERT INTO devices(id, owner_epoch, connected, declaration, last_seen) VALUES ('dev-old', 3, 1, NULL, 1);
INSERT INTO environments(id, project, type, binding, created_at) VALUES ('env-old', 'alpha', 'self_hosted', '{"id":"chosen-by-a-caller"}', 1);`))
	s, err := sqlite.Open(ctx, dir)
	require.NoError(t, err)
	defer s.Close()

	d, err := s.GetDevice(ctx, "dev-old")
	require.NoError(t, err)
	assert.Equal(t, "", d.Project, "no project owns a device recorded before")
	assert.Equal(t, uint64(3), d.OwnerEpoch, "the rest of the record is kept")
	env, err := s.GetEnvironment(ctx, "env-old")
	require.NoError(t, err)
	assert.Equal(t, "", env.DeviceID, "no device hosts a local Environment recorded before")
	assert.Equal(t, "alpha", env.Project)

	require.NoError(t, s.AssignDevice(ctx, "dev-old", "alpha", storetest.T0))
	d, err = s.GetDevice(ctx, "dev-old")
	require.NoError(t, err)
	assert.Equal(t, "alpha", d.Project)
	assert.ErrorIs(t, s.AssignDevice(ctx, "dev-old", "beta", storetest.T0), store.ErrConflict, "and it never changes hands")
}

// A write and a suspension attempt stored before the owner epoch was kept
// (schema 11) read epoch 0, which no lease has: no replica's reaper
// settles them by mistake.
func TestOwnerEpochMigrationReadsOldRowsAsZero(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, sqlite.CreateAtVersion(ctx, dir, 11, `
INSERT INTO workspace_writes(mutation_id, session_id, path, created_at, state, device_id) VALUES ('m-old', 'ses', 'a.txt', 1, 'committing', 'dev');
INSERT INTO suspensions(id, environment_id, device_id, state, settled, created_at, updated_at) VALUES ('s-old', 'env', 'dev', 'quiescing', 0, 1, 1);`))
	s, err := sqlite.Open(ctx, dir)
	require.NoError(t, err)
	defer s.Close()

	w, err := s.GetWorkspaceWrite(ctx, "m-old")
	require.NoError(t, err)
	assert.Zero(t, w.OwnerEpoch)
	assert.Equal(t, "committing", w.State, "the rest of the record is kept")
	a, err := s.GetSuspension(ctx, "s-old")
	require.NoError(t, err)
	assert.Zero(t, a.OwnerEpoch)
	assert.Equal(t, "quiescing", a.State)
}

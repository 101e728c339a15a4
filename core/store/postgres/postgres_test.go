package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/postgres"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func open(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	serverDSN(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, freshDSN(t))
	})
}

func TestCredentialsConformance(t *testing.T) {
	serverDSN(t)
	storetest.RunCredentials(t, func(t *testing.T) store.Credentials {
		s := open(t, freshDSN(t))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Records survive closing and reopening the database, and the migrations
// are not applied twice.
func TestReopenKeepsRecordsAndSchema(t *testing.T) {
	ctx := context.Background()
	dsn := freshDSN(t)
	s := open(t, dsn)
	epoch, err := s.AcquireOwner(ctx, "dev", storetest.T0)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = open(t, dsn)
	defer s.Close()
	next, err := s.AcquireOwner(ctx, "dev", storetest.T0)
	require.NoError(t, err)
	assert.Equal(t, epoch+1, next, "the owner epoch survives a restart")
	n, v := schemaRows(t, dsn)
	assert.Equal(t, postgres.SchemaVersion(), n)
	assert.Equal(t, postgres.SchemaVersion(), v)
}

func schemaRows(t *testing.T, dsn string) (n, v int) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &v))
	return n, v
}

func TestNewerSchemaIsRefused(t *testing.T) {
	ctx := context.Background()
	dsn := freshDSN(t)
	require.NoError(t, open(t, dsn).Close())
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO schema_migrations(version) VALUES (999)`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	_, err = postgres.Open(ctx, dsn)
	require.ErrorContains(t, err, "schema version 999 is newer")
}

// Cores starting together on an empty database: each migration is applied
// once (the advisory lock), and every one of them opens.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := freshDSN(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	n, v := schemaRows(t, dsn)
	assert.Equal(t, postgres.SchemaVersion(), n)
	assert.Equal(t, postgres.SchemaVersion(), v)
}

// Two Cores (two stores, two pools) on one database claim the same due
// Turns at once: each Turn is claimed exactly once, by one of them. The
// claim's conditional UPDATE is all it takes.
func TestTwoStoresNeverClaimOneTurn(t *testing.T) {
	ctx := context.Background()
	dsn := freshDSN(t)
	a, b := open(t, dsn), open(t, dsn)
	defer a.Close()
	defer b.Close()
	const turns = 40
	require.NoError(t, a.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: storetest.T0}))
	for i := range turns {
		ses := fmt.Sprintf("ses-%d", i)
		require.NoError(t, a.CreateSession(ctx, store.Session{ID: ses, Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: storetest.T0}))
		require.NoError(t, a.CreateTurn(ctx, store.Turn{ID: fmt.Sprintf("turn-%d", i), SessionID: ses, CreatedAt: storetest.T0}))
	}
	var wins [turns]atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w, s := range []*postgres.Store{a, b, a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			due, err := s.DueTurns(ctx, storetest.T0.Add(time.Hour), "", 0)
			if !assert.NoError(t, err) {
				return
			}
			for _, tr := range due {
				var i int
				_, _ = fmt.Sscanf(tr.ID, "turn-%d", &i)
				err := s.MoveTurn(ctx, storetest.ClaimMove(tr.ID, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: fmt.Sprintf("run-%d-%d", w, i), At: storetest.T0}))
				if err == nil {
					wins[i].Add(1)
				} else {
					assert.ErrorIs(t, err, store.ErrStale)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range wins {
		assert.Equal(t, int32(1), wins[i].Load(), "turn-%d", i)
		tr, err := b.GetTurn(ctx, fmt.Sprintf("turn-%d", i))
		require.NoError(t, err)
		assert.Equal(t, 1, tr.Attempts)
	}
}

// Times are kept to the millisecond in UTC, whatever zone and precision
// the caller's clock has.
func TestTimesAreUTCMilliseconds(t *testing.T) {
	ctx := context.Background()
	s := open(t, freshDSN(t))
	defer s.Close()
	zone := time.FixedZone("UTC+5", 5*3600)
	when := time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, zone)
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: when}))
	e, err := s.GetEnvironment(ctx, "env")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 3, 4, 0, 6, 7, 891_000_000, time.UTC), e.CreatedAt)
}

// A malformed DSN is refused without quoting it (it may hold a password).
func TestMalformedDSNIsNotQuoted(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://user:s3cret@[::1")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret")
}

// One serving Core per database: a second is refused while the first
// holds it, and the database is free again once released.
func TestLockRefusesASecondCore(t *testing.T) {
	ctx := context.Background()
	dsn := freshDSN(t)
	a, b := open(t, dsn), open(t, dsn)
	defer a.Close()
	defer b.Close()
	release, err := a.Lock(ctx)
	require.NoError(t, err)
	_, err = b.Lock(ctx)
	require.ErrorIs(t, err, postgres.ErrInUse)
	require.NoError(t, release())
	again, err := b.Lock(ctx)
	require.NoError(t, err, "free again once released")
	require.NoError(t, again())
}

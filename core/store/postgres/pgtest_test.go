package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The tests need a PostgreSQL server: AGENTWIRE_TEST_POSTGRES is its DSN
// (a role that may create databases), and every test gets a database of
// its own, dropped when it ends. `make test-postgres` starts a throwaway
// server (internal/pgtest/start.sh), runs them and stops it.
const (
	envDSN     = "AGENTWIRE_TEST_POSTGRES"
	envRequire = "AGENTWIRE_REQUIRE_POSTGRES"
)

// serverDSN is the server's DSN, or skips the test without one (fails it
// when AGENTWIRE_REQUIRE_POSTGRES=1, as CI sets: a test that CI means to
// run must not pass by skipping).
func serverDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		msg := envDSN + " is not set: these tests need a PostgreSQL server; `make test-postgres` starts a throwaway one and runs them"
		if os.Getenv(envRequire) == "1" {
			t.Fatal(envRequire + "=1 and " + msg)
		}
		t.Skip(msg)
	}
	return dsn
}

// freshDSN creates an empty database for the test on the server and
// returns its DSN; the database is dropped when the test ends (after the
// cleanups the test registers later, which close its stores).
func freshDSN(t *testing.T) string {
	t.Helper()
	admin := serverDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "agentwire_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err, "connecting to the server %s names", envDSN)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err, "creating the test's database")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dropping database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		// FORCE: a store the test leaked must not keep the database.
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	return withDatabase(t, admin, name)
}

// withDatabase is dsn naming database name instead of its own, in either
// form libpq takes (a URL or key=value pairs).
func withDatabase(t *testing.T, dsn, name string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		u.Path = "/" + name
		return u.String()
	}
	return dsn + " dbname=" + name
}

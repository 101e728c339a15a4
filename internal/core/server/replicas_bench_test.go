package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/postgres"
	"github.com/agentwire/agentwire/core/store/sqlite"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/core/server"
)

// BenchmarkTurnsAcrossReplicas: Turns/s through real Cores as in
// TurnsThroughCore, on SQLite with one Core and on PostgreSQL with one
// and with three replicas sharing the database (each replica its own
// pool, its own HTTP server and one scripted Runtime of its own; every
// replica's scheduler claims from the one queue). Needs a PostgreSQL
// server (AGENTWIRE_TEST_POSTGRES); `make bench-replicas` starts one.
func BenchmarkTurnsAcrossReplicas(b *testing.B) {
	admin := os.Getenv("AGENTWIRE_TEST_POSTGRES")
	b.Run("sqlite-1", func(b *testing.B) {
		st, err := sqlite.Open(context.Background(), b.TempDir())
		require.NoError(b, err)
		benchReplicas(b, []store.Store{st}, false)
	})
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("postgres-%d", n), func(b *testing.B) {
			if admin == "" {
				b.Skip("AGENTWIRE_TEST_POSTGRES is not set: `make bench-replicas` starts a throwaway PostgreSQL and runs this")
			}
			dsn := benchDatabase(b, admin)
			stores := make([]store.Store, n)
			for i := range stores {
				st, err := postgres.Open(context.Background(), dsn)
				require.NoError(b, err)
				stores[i] = st
			}
			benchReplicas(b, stores, true)
		})
	}
}

// benchReplicas runs b.N Turns, one per Session, through one Core per
// store (replicas when shared) with a scripted Runtime on each.
func benchReplicas(b *testing.B, stores []store.Store, shared bool) {
	ctx := context.Background()
	finished := make(chan string, b.N*len(stores))
	var cores []*benchCore
	for i, st := range stores {
		c := &benchCore{st: &countingStore{Store: st, finished: finished}}
		mux := http.NewServeMux()
		c.http = httptest.NewServer(mux)
		keys := st.(store.Credentials)
		c.srv = server.New(server.Config{Store: c.st, Credentials: keys, PublicURL: c.http.URL,
			Logger:  slog.New(slog.NewTextHandler(benchLog, &slog.HandlerOptions{Level: slog.LevelWarn})),
			Replica: gateway.Replica{Shared: shared, URL: c.http.URL}})
		mux.Handle("/", c.srv)
		c.is = credential.Issuer{Store: keys, Devices: c.st, Now: time.Now}
		b.Cleanup(func() {
			c.srv.Close()
			c.http.Close()
			_ = st.Close()
		})
		c.runtime(b, fmt.Sprintf("dev-%d", i+1), 20, nil)
		cores = append(cores, c)
	}
	sessions := cores[0].seedSessions(b, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		require.NoError(b, cores[i%len(cores)].st.CreateTurn(ctx, store.Turn{ID: fmt.Sprintf("turn-%d", i), SessionID: sessions[i], Input: benchInput, CreatedAt: time.Now()}))
		cores[i%len(cores)].srv.Gateway().Kick()
	}
	for _, c := range cores {
		c.srv.Gateway().Kick()
	}
	seen := map[string]bool{}
	for len(seen) < b.N {
		seen[<-finished] = true
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
}

// benchDatabase creates an empty database on the server admin names and
// returns its DSN; it is dropped when the benchmark ends.
func benchDatabase(b *testing.B, admin string) string {
	ctx := context.Background()
	var r [6]byte
	_, _ = rand.Read(r[:])
	name := "agentwire_bench_" + hex.EncodeToString(r[:])
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(b, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(b, err)
	b.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	i := strings.LastIndex(admin, "/")
	q := ""
	if j := strings.Index(admin[i:], "?"); j >= 0 {
		q = admin[i+j:]
	}
	return admin[:i+1] + name + q
}

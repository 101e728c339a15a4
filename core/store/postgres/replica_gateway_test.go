package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/peer"
)

// TestReplicasReconcileADeadReplicaOnce: two Core replicas (two gateways,
// each on its own store of one database, one injected clock) and the
// Turns of a third that died without restarting. Nothing is touched while
// its lease is live; once it expired, both replicas' lease passes race to
// reap it and exactly one reconciles each Turn, once.
func TestReplicasReconcileADeadReplicaOnce(t *testing.T) {
	dsn := freshDSN(t)
	a, b := open(t, dsn), open(t, dsn)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx := context.Background()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := clock.Now()
	const ttl = 3 * time.Second
	require.NoError(t, a.RegisterReplica(ctx, store.Replica{ID: "dead", URL: "http://dead", StartedAt: now}))
	epoch, err := a.AcquireLease(ctx, "dev-1", "dead", now, now.Add(ttl))
	require.NoError(t, err)
	require.NoError(t, a.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: now}))
	var turns []string
	for _, id := range []string{"t1", "t2", "t3"} {
		require.NoError(t, a.CreateSession(ctx, store.Session{ID: "ses-" + id, Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: now}))
		require.NoError(t, a.CreateTurn(ctx, store.Turn{ID: id, SessionID: "ses-" + id, Input: []byte(`[]`), CreatedAt: now}))
		require.NoError(t, storetest.Start(a, id, store.Claim{DeviceID: "dev-1", OwnerEpoch: epoch, RunID: "run-" + id, At: now}))
		turns = append(turns, id)
	}
	var gws []*gateway.Gateway
	for i, st := range []store.Store{a, b} {
		g := gateway.New(gateway.Config{Store: st, Credentials: credential.Issuer{Store: st.(store.Credentials), Now: clock.Now}, Clock: clock,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: time.Hour,
			Replica: gateway.Replica{URL: []string{"http://a", "http://b"}[i], Shared: true, LeaseTTL: ttl, RenewInterval: time.Hour}})
		t.Cleanup(g.Close)
		gws = append(gws, g)
	}
	for _, g := range gws {
		g.LeasePass()
	}
	for _, id := range turns {
		tr, err := a.GetTurn(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, store.TurnRunning, tr.State, "the dead replica's lease is live until it expires")
	}

	clock.Advance(ttl)
	var wg sync.WaitGroup
	for _, g := range []*gateway.Gateway{gws[0], gws[1], gws[0], gws[1]} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.LeasePass()
		}()
	}
	wg.Wait()
	for _, id := range turns {
		tr, err := b.GetTurn(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, store.TurnFailed, tr.State, id)
		assert.Equal(t, store.ReasonEventStreamIncomplete, tr.Outcome.Reason, id)
		evs, err := b.Events(ctx, id, 0, 0)
		require.NoError(t, err)
		n := 0
		for _, e := range evs {
			if e.Type == "observation" && strings.Contains(string(e.Payload), gateway.CauseReplicaLost) {
				n++
			}
		}
		assert.Equal(t, 1, n, "Turn %s reconciled once", id)
	}
	d, err := b.GetDevice(ctx, "dev-1")
	require.NoError(t, err)
	assert.False(t, d.Connected)
	expired, err := b.ExpiredLeases(ctx, clock.Now())
	require.NoError(t, err)
	assert.Empty(t, expired)
}

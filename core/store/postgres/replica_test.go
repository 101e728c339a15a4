package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/storetest"
)

// Two replicas are two stores (two pools, two sets of connections) on one
// database; these tests race them as two Core processes would.

// TestReplicasClaimRace: two replicas' workers claim every Turn of many
// Sessions at once, the Turns of a Session included (a replica claims the
// head of a Session while the other, having seen it queued a moment ago,
// claims the same Turn or the next one). No Turn is claimed twice and no
// Session has two Turns active.
func TestReplicasClaimRace(t *testing.T) {
	dsn := freshDSN(t)
	a, b := open(t, dsn), open(t, dsn)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx := context.Background()
	const sessions, perSession, workers = 20, 3, 4
	require.NoError(t, a.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: storetest.T0}))
	var ids []string
	for i := range sessions {
		ses := fmt.Sprintf("ses-%d", i)
		require.NoError(t, a.CreateSession(ctx, store.Session{ID: ses, Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: storetest.T0}))
		for j := range perSession {
			id := fmt.Sprintf("turn-%d-%d", i, j)
			ids = append(ids, id)
			require.NoError(t, a.CreateTurn(ctx, store.Turn{ID: id, SessionID: ses, Input: []byte(`[]`), CreatedAt: storetest.T0.Add(time.Duration(j) * time.Millisecond)}))
		}
	}
	var mu sync.Mutex
	claims := map[string][]string{} // Turn -> the Runs whose claim applied
	var wg sync.WaitGroup
	start := make(chan struct{})
	for r, s := range []store.Store{a, b} {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k, id := range ids {
					// Each worker walks the Turns from another offset, so
					// claims of one Session's Turns cross.
					id = ids[(k+w*7+r*13)%len(ids)]
					run := fmt.Sprintf("run-%d-%d-%s", r, w, id)
					err := s.MoveTurn(ctx, storetest.ClaimMove(id, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: run, At: storetest.T0.Add(time.Second)}))
					if err == nil {
						mu.Lock()
						claims[id] = append(claims[id], run)
						mu.Unlock()
						continue
					}
					assert.ErrorIs(t, err, store.ErrStale)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	for id, runs := range claims {
		assert.Len(t, runs, 1, "Turn %s claimed once", id)
	}
	active, err := b.ActiveTurns(ctx)
	require.NoError(t, err)
	perSes := map[string]int{}
	for _, tr := range active {
		perSes[tr.SessionID]++
		assert.Equal(t, 1, tr.Attempts)
	}
	assert.Len(t, perSes, sessions, "every Session has a Turn claimed")
	for ses, n := range perSes {
		assert.Equal(t, 1, n, "Session %s has one Turn active", ses)
	}
}

// TestReplicasReapRace: replicas reaping a dead replica's expired leases
// at once end each exactly once, and only those that expired.
func TestReplicasReapRace(t *testing.T) {
	dsn := freshDSN(t)
	a, b := open(t, dsn), open(t, dsn)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx := context.Background()
	t0 := storetest.T0
	const devices = 20
	for i := range devices {
		_, err := a.AcquireLease(ctx, fmt.Sprintf("dev-%d", i), "dead", t0, t0.Add(10*time.Second))
		require.NoError(t, err)
	}
	live, err := b.AcquireLease(ctx, "dev-live", "b", t0, t0.Add(time.Hour))
	require.NoError(t, err)
	at := t0.Add(10 * time.Second)
	var mu sync.Mutex
	reaped := map[string][]string{}
	var wg sync.WaitGroup
	for r, s := range []store.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			expired, err := s.ExpiredLeases(ctx, at)
			if !assert.NoError(t, err) {
				return
			}
			for _, l := range expired {
				err := s.ReapLease(ctx, l.DeviceID, l.Epoch, fmt.Sprintf("r%d", r), at)
				if err == nil {
					mu.Lock()
					reaped[l.DeviceID] = append(reaped[l.DeviceID], fmt.Sprint(r))
					mu.Unlock()
					continue
				}
				assert.ErrorIs(t, err, store.ErrStale)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, reaped, devices, "every expired lease reaped")
	for dev, by := range reaped {
		assert.Len(t, by, 1, "%s reaped once", dev)
	}
	held, err := b.RenewLeases(ctx, "b", at, at.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, held, 1)
	assert.Equal(t, live, held[0].Epoch, "the live replica's lease is untouched")
}

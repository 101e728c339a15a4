package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// The conformance tests of store.Replicas and of the claim rule that
// keeps a Session's Turns one at a time across replicas.

// testReplicas: replicas are listed oldest first; retiring by URL
// retires the earlier processes at that URL only.
func testReplicas(t *testing.T, s store.Store) {
	require.NoError(t, s.RegisterReplica(ctx, store.Replica{ID: "a1", URL: "http://a", StartedAt: T0, HeartbeatAt: T0}))
	require.NoError(t, s.RegisterReplica(ctx, store.Replica{ID: "b1", URL: "http://b", StartedAt: T0.Add(time.Second), HeartbeatAt: T0}))
	assert.ErrorIs(t, s.RegisterReplica(ctx, store.Replica{ID: "a1", URL: "http://a", StartedAt: T0}), store.ErrConflict)
	assert.ErrorIs(t, s.RegisterReplica(ctx, store.Replica{URL: "http://a", StartedAt: T0}), store.ErrInvalid)
	require.NoError(t, s.RegisterReplica(ctx, store.Replica{ID: "a2", URL: "http://a", StartedAt: T0.Add(2 * time.Second), HeartbeatAt: T0}))

	list, err := s.ListReplicas(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a1", "b1", "a2"}, replicaIDs(list))
	assert.Equal(t, "http://b", list[1].URL)

	_, err = s.RetireReplicas(ctx, "http://a", "a2", T0)
	require.NoError(t, err)
	list, err = s.ListReplicas(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1", "a2"}, replicaIDs(list), "a2 retired a1, its predecessor at http://a")
}

func replicaIDs(rs []store.Replica) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// testLeases: a lease is renewed while its epoch owns the device; a newer
// epoch fences it (renewal drops it, it expires, and it is reaped once);
// a released lease is never reaped.
func testLeases(t *testing.T, s store.Store) {
	ttl := 10 * time.Second
	e1, err := s.AcquireLease(ctx, "dev", "a", T0, T0.Add(ttl))
	require.NoError(t, err)
	d, err := s.GetDevice(ctx, "dev")
	require.NoError(t, err)
	assert.Equal(t, "a", d.ReplicaID)
	assert.True(t, d.Connected)

	held, err := s.RenewLeases(ctx, "a", T0.Add(5*time.Second), T0.Add(15*time.Second))
	require.NoError(t, err)
	require.Len(t, held, 1)
	assert.Equal(t, store.Lease{DeviceID: "dev", Epoch: e1, ReplicaID: "a", Expires: T0.Add(15 * time.Second)}, held[0])

	// The device connects to replica b: a higher epoch, and a's lease is
	// no longer renewed.
	e2, err := s.AcquireLease(ctx, "dev", "b", T0.Add(6*time.Second), T0.Add(16*time.Second))
	require.NoError(t, err)
	assert.Greater(t, e2, e1)
	held, err = s.RenewLeases(ctx, "a", T0.Add(7*time.Second), T0.Add(17*time.Second))
	require.NoError(t, err)
	assert.Empty(t, held, "a newer epoch fenced a's lease")
	d, _ = s.GetDevice(ctx, "dev")
	assert.Equal(t, "b", d.ReplicaID)

	expired, err := s.ExpiredLeases(ctx, T0.Add(14*time.Second))
	require.NoError(t, err)
	assert.Empty(t, expired)
	assert.ErrorIs(t, s.ReapLease(ctx, "dev", e1, "b", T0.Add(14*time.Second)), store.ErrStale, "not expired yet")
	expired, err = s.ExpiredLeases(ctx, T0.Add(15*time.Second))
	require.NoError(t, err)
	require.Len(t, expired, 1)
	assert.Equal(t, e1, expired[0].Epoch)
	assert.Equal(t, "a", expired[0].ReplicaID)

	require.NoError(t, s.ReapLease(ctx, "dev", e1, "b", T0.Add(15*time.Second)))
	assert.ErrorIs(t, s.ReapLease(ctx, "dev", e1, "c", T0.Add(15*time.Second)), store.ErrStale, "reaped once")
	assert.ErrorIs(t, s.ReapLease(ctx, "dev", 99, "c", T0.Add(15*time.Second)), store.ErrNotFound)
	d, _ = s.GetDevice(ctx, "dev")
	assert.True(t, d.Connected, "reaping an older epoch leaves the current owner connected")
	assert.Equal(t, e2, d.OwnerEpoch)

	// A released lease is ended: it expires but is never reaped.
	require.NoError(t, s.ReleaseOwner(ctx, "dev", e2, T0.Add(8*time.Second)))
	expired, err = s.ExpiredLeases(ctx, T0.Add(time.Hour))
	require.NoError(t, err)
	assert.Empty(t, expired)
	assert.ErrorIs(t, s.ReapLease(ctx, "dev", e2, "c", T0.Add(time.Hour)), store.ErrStale)

	// A lease past its expiry is not renewed: its holder lost it.
	e3, err := s.AcquireLease(ctx, "dev", "c", T0.Add(20*time.Second), T0.Add(30*time.Second))
	require.NoError(t, err)
	held, err = s.RenewLeases(ctx, "c", T0.Add(30*time.Second), T0.Add(40*time.Second))
	require.NoError(t, err)
	assert.Empty(t, held)
	require.NoError(t, s.ReapLease(ctx, "dev", e3, "b", T0.Add(30*time.Second)))
	d, _ = s.GetDevice(ctx, "dev")
	assert.False(t, d.Connected, "the reaped epoch owned the device: it is offline")
}

// testRetireLeases: retiring a replica's predecessor makes its leases
// expire at once; retiring all (url "") takes the leases of AcquireOwner
// too, and leaves the caller's own.
func testRetireLeases(t *testing.T, s store.Store) {
	require.NoError(t, s.RegisterReplica(ctx, store.Replica{ID: "old", URL: "http://a", StartedAt: T0}))
	require.NoError(t, s.RegisterReplica(ctx, store.Replica{ID: "other", URL: "http://b", StartedAt: T0}))
	require.NoError(t, s.RegisterReplica(ctx, store.Replica{ID: "new", URL: "http://a", StartedAt: T0}))
	_, err := s.AcquireLease(ctx, "d1", "old", T0, T0.Add(time.Hour))
	require.NoError(t, err)
	_, err = s.AcquireLease(ctx, "d2", "other", T0, T0.Add(time.Hour))
	require.NoError(t, err)
	_, err = s.AcquireOwner(ctx, "d3", T0)
	require.NoError(t, err)
	_, err = s.AcquireLease(ctx, "d4", "new", T0, T0.Add(time.Hour))
	require.NoError(t, err)

	n, err := s.RetireReplicas(ctx, "http://a", "new", T0.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	expired, err := s.ExpiredLeases(ctx, T0.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"d1"}, leaseDevices(expired), "only the predecessor's lease")

	n, err = s.RetireReplicas(ctx, "", "new", T0.Add(2*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 3, n, "d1 (already expiring), d2 and d3")
	expired, err = s.ExpiredLeases(ctx, T0.Add(2*time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"d1", "d2", "d3"}, leaseDevices(expired))
	assert.Equal(t, T0.Add(time.Second), expired[0].Expires, "an expiry already past is kept")
}

func leaseDevices(ls []store.Lease) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.DeviceID)
	}
	return out
}

// testReapRace: of replicas reaping one expired lease at once, exactly
// one does.
func testReapRace(t *testing.T, s store.Store) {
	e, err := s.AcquireLease(ctx, "dev", "dead", T0, T0.Add(time.Second))
	require.NoError(t, err)
	wins := race(t, 16, store.ErrStale, func(i int) error {
		return s.ReapLease(ctx, "dev", e, fmt.Sprintf("r%d", i), T0.Add(time.Minute))
	})
	assert.Equal(t, 1, wins, "exactly one replica reaps a lease")
}

// testSessionClaimRace: claims of different Turns of one Session, raced
// as two replicas' workers would make them (the head Turn and the next,
// once the head is no longer queued): at most one Turn of the Session is
// active at any moment.
func testSessionClaimRace(t *testing.T, s store.Store) {
	seed(t, s, 2)
	var mu sync.Mutex
	won := map[string]int{}
	race(t, 16, store.ErrStale, func(i int) error {
		id := fmt.Sprintf("turn-%d", i%2)
		err := s.MoveTurn(ctx, ClaimMove(id, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: fmt.Sprintf("run-%d", i), At: T0.Add(time.Second)}))
		if err == nil {
			mu.Lock()
			won[id]++
			mu.Unlock()
		}
		return err
	})
	total := 0
	for _, n := range won {
		total += n
	}
	assert.Equal(t, 1, total, "one Turn of the Session is claimed: %v", won)
	active, err := s.ActiveTurns(ctx)
	require.NoError(t, err)
	require.Len(t, active, 1)

	// Once it finishes, the other Turn can be claimed.
	done := active[0]
	require.NoError(t, s.MoveTurn(ctx, store.TurnMove{TurnID: done.ID, RunID: done.RunID, From: store.TurnClaimed, To: store.TurnFailed,
		Outcome: &store.Outcome{Reason: store.ReasonDeliveryUnknown}, At: T0.Add(2 * time.Second)}))
	other := "turn-0"
	if done.ID == other {
		other = "turn-1"
	}
	require.NoError(t, s.MoveTurn(ctx, ClaimMove(other, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-next", At: T0.Add(3 * time.Second)})))
}

package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// Several replicas are several gateways on one store and one clock. The
// lease loop's own timer is set beyond the tests (an hour): each test
// runs its passes with LeasePass, so what a pass sees is decided by the
// test, not by when a timer fired.

const testTTL = 3 * time.Second

func replica(clock *peer.ManualClock, url string) func(*gateway.Config) {
	return func(c *gateway.Config) {
		c.Clock = clock
		c.PollInterval = time.Hour
		c.Replica = gateway.Replica{URL: url, Shared: true, LeaseTTL: testTTL, RenewInterval: time.Hour}
	}
}

// TestNewerConnectionOnAnotherReplicaFencesTheOlder: the device connects
// to replica a, then to replica b; a's next lease pass finds its lease
// taken and closes its socket as replaced, and b keeps the device.
func TestNewerConnectionOnAnotherReplicaFencesTheOlder(t *testing.T) {
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := newEnvStore(t, true, st, replica(clock, "http://a"))
	b := newEnvStore(t, true, st, replica(clock, "http://b"))
	old, _, err := a.dial("dev-1", a.issue(store.KindDevice, "dev-1", ""))
	require.NoError(t, err)
	defer old.CloseNow()
	send(t, old, heartbeat(t))
	a.waitDeclared("dev-1", true)

	fresh, _, err := b.dial("dev-1", b.issue(store.KindDevice, "dev-1", ""))
	require.NoError(t, err)
	defer fresh.CloseNow()
	send(t, fresh, heartbeat(t))
	b.waitDeclared("dev-1", true)
	d, err := st.GetDevice(context.Background(), "dev-1")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), d.OwnerEpoch)
	assert.Equal(t, b.gw.ReplicaID(), d.ReplicaID)

	clock.Advance(time.Second)
	a.gw.LeasePass()
	assert.Equal(t, websocket.StatusCode(peer.StatusReplaced), closedWith(t, old))
	require.Eventually(t, func() bool { return len(a.gw.Connected()) == 0 }, 10*time.Second, time.Millisecond)

	b.gw.LeasePass()
	d, err = st.GetDevice(context.Background(), "dev-1")
	require.NoError(t, err)
	assert.True(t, d.Connected, "the older connection's end leaves the device to b")
	assert.Equal(t, uint64(2), d.OwnerEpoch)
	assert.Equal(t, []string{"dev-1"}, b.gw.Connected())
}

// TestReplicaStopsSendingOnceItsLeaseLapses: a replica whose renewals
// fail (its store is gone) fences its connections once the TTL passed,
// before any other replica may reap the lease.
func TestReplicaStopsSendingOnceItsLeaseLapses(t *testing.T) {
	st := &failingRenewals{Store: memory.New()}
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := newEnvStore(t, true, st, replica(clock, "http://a"))
	conn, _, err := a.dial("dev-1", a.issue(store.KindDevice, "dev-1", ""))
	require.NoError(t, err)
	defer conn.CloseNow()
	send(t, conn, heartbeat(t))
	a.waitDeclared("dev-1", true)

	st.fail.Store(true)
	clock.Advance(testTTL - time.Millisecond)
	a.gw.LeasePass()
	assert.Equal(t, []string{"dev-1"}, a.gw.Connected(), "within the TTL a failed renewal changes nothing")
	clock.Advance(time.Millisecond)
	a.gw.LeasePass()
	assert.Equal(t, websocket.StatusCode(peer.StatusReplaced), closedWith(t, conn))
}

// TestReplicasReconcileOnlyDeadLeases: a replica that starts reconciles
// the Turns of its predecessor at its URL at once, leaves those of a live
// replica alone, and the Turns of a replica that died without restarting
// are reconciled once its lease expired, by exactly one of the replicas.
func TestReplicasReconcileOnlyDeadLeases(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := clock.Now()
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: now}))
	running := func(replicaID, url string, until time.Time) string {
		require.NoError(t, st.RegisterReplica(ctx, store.Replica{ID: replicaID, URL: url, StartedAt: now}))
		dev, ses, id := "dev-"+replicaID, "ses-"+replicaID, "turn-"+replicaID
		epoch, err := st.AcquireLease(ctx, dev, replicaID, now, until)
		require.NoError(t, err)
		require.NoError(t, st.CreateSession(ctx, store.Session{ID: ses, Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: now}))
		require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: id, SessionID: ses, Input: []byte(`[]`), CreatedAt: now}))
		require.NoError(t, storetest.Start(st, id, store.Claim{DeviceID: dev, OwnerEpoch: epoch, RunID: "run-" + replicaID, At: now}))
		return id
	}
	predecessor := running("old", "http://b", now.Add(time.Hour))
	live := running("live", "http://live", now.Add(time.Hour))
	dead := running("dead", "http://dead", now.Add(testTTL))

	b := newEnvStore(t, true, st, replica(clock, "http://b"))
	assertTurn(t, st, predecessor, store.TurnFailed, gateway.CauseCoreRestarted)
	assertTurn(t, st, live, store.TurnRunning, "")
	assertTurn(t, st, dead, store.TurnRunning, "")
	c := newEnvStore(t, true, st, replica(clock, "http://c"))
	assertTurn(t, st, dead, store.TurnRunning, "", "not expired when c started")

	clock.Advance(testTTL)
	var wg sync.WaitGroup
	for _, g := range []*gateway.Gateway{b.gw, c.gw, b.gw, c.gw} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.LeasePass()
		}()
	}
	wg.Wait()
	assertTurn(t, st, dead, store.TurnFailed, gateway.CauseReplicaLost)
	assertTurn(t, st, live, store.TurnRunning, "")
	d, err := st.GetDevice(ctx, "dev-dead")
	require.NoError(t, err)
	assert.False(t, d.Connected)
}

// assertTurn checks the Turn's state and, for a cause, that exactly one
// observation journals it.
func assertTurn(t *testing.T, st store.Store, id string, want store.TurnState, cause string, msg ...any) {
	t.Helper()
	tr, err := st.GetTurn(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, want, tr.State, msg...)
	evs, err := st.Events(context.Background(), id, 0, 0)
	require.NoError(t, err)
	var causes []string
	for _, e := range evs {
		var ob struct {
			Cause string `json:"cause"`
		}
		if e.Type == "observation" && json.Unmarshal(e.Payload, &ob) == nil {
			causes = append(causes, ob.Cause)
		}
	}
	if cause == "" {
		assert.Empty(t, causes, msg...)
		return
	}
	assert.Equal(t, []string{cause}, causes, "reconciled once")
}

// failingRenewals is a store whose lease renewals fail once fail is set,
// as when a replica loses its database.
type failingRenewals struct {
	store.Store
	fail atomic.Bool
}

func (s *failingRenewals) RenewLeases(ctx context.Context, replicaID string, at, until time.Time) ([]store.Lease, error) {
	if s.fail.Load() {
		return nil, errors.New("the database is unreachable")
	}
	return s.Store.RenewLeases(ctx, replicaID, at, until)
}

// TestReplicaWithoutTheDeviceLeavesTheTurnToItsOwner: a replica to which
// no device is connected does not fail a queued Turn unplaceable while
// the project's device is connected to another replica.
func TestReplicaWithoutTheDeviceLeavesTheTurnToItsOwner(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := clock.Now()
	require.NoError(t, st.AssignDevice(ctx, "dev-1", "p", now))
	_, err := st.AcquireLease(ctx, "dev-1", "rep-other", now, now.Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", CreatedAt: now}))
	require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses", Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: now}))
	require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: "turn", SessionID: "ses", Input: []byte(`[]`), CreatedAt: now}))
	e := newEnvStore(t, true, st, replica(clock, "http://b"), func(c *gateway.Config) { c.PlacementTimeout = time.Second })
	require.NoError(t, e.gw.Settled(ctx))
	w, ok := e.gw.Waiting("turn")
	require.True(t, ok)
	assert.Equal(t, gateway.WaitOtherReplica, w.Reason)
	clock.Advance(time.Minute)
	e.gw.Kick()
	require.NoError(t, e.gw.Settled(ctx))
	tr, err := st.GetTurn(ctx, "turn")
	require.NoError(t, err)
	assert.Equal(t, store.TurnQueued, tr.State, "not failed unplaceable")
}

// TestLeasePassDeliversAnInputStoredElsewhere: an input another replica
// stored for a Turn running here (nobody woke this replica's delivery) is
// sent at the next lease pass, once.
func TestLeasePassDeliversAnInputStoredElsewhere(t *testing.T) {
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnvStore(t, true, memory.New(), replica(clock, "http://a"))
	tr := e.queueTurn("steer")
	r := e.runtime("dev-1", wiretest.Capabilities())
	prepID, _ := r.prepare()
	start := r.next()
	require.Equal(t, wire.TypeExecutionStart, start.Type)
	runID := start.Payload.(wire.ExecutionStart).RunID
	r.send(prepID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 3, State: wire.PreparationStarted, RunID: runID})
	e.waitTurn(tr.ID, store.TurnRunning)

	raw, err := json.Marshal(wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "more"}}}})
	require.NoError(t, err)
	_, err = e.store.AppendInput(context.Background(), store.Input{TurnID: tr.ID, ID: "input-1", Content: raw, CreatedAt: clock.Now()})
	require.NoError(t, err)
	e.gw.LeasePass()
	steer := r.next()
	require.Equal(t, wire.TypePromptSteer, steer.Type, "the stored input goes out")
	assert.Equal(t, "input-1", steer.Payload.(wire.PromptSteer).InputID)
	e.gw.LeasePass() // a second pass while the input is in flight
	r.send(runID, wire.Done{})
	e.waitTurn(tr.ID, store.TurnCompleted)
}

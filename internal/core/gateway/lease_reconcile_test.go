package gateway_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// deadReplicaWork is what a replica that died left in the store for one
// device: under its lease (epoch old) a write past its commit attempt, a
// write still uploading, an attempt whose quiesce was in flight and one
// still idle; and under the device's newer connection on a live replica
// (epoch fresh) a write and an attempt of that connection's own.
type deadReplicaWork struct {
	old, fresh uint64
}

const (
	wCommitting = "w-committing"
	wUploading  = "w-uploading"
	wFresh      = "w-fresh"
	aQuiescing  = "a-quiescing"
	aIdle       = "a-idle"
	aFresh      = "a-fresh"
)

func leaveDeadReplicaWork(t *testing.T, st store.Store, now time.Time, deadURL string) deadReplicaWork {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.RegisterReplica(ctx, store.Replica{ID: "rep-dead", URL: deadURL, StartedAt: now}))
	require.NoError(t, st.RegisterReplica(ctx, store.Replica{ID: "rep-live", URL: "http://live", StartedAt: now}))
	old, err := st.AcquireLease(ctx, "dev-1", "rep-dead", now, now.Add(testTTL))
	require.NoError(t, err)
	fresh, err := st.AcquireLease(ctx, "dev-1", "rep-live", now, now.Add(time.Hour))
	require.NoError(t, err)

	reserve := func(id, session, state string, epoch uint64) {
		require.NoError(t, st.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: id, SessionID: session, Path: "a.txt", CreatedAt: now,
			WriteDetail: store.WriteDetail{State: "beginning", DeviceID: "dev-1", OwnerEpoch: epoch, SizeBytes: 1}}))
		if state != "beginning" {
			require.NoError(t, st.TransitionWorkspaceWrite(ctx, store.Move{Machine: "workspace_write", Key: id, From: "beginning", To: state, At: now}, false, "", ""))
		}
	}
	reserve(wCommitting, "ses-1", "committing", old)
	reserve(wUploading, "ses-2", "beginning", old)
	reserve(wFresh, "ses-3", "committing", fresh)

	attempt := func(id, env, state string, epoch uint64) {
		require.NoError(t, st.CreateSuspension(ctx, store.Suspension{ID: id, EnvironmentID: env, DeviceID: "dev-1", OwnerEpoch: epoch, State: "idle", CreatedAt: now}))
		if state != "idle" {
			require.NoError(t, st.TransitionSuspension(ctx, store.Move{Machine: "suspension", Key: id, From: "idle", To: state, At: now}, ""))
		}
	}
	attempt(aQuiescing, "env-1", "quiescing", old)
	attempt(aIdle, "env-2", "idle", old)
	attempt(aFresh, "env-3", "quiescing", fresh)
	return deadReplicaWork{old: old, fresh: fresh}
}

// assertDeadReplicaWorkReconciled: the dead lease's writes and attempts
// end where a Core restart takes them, each reconciled once across the
// replicas' logs; the newer connection's are untouched; and the unknown
// write is the operator's to resolve.
func assertDeadReplicaWorkReconciled(t *testing.T, st store.Store, cause string, survivors ...*env) {
	t.Helper()
	ctx := context.Background()
	write := func(id string) store.WorkspaceWrite {
		w, err := st.GetWorkspaceWrite(ctx, id)
		require.NoError(t, err)
		return w
	}
	w := write(wCommitting)
	assert.Equal(t, store.WriteStateUnknown, w.State, "commit may have left: the outcome is unknown")
	assert.Empty(t, w.Outcome, "an unknown write keeps its Session's owner")
	assert.Equal(t, cause, w.Reason)
	w = write(wUploading)
	assert.Equal(t, "aborted", w.State, "nothing reached the installer")
	assert.Equal(t, "aborted", w.Outcome, "released")
	assert.Equal(t, cause, w.Reason)
	w = write(wFresh)
	assert.Equal(t, "committing", w.State, "the newer connection's write is its own")
	assert.Empty(t, w.Outcome)

	attempt := func(id string) store.Suspension {
		a, err := st.GetSuspension(ctx, id)
		require.NoError(t, err)
		return a
	}
	assert.Equal(t, "uncertain", attempt(aQuiescing).State, "the quiesce's answer is lost with its connection")
	assert.Equal(t, "uncertain", attempt(aIdle).State, "the quiesce may have left before the replica died")
	assert.Equal(t, "quiescing", attempt(aFresh).State, "the newer connection's attempt is its own")

	var logs strings.Builder
	for _, s := range survivors {
		logs.WriteString(s.logs.String())
	}
	for _, id := range []string{wCommitting, wUploading} {
		assert.Equal(t, 1, strings.Count(logs.String(), `"mutation_id":"`+id+`","device_id"`), "write %s reconciled once", id)
	}
	for _, id := range []string{aQuiescing, aIdle} {
		assert.Equal(t, 1, strings.Count(logs.String(), `"gateway: reconcile: suspension attempt","suspend_id":"`+id+`"`), "attempt %s reconciled once", id)
	}

	got, err := survivors[0].gw.ResolveWrite(ctx, wCommitting, store.ResolutionNotApplied, "checked the workspace")
	require.NoError(t, err)
	assert.Equal(t, store.WriteResolved, got.Outcome)
	_, err = st.UnsettledWorkspaceWrite(ctx, "ses-1")
	assert.ErrorIs(t, err, store.ErrNotFound, "the Session's Turns may run again")
}

// TestReplicasReconcileTheWritesAndSuspensionsOfADeadLease: a replica
// dies with a workspace write and a suspension attempt in flight on a
// device that has meanwhile reconnected to a live replica. Nothing moves
// while the dead lease is valid; once it expired, the two survivors'
// concurrent lease passes reconcile the dead epoch's writes and attempts
// exactly once, and leave the newer epoch's alone.
func TestReplicasReconcileTheWritesAndSuspensionsOfADeadLease(t *testing.T) {
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	work := leaveDeadReplicaWork(t, st, clock.Now(), "http://dead")
	require.Less(t, work.old, work.fresh)
	b := newEnvStore(t, true, st, replica(clock, "http://b"))
	c := newEnvStore(t, true, st, replica(clock, "http://c"))

	clock.Advance(testTTL - time.Millisecond)
	b.gw.LeasePass()
	w, err := st.GetWorkspaceWrite(context.Background(), wCommitting)
	require.NoError(t, err)
	assert.Equal(t, "committing", w.State, "the lease has not expired: its replica may be alive")

	clock.Advance(time.Millisecond)
	var wg sync.WaitGroup
	for _, g := range []*gateway.Gateway{b.gw, c.gw, b.gw, c.gw} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.LeasePass()
		}()
	}
	wg.Wait()
	assertDeadReplicaWorkReconciled(t, st, gateway.CauseReplicaLost, b, c)
}

// TestReplicaRestartedAtItsURLReconcilesItsPredecessorsWrites: a replica
// that starts at the URL of the one that died retires it, and reconciles
// its writes and attempts at once, as it does its Turns.
func TestReplicaRestartedAtItsURLReconcilesItsPredecessorsWrites(t *testing.T) {
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	leaveDeadReplicaWork(t, st, clock.Now(), "http://b")
	b := newEnvStore(t, true, st, replica(clock, "http://b"))
	assertDeadReplicaWorkReconciled(t, st, gateway.CauseCoreRestarted, b)
}

// TestADeadReplicasIdleAttemptIsRolledBackOnTheDevicesNewConnection: a
// replica died right after storing an attempt (its quiesce perhaps sent);
// the device reconnected to replica b at once, whose connection, going
// live, leaves an idle attempt to the call that created it. Once the dead
// lease expired, b's lease pass takes the attempt to uncertain, adopts it
// on the device's connection (recording that connection's epoch) and,
// when its answer wait passed, rolls it back there: the Environment is
// held no longer.
func TestADeadReplicasIdleAttemptIsRolledBackOnTheDevicesNewConnection(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newEnvStore(t, true, st, replica(clock, "http://b"), func(c *gateway.Config) {
		c.Durations = map[string]time.Duration{"suspension.answer_wait": time.Second}
	})
	b.localSession("held", "codex")
	now := clock.Now()
	require.NoError(t, st.RegisterReplica(ctx, store.Replica{ID: "rep-dead", URL: "http://dead", StartedAt: now}))
	old, err := st.AcquireLease(ctx, "dev-1", "rep-dead", now, now.Add(testTTL))
	require.NoError(t, err)
	require.NoError(t, st.CreateSuspension(ctx, store.Suspension{ID: "a-1", EnvironmentID: "env-held", DeviceID: "dev-1", OwnerEpoch: old, State: "idle", CreatedAt: now}))

	r := b.runtime("dev-1", wiretest.Capabilities())
	b.waitDeclared("dev-1", true)
	clock.Advance(testTTL - time.Millisecond)
	b.gw.LeasePass() // renews b's own lease; the dead one is still valid
	assert.Equal(t, "idle", b.attempt("a-1").State)
	assert.Equal(t, old, b.attempt("a-1").OwnerEpoch)

	clock.Advance(time.Millisecond)
	b.gw.LeasePass()
	a := b.attempt("a-1")
	assert.Equal(t, "uncertain", a.State)
	assert.Greater(t, a.OwnerEpoch, old, "the device's new connection carries it")
	_, ok := b.gw.SuspensionInstance(ctx, "dev-1", "a-1")
	require.True(t, ok, "adopted on the device's connection")

	clock.Advance(time.Second)
	rid, rb := r.resume()
	assert.True(t, rb.Rollback)
	assert.Equal(t, "a-1", rb.SuspendID)
	yes := true
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: "a-1", Accepted: &yes})
	require.Eventually(t, func() bool { return b.attempt("a-1").Settled }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "resumed", b.attempt("a-1").State)
}

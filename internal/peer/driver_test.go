package peer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

func TestAdmissionToDone(t *testing.T) {
	p := newPair(t)
	p.rtApp.script = startedThenDone(prepID, 3)

	prepared := send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	require.NoError(t, prepared())
	assert.Equal(t, "ready", state(t, p.core, "preparation", prepID))
	assert.Equal(t, "ready", state(t, p.runtime, "preparation", prepID))

	started := send(p.core, peer.Outbound{ID: prepID, Payload: start()})
	p.pump()
	require.NoError(t, started())
	for _, d := range []*peer.Driver{p.core, p.runtime} {
		assert.Equal(t, "started", state(t, d, "preparation", prepID), d.Role())
		assert.Equal(t, "completed", state(t, d, "run", runID), d.Role())
	}
	assert.Equal(t, []string{
		"core> execution_prepare prepare-1",
		"runtime> preparation_status prepare-1",
		"runtime> preparation_status prepare-1",
		"core> execution_start prepare-1",
		"runtime> preparation_status prepare-1",
		"runtime> delta run-1",
		"runtime> done run-1",
	}, p.frames)
	assert.Equal(t, []string{runID}, p.rtApp.native)
	assert.Contains(t, p.coreApp.effects(), "run/run-1: core: do close_stream")
	assert.Empty(t, p.coreApp.refused)
	assert.Empty(t, p.rtApp.refused)

	// Core's admission deadline ran from ready and stopped at started.
	i, ok := p.core.Lookup(peer.Key{Machine: "preparation", ID: prepID})
	require.True(t, ok)
	for tm := range i.Table().Timers {
		_, armed := i.Deadline(fsm.TimerID(tm + 1))
		assert.False(t, armed)
	}
}

func TestReleaseBeforeStart(t *testing.T) {
	p := newPair(t)
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	released := send(p.core, peer.Outbound{ID: prepID, Payload: wire.ExecutionRelease{Handle: "handle-1"}})
	p.pump()
	require.NoError(t, released())
	assert.Equal(t, "releasing", state(t, p.core, "preparation", prepID))
	assert.Contains(t, p.rtApp.effects(), "preparation/prepare-1: runtime: do settle_cleanup")

	// A start after the release is refused by Core's own machine: nothing leaves.
	n := len(p.frames)
	refused := send(p.core, peer.Outbound{ID: prepID, Payload: start()})
	p.pump()
	var se *peer.SendError
	require.ErrorAs(t, refused(), &se)
	require.ErrorIs(t, refused(), fsm.ErrRejected)
	assert.Len(t, p.frames, n, "a refused send writes nothing")
	assert.Equal(t, "(none)", state(t, p.core, "run", runID), "the refused start leaves no Run behind")
}

// A start that the preparation refuses must not reach the Run machine, so
// no native work starts (the route's order gates it).
func TestRejectedStartStartsNoNativeWork(t *testing.T) {
	p := newPair(t)
	p.rtApp.script = startedThenDone(prepID, 3)
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	send(p.core, peer.Outbound{ID: prepID, Payload: start()})
	p.pump()
	require.Equal(t, []string{runID}, p.rtApp.native)

	// A second start for another Run on the same, already started, handle:
	// delivered raw to the Runtime, since Core's machine would refuse to send it.
	second := start()
	second.RunID = "run-2"
	frame, err := wire.Encode(prepID, second, "")
	require.NoError(t, err)
	err = p.runtime.Deliver(frame)
	require.ErrorIs(t, err, fsm.ErrRejected)
	assert.Equal(t, []string{runID}, p.rtApp.native, "no native work for the refused start")
	assert.Equal(t, "(none)", state(t, p.runtime, "run", "run-2"))
	require.Len(t, p.rtApp.refused, 1)
	assert.Equal(t, peer.RefusedMachine, p.rtApp.refused[0].Kind)
	assert.Equal(t, "preparation", p.rtApp.refused[0].Key.Machine)
}

func TestExpiryAcrossRestore(t *testing.T) {
	p := newPair(t)
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	require.Equal(t, "ready", state(t, p.runtime, "preparation", prepID))
	i, _ := p.runtime.Lookup(peer.Key{Machine: "preparation", ID: prepID})
	deadline, ok := i.Deadline(1)
	require.True(t, ok)
	assert.Equal(t, p.clock.Now().Add(5*time.Minute), deadline)

	p.clock.Advance(4 * time.Minute)
	saved := p.runtime.Snapshot(nil)
	require.Len(t, saved, 1)

	restored := p.driver(fsm.RoleRuntime, newApp(t, fsm.RoleRuntime))
	require.NoError(t, restored.Restore(saved))
	at, ok := restored.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, time.Minute, at.Sub(p.clock.Now()), "re-armed for the time that remains")

	p.clock.Advance(59 * time.Second)
	restored.Tick()
	assert.Equal(t, "ready", state(t, restored, "preparation", prepID))
	p.clock.Advance(time.Second)
	restored.Tick()
	assert.Equal(t, "expired", state(t, restored, "preparation", prepID))
	assert.Equal(t, 1, restored.Stats().Expired)

	// A snapshot that omits an armed deadline cannot be restored: the
	// driver never invents a full duration.
	saved[0].Deadlines = nil
	require.Error(t, p.driver(fsm.RoleRuntime, newApp(t, fsm.RoleRuntime)).Restore(saved))
}

func TestLateTimerAfterStopNeverFires(t *testing.T) {
	p := newPair(t)
	p.rtApp.script = startedThenDone(prepID, 3)
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	send(p.core, peer.Outbound{ID: prepID, Payload: start()})
	p.pump()
	require.Equal(t, "started", state(t, p.core, "preparation", prepID))
	p.clock.Advance(10 * time.Minute)
	p.core.Tick()
	p.runtime.Tick()
	assert.Zero(t, p.core.Stats().Expired, "the stopped admission expiry never fires")
	assert.Zero(t, p.runtime.Stats().Expired)
	assert.Equal(t, "(none)", state(t, p.core, "preparation", prepID), "settled instances are forgotten after their retention")
}

func TestCancellationSettledByReceiptAfterDone(t *testing.T) {
	p := newPair(t)
	p.rtApp.script = func(d *peer.Driver, run string) {
		d.Send(peer.Outbound{ID: prepID, Payload: wire.PreparationStatus{Revision: 3, State: "started", RunID: run, Handle: "handle-1", ExecutorID: "executor-1"}}, nil)
		d.Send(peer.Outbound{ID: run, Payload: wire.Delta{Delta: "partial", Sequence: 1}}, nil)
	}
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	send(p.core, peer.Outbound{ID: prepID, Payload: start()})
	p.pump()
	require.Equal(t, "streaming", state(t, p.core, "run", runID))

	send(p.core, peer.Outbound{ID: runID, Payload: wire.PromptCancel{DeliveryID: "cancel-1"}})
	p.pump()
	require.Equal(t, "cancelling", state(t, p.core, "run", runID))
	assert.Contains(t, p.rtApp.effects(), "run/run-1: runtime: do cancel_native")

	send(p.runtime, peer.Outbound{ID: runID, Payload: wire.Done{Content: "partial"}})
	p.pump()
	require.Equal(t, "cancel_drained", state(t, p.core, "run", runID))

	// A receipt with another delivery ID proves nothing.
	applied := true
	bad := send(p.runtime, peer.Outbound{ID: runID, Payload: wire.InteractionDecisionAck{DeliveryID: "other", Applied: &applied}})
	p.pump()
	require.Error(t, bad(), "the Runtime's own machine refuses a receipt it cannot correlate")

	good := send(p.runtime, peer.Outbound{ID: runID, Payload: wire.InteractionDecisionAck{DeliveryID: "cancel-1", Applied: &applied}})
	p.pump()
	require.NoError(t, good())
	assert.Equal(t, "cancelled", state(t, p.core, "run", runID))
	assert.Contains(t, p.coreApp.effects(), "run/run-1: core: do apply_cancel_receipt")

	// The cancellation deadline was stopped by the receipt.
	p.clock.Advance(time.Minute)
	p.core.Tick()
	assert.Zero(t, p.core.Stats().Expired)
}

func TestConnectionLossFansOut(t *testing.T) {
	p := newPair(t)
	p.rtApp.script = func(d *peer.Driver, run string) {
		d.Send(peer.Outbound{ID: prepID, Payload: wire.PreparationStatus{Revision: 3, State: "started", RunID: run, Handle: "handle-1", ExecutorID: "executor-1"}}, nil)
		d.Send(peer.Outbound{ID: run, Payload: wire.Delta{Delta: "x", Sequence: 1}}, nil)
	}
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	send(p.core, peer.Outbound{ID: "prepare-2", Payload: prepare(t)})
	p.pump()
	send(p.core, peer.Outbound{ID: prepID, Payload: start()})
	p.pump()
	pending := send(p.core, peer.Outbound{ID: "prepare-3", Payload: prepare(t)})

	p.core.ConnectionLost()
	require.ErrorIs(t, pending(), peer.ErrConnectionLost, "queued sends fail")
	assert.Equal(t, "incomplete", state(t, p.core, "run", runID), "no error or done is invented")
	assert.Equal(t, "abandoned", state(t, p.core, "preparation", "prepare-2"))
	// The started admission was settled before the loss and stays so.
	assert.Equal(t, "started", state(t, p.core, "preparation", prepID))
	assert.Contains(t, p.coreApp.effects(), "run/run-1: core: do mark_event_stream_incomplete")

	require.ErrorIs(t, p.core.Deliver([]byte(`{"type":"done","id":"run-1","payload":{}}`)), peer.ErrConnectionLost)
	p.core.ConnectionLost() // idempotent
}

func TestUnknownFrameTypeIsRefusedNotDropped(t *testing.T) {
	p := newPair(t)
	err := p.core.Deliver([]byte(`{"type":"teleport","id":"x","payload":{}}`))
	var re *wire.RouteError
	require.ErrorAs(t, err, &re)
	require.Len(t, p.coreApp.refused, 1)
	assert.Equal(t, peer.RefusedDecode, p.coreApp.refused[0].Kind)
	assert.Equal(t, "teleport", p.coreApp.refused[0].Type())
	assert.Equal(t, 1, p.core.Stats().Refused[peer.RefusedDecode])

	require.Error(t, p.core.Deliver([]byte(`{"type":`)))
	require.Error(t, p.core.Deliver([]byte(`{"type":"execution_prepare","id":"x","payload":{}}`)), "a Core never receives a Core frame")
	assert.Equal(t, 3, p.core.Stats().Refused[peer.RefusedDecode])
}

func TestFrameForUnknownInstance(t *testing.T) {
	p := newPair(t)
	frame, err := wire.Encode("nobody", wire.PreparationStatus{Revision: 1, State: "preparing", Handle: "h", ExecutorID: "e"}, "")
	require.NoError(t, err)
	require.ErrorIs(t, p.core.Deliver(frame), fsm.ErrRejected)
	require.Len(t, p.coreApp.refused, 1)
	assert.Equal(t, peer.RefusedMachine, p.coreApp.refused[0].Kind)
	assert.Equal(t, "(none)", state(t, p.core, "preparation", "nobody"), "a refused frame leaves no instance")
	assert.Empty(t, p.core.Instances())
}

func TestDuplicateReceiptChangesNothing(t *testing.T) {
	p := newPair(t)
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	frame, err := wire.Encode(prepID, wire.PreparationStatus{Revision: 2, State: "ready", ExecutorID: "executor-1", Handle: "handle-1", ExpiresAt: 1800000000000}, "")
	require.NoError(t, err)
	before := p.core.Stats()
	require.NoError(t, p.core.Deliver(frame), "a repeated revision is ignored, not refused")
	after := p.core.Stats()
	assert.Equal(t, before.Steps[fsm.Ignored]+1, after.Steps[fsm.Ignored])
	assert.Equal(t, "ready", state(t, p.core, "preparation", prepID))
	i, _ := p.core.Lookup(peer.Key{Machine: "preparation", ID: prepID})
	at, _ := i.Deadline(1)
	assert.Equal(t, p.clock.Now().Add(5*time.Minute), at, "a duplicate never extends the admission expiry")
}

func TestFailedWriteFiresDeclaredEvent(t *testing.T) {
	ts := tables(t)
	clock := peer.NewManualClock(time.Unix(0, 0))
	a := newApp(t, fsm.RoleCore)
	d, err := peer.New(peer.Config{
		Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: a, Clock: clock, Logger: quietLogger(),
	})
	require.NoError(t, err)
	// Reach ready on Core's side by delivering the Runtime's statuses.
	send(d, peer.Outbound{ID: prepID, Payload: prepare(t)})
	w, ok := d.NextWrite()
	require.True(t, ok)
	d.Written(w, nil)
	for rev, st := range []string{"preparing", "ready"} {
		f, err := wire.Encode(prepID, wire.PreparationStatus{Revision: uint64(rev + 1), State: st, ExecutorID: "executor-1", Handle: "handle-1", ExpiresAt: 1}, "")
		require.NoError(t, err)
		require.NoError(t, d.Deliver(f))
	}
	result := send(d, peer.Outbound{ID: prepID, Payload: start()})
	w, ok = d.NextWrite()
	require.True(t, ok)
	d.Written(w, errors.New("broken pipe"))
	var we *peer.WriteError
	require.ErrorAs(t, result(), &we)
	// Possibly delivered: Core records delivery_unknown and keeps observing,
	// since frames for this Run would still prove it started.
	assert.Equal(t, "requested", state(t, d, "run", runID))
	assert.Contains(t, a.effects(), "run/run-1: core: do mark_delivery_unknown")
	assert.Equal(t, 1, d.Stats().FailedWrites)
	d.ConnectionLost()
	assert.Equal(t, "incomplete", state(t, d, "run", runID), "a lost stream replaces the send reason")
}

func TestConfigIsChecked(t *testing.T) {
	ts := tables(t)
	a := newApp(t, fsm.RoleCore)
	for name, cfg := range map[string]peer.Config{
		"no role":   {Tables: ts, Router: testRouter(ts), App: a},
		"both":      {Role: fsm.RoleBoth, Tables: ts, Router: testRouter(ts), App: a},
		"no tables": {Role: fsm.RoleCore, Router: testRouter(ts), App: a},
		"no router": {Role: fsm.RoleCore, Tables: ts, App: a},
		"no app":    {Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts)},
		"bad lost":  {Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: a, LostEvents: map[string]string{"run": "nope"}},
		"fixed timer": {Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: a,
			Durations: map[string]time.Duration{"preparation.admission_expiry": time.Minute}},
		"unknown timer": {Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: a,
			Durations: map[string]time.Duration{"run.nope": time.Minute}},
	} {
		_, err := peer.New(cfg)
		assert.Error(t, err, name)
	}
}

func TestInstanceLimitEvictsOnlySettled(t *testing.T) {
	ts := tables(t)
	clock := peer.NewManualClock(time.Unix(0, 0))
	a := newApp(t, fsm.RoleRuntime)
	a.noReply = true
	d, err := peer.New(peer.Config{
		Role: fsm.RoleRuntime, Tables: ts, Router: testRouter(ts), App: a, Clock: clock, Logger: quietLogger(),
		Limits: peer.Limits{MaxInstances: 8, PerMachine: map[string]int{"preparation": 2}, Retention: time.Minute, MaxPendingSends: 8},
	})
	require.NoError(t, err)
	deliver := func(id string) error {
		f, err := wire.Encode(id, prepare(t), "")
		require.NoError(t, err)
		return d.Deliver(f)
	}
	require.NoError(t, deliver("a"))
	require.NoError(t, deliver("b"))
	require.Error(t, deliver("c"), "two live admissions fill the registry")
	assert.Equal(t, peer.RefusedRoute, a.refused[len(a.refused)-1].Kind)
	assert.Empty(t, a.forgot, "live instances are never forgotten")

	// Settle one (a release from requested is refused, so expire it via loss
	// of the connection is too broad: settle it by a failed status instead).
	f, err := wire.Encode("a", wire.PreparationStatus{Revision: 1, State: "failed", ErrorCode: "preparation_failed", Handle: "h"}, "")
	require.NoError(t, err)
	// The Runtime does not receive statuses; send it as its own frame.
	done := send(d, peer.Outbound{ID: "a", Payload: wire.PreparationStatus{Revision: 1, State: "failed", ErrorCode: "preparation_failed", Handle: "h"}})
	w, ok := d.NextWrite()
	require.True(t, ok, "the failed status is accepted")
	d.Written(w, nil)
	require.NoError(t, done())
	_ = f
	require.Equal(t, "failed", state(t, d, "preparation", "a"))
	require.NoError(t, deliver("c"), "a settled instance makes room")
	assert.Equal(t, 1, d.Stats().Evicted)
	assert.Equal(t, []peer.Key{{Machine: "preparation", ID: "a"}}, a.forgot, "the app is told of the eviction")

	// Retention forgets settled instances on the clock.
	send(d, peer.Outbound{ID: "b", Payload: wire.PreparationStatus{Revision: 1, State: "failed", ErrorCode: "preparation_failed", Handle: "h"}})
	w, _ = d.NextWrite()
	d.Written(w, nil)
	clock.Advance(time.Minute)
	d.Tick()
	assert.Equal(t, "(none)", state(t, d, "preparation", "b"))
	assert.Equal(t, "requested", state(t, d, "preparation", "c"))
	assert.Equal(t, []peer.Key{{Machine: "preparation", ID: "a"}, {Machine: "preparation", ID: "b"}}, a.forgot,
		"and of the expiry of a retained one")

	// A frame refused by a fresh instance leaves no instance behind, and
	// nothing that moved was forgotten.
	f, err = wire.Encode("run-x", wire.PromptCancel{DeliveryID: "late"}, "")
	require.NoError(t, err)
	require.Error(t, d.Deliver(f))
	assert.Len(t, a.forgot, 2, "a pristine instance dropped is not reported")
}

func TestRefusalRepliesBypassTheMachines(t *testing.T) {
	p := newPair(t)
	send(p.core, peer.Outbound{ID: prepID, Payload: prepare(t)})
	p.pump()
	send(p.core, peer.Outbound{ID: prepID, Payload: start()})
	p.pump()
	// A late prompt_cancel for a Run the Runtime never saw is refused by its
	// machine; the Runtime answers run_inactive without stepping anything.
	frame, err := wire.Encode("run-9", wire.PromptCancel{DeliveryID: "late"}, "")
	require.NoError(t, err)
	require.ErrorIs(t, p.runtime.Deliver(frame), fsm.ErrRejected)
	refused := false
	ack := send(p.runtime, peer.Outbound{ID: "run-9", Refusal: true, Payload: wire.InteractionDecisionAck{DeliveryID: "late", Applied: &refused, ErrorCode: "run_inactive"}})
	w, ok := p.runtime.NextWrite()
	require.True(t, ok)
	p.runtime.Written(w, nil)
	require.NoError(t, ack())
	assert.Equal(t, "(none)", state(t, p.runtime, "run", "run-9"))
	// Without Refusal the same frame is refused before it is written.
	bad := send(p.runtime, peer.Outbound{ID: "run-9", Payload: wire.InteractionDecisionAck{DeliveryID: "late", Applied: &refused, ErrorCode: "run_inactive"}})
	_, ok = p.runtime.NextWrite()
	require.False(t, ok)
	require.Error(t, bad())
	// Refusals are still validated.
	invalid := send(p.runtime, peer.Outbound{ID: "run-9", Refusal: true, Payload: wire.InteractionDecisionAck{DeliveryID: ""}})
	_, ok = p.runtime.NextWrite()
	require.False(t, ok)
	require.Error(t, invalid())
}

func TestOpenCreatesAnInstanceWithoutAnEvent(t *testing.T) {
	p := newPair(t)
	i, err := p.core.Open(peer.Key{Machine: "run", ID: "r"})
	require.NoError(t, err)
	assert.Equal(t, "idle", i.StateName())
	again, err := p.core.Open(peer.Key{Machine: "run", ID: "r"})
	require.NoError(t, err)
	assert.Same(t, i, again)
	_, err = p.core.Open(peer.Key{Machine: "nope", ID: "r"})
	require.Error(t, err)
}

// A state's declaration lists the timers of both roles (input's sent has
// Core's written_wait and the Runtime's native_write), but each peer only
// arms its own, so each restores with its own deadlines and no other.
func TestRestoreCountsOnlyTheRolesTimers(t *testing.T) {
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	ts := []*fsm.Table{input.Table}
	newDriver := func(role fsm.Role) *peer.Driver {
		d, err := peer.New(peer.Config{
			Role: role, Tables: ts, Router: testRouter(ts), App: newApp(t, role), Clock: clock,
			Logger: quietLogger(), Label: role.String(),
		})
		require.NoError(t, err)
		return d
	}
	at := clock.Now().Add(20 * time.Second)
	saved := func(timer string) []peer.Saved {
		return []peer.Saved{{Machine: "input", ID: "in-1", State: "sent", Deadlines: map[string]time.Time{timer: at}}}
	}

	core := newDriver(fsm.RoleCore)
	require.NoError(t, core.Restore(saved("written_wait")))
	next, ok := core.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, at, next)
	require.Error(t, newDriver(fsm.RoleCore).Restore(saved("native_write")), "Core never arms native_write")

	rt := newDriver(fsm.RoleRuntime)
	require.NoError(t, rt.Restore(saved("native_write")))
	require.Error(t, newDriver(fsm.RoleRuntime).Restore(saved("written_wait")), "the Runtime never arms written_wait")
	require.Error(t, newDriver(fsm.RoleRuntime).Restore([]peer.Saved{{Machine: "input", ID: "in-1", State: "sent"}}),
		"a deadline the role arms is missing")
}

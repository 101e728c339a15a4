package fsm_test

// Benchmarks of the generated protocol engine against github.com/looplab/fsm,
// both driven from the same table (spec/preparation.yaml). Every benchmark op
// is ONE event: the cycle benchmarks take one step of a five-move cycle per
// b.Loop iteration, so their ns/op are directly comparable with each other
// and with the single-event rejection benchmarks. See BENCHMARKS.md.

import (
	"context"
	"testing"

	looplab "github.com/looplab/fsm"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/fsmtest"
	"github.com/agentwire/agentwire/fsm/preparation"
)

// specPath is relative to this package's directory, as LoadMachine wants.
const specPath = "../spec/preparation.yaml"

// frame stands in for the decoded wire message passed to Fire: the fields the
// preparation guards read.
type frame struct {
	Rev            uint64 // preparation_status revision; 0 for core messages, which carry none
	Fingerprint    uint64 // payload fingerprint of execution_prepare
	ReadOnly       bool   // the handle was prepared with workspace_read_only
	RejectsPrepare bool   // status_rejected names execution_prepare
}

// move is one step of the benchmark cycle.
type move struct {
	event   preparation.Event
	held    preparation.GuardSet // guards that hold, for the pure Transition
	arg     *frame               // argument for Fire and for looplab callbacks
	to      preparation.State    // where the step lands
	looplab string               // the looplab event name of the same goto rule
}

// startCycle is the happy path of one admission:
// idle → requested → preparing → ready → starting → started. It is checked
// against the generated Transition (every step must move), and the looplab
// name of each step is derived from the candidate Transition selected, so
// both engines run the same rule of the same table.
func startCycle(tb testing.TB) []move {
	tb.Helper()
	newer := preparation.GuardSet(0).With(preparation.GuardNewerRevision)
	moves := []move{
		{event: preparation.EventExecutionPrepare, arg: &frame{Fingerprint: 0xfeed}},
		{event: preparation.EventStatusPreparing, held: newer, arg: &frame{Rev: 1}},
		{event: preparation.EventStatusReady, held: newer, arg: &frame{Rev: 2}},
		// ready × execution_start tries read_only_profile first (not held),
		// then takes the unguarded fallback to starting.
		{event: preparation.EventExecutionStart, arg: &frame{Fingerprint: 0xfeed}},
		{event: preparation.EventStatusStarted, held: newer, arg: &frame{Rev: 3}},
	}
	s := preparation.Initial
	for i := range moves {
		mv := &moves[i]
		st, err := preparation.Transition(s, mv.event, mv.held)
		require.NoError(tb, err, "step %d", i)
		require.Equal(tb, fsm.Moved, st.Disposition(), "step %d: %s in %s", i, mv.event, s)
		mv.to = st.To()
		mv.looplab = mv.event.String()
		if st.Guard() != 0 {
			mv.looplab += "?" + st.Guard().String()
		}
		s = st.To()
	}
	require.Equal(tb, preparation.StateStarted, s)
	return moves
}

// counters is the allocation-free work the effect hooks and the equivalent
// looplab callbacks do.
type counters struct {
	applied    uint64 // highest status revision applied to the handle
	guards     uint64 // guard evaluations
	sends      uint64
	armed      [2]uint64 // per Timer
	disarmed   [2]uint64
	actions    uint64
	fingerprnt uint64 // fingerprint of the first execution_prepare
}

func (c *counters) reset() { c.applied = 0 }

// hooks implements preparation.RuntimeHooks[*frame] and fsm.Timers. Guards
// read the frame; a newer revision is recorded as applied as soon as its
// guard holds (the guard holding selects the candidate, so the transition
// happens).
type hooks struct{ counters }

var (
	_ preparation.RuntimeHooks[*frame] = (*hooks)(nil)
	_ fsm.Timers[*frame]               = (*hooks)(nil)
)

func (h *hooks) GuardNewerRevision(f *fsm.Firing[*frame]) bool {
	h.guards++
	if f.Arg.Rev > h.applied {
		h.applied = f.Arg.Rev
		return true
	}
	return false
}

func (h *hooks) GuardSameFingerprint(f *fsm.Firing[*frame]) bool {
	h.guards++
	return f.Arg.Fingerprint == h.fingerprnt
}

func (h *hooks) GuardRejectsPrepare(f *fsm.Firing[*frame]) bool {
	h.guards++
	return f.Arg.RejectsPrepare
}

func (h *hooks) GuardCapacityRefusal(f *fsm.Firing[*frame]) bool {
	h.guards++
	return false
}

func (h *hooks) GuardRejectsStart(f *fsm.Firing[*frame]) bool {
	h.guards++
	return false
}

func (h *hooks) GuardReadOnlyProfile(f *fsm.Firing[*frame]) bool {
	h.guards++
	return f.Arg.ReadOnly
}

func (h *hooks) SendPreparationStatus(f *fsm.Firing[*frame]) error {
	h.sends++
	h.fingerprnt = f.Arg.Fingerprint
	return nil
}

func (h *hooks) StartTimer(_ *fsm.Firing[*frame], t fsm.TimerID) error {
	h.armed[t]++
	return nil
}

func (h *hooks) StopTimer(_ *fsm.Firing[*frame], t fsm.TimerID) error {
	h.disarmed[t]++
	return nil
}

func (h *hooks) DoRecordRejection(*fsm.Firing[*frame]) error { h.actions++; return nil }
func (h *hooks) DoSettleCleanup(*fsm.Firing[*frame]) error   { h.actions++; return nil }

// looplabCallbacks does in looplab what hooks does in the generated machine:
// leave_state evaluates the guards from the frame (cancelling the event when
// one fails), enter_state performs the runtime effects of the target state.
func looplabCallbacks(c *counters) looplab.Callbacks {
	return looplab.Callbacks{
		"leave_state": func(_ context.Context, e *looplab.Event) {
			a := e.Args[0].(*frame)
			c.guards++
			if a.ReadOnly {
				e.Cancel()
				return
			}
			if a.Rev != 0 {
				if a.Rev <= c.applied {
					e.Cancel()
					return
				}
				c.applied = a.Rev
			}
		},
		"enter_state": func(_ context.Context, e *looplab.Event) {
			switch e.Dst {
			case "requested":
				c.sends++
				c.fingerprnt = e.Args[0].(*frame).Fingerprint
			case "ready":
				c.armed[preparation.TimerAdmissionExpiry]++
			case "started":
				c.disarmed[preparation.TimerAdmissionExpiry]++
			}
		},
	}
}

// newLooplab builds looplab from the same spec and checks, outside any timed
// region, that it walks the cycle to the same states.
func newLooplab(tb testing.TB, cycle []move, cbs looplab.Callbacks) *looplab.FSM {
	tb.Helper()
	m := fsmtest.LoadMachine(tb, specPath)
	f := looplab.NewFSM(preparation.Initial.String(), fsmtest.LooplabEvents(m), cbs)
	ctx := context.Background()
	for _, mv := range cycle {
		require.NoError(tb, f.Event(ctx, mv.looplab, mv.arg), "looplab %s", mv.looplab)
		require.Equal(tb, mv.to.String(), f.Current())
	}
	f.SetState(preparation.Initial.String())
	return f
}

// newMachine returns a runtime-side machine (preparation.NewRuntime) and
// checks that it walks the cycle.
func newMachine(tb testing.TB, cycle []move) (*fsm.Machine[*frame], *hooks) {
	tb.Helper()
	h := &hooks{}
	m, err := preparation.NewRuntime[*frame](h, h)
	require.NoError(tb, err)
	for _, mv := range cycle {
		require.NoError(tb, m.Fire(fsm.EventID(mv.event), mv.arg))
		require.Equal(tb, mv.to, preparation.State(m.State()))
	}
	require.NotZero(tb, h.sends)
	require.NotZero(tb, h.armed[preparation.TimerAdmissionExpiry])
	require.NotZero(tb, h.disarmed[preparation.TimerAdmissionExpiry])
	_, err = m.Restore(initial)
	require.NoError(tb, err)
	h.reset()
	return m, h
}

// initial is where Restore takes the machine after each cycle.
const initial = fsm.StateID(preparation.Initial)

var (
	sinkState preparation.State
	sinkErr   error
)

// BenchmarkTransition: the pure generated function, one cycle step per op.
func BenchmarkTransition(b *testing.B) {
	cycle := startCycle(b)
	b.ReportAllocs()
	s, i := preparation.Initial, 0
	for b.Loop() {
		mv := &cycle[i]
		st, err := preparation.Transition(s, mv.event, mv.held)
		if err != nil {
			b.Fatal(err)
		}
		s = st.To()
		if i++; i == len(cycle) {
			i, s = 0, preparation.Initial
		}
	}
	sinkState = s
}

// BenchmarkTransitionReject: execution_start before execution_prepare.
func BenchmarkTransitionReject(b *testing.B) {
	b.ReportAllocs()
	var err error
	for b.Loop() {
		_, err = preparation.Transition(preparation.StateIdle, preparation.EventExecutionStart, 0)
	}
	if err == nil {
		b.Fatal("execution_start in idle was not rejected")
	}
	sinkErr = err
}

// BenchmarkFire: fsm.Machine.Fire of preparation.NewRuntime with real
// guards and counting effect hooks, lock included: the step, then the
// outbox performed through the generated binding. Every op is a move; after the last step the machine is
// restored to idle (one Restore per five ops, inside the timed loop).
func BenchmarkFire(b *testing.B) {
	cycle := startCycle(b)
	m, h := newMachine(b, cycle)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		mv := &cycle[i]
		if err := m.Fire(fsm.EventID(mv.event), mv.arg); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(cycle) {
			i = 0
			if _, err := m.Restore(initial); err != nil {
				b.Fatal(err)
			}
			h.reset()
		}
	}
	sinkState = preparation.State(m.State())
}

// BenchmarkFireReject: Fire of a rejected event (lock and step, no hook runs).
func BenchmarkFireReject(b *testing.B) {
	m, _ := newMachine(b, startCycle(b))
	b.ReportAllocs()
	var err error
	for b.Loop() {
		err = m.Fire(fsm.EventID(preparation.EventExecutionStart), nil)
	}
	if err == nil {
		b.Fatal("execution_start in idle was not rejected")
	}
	sinkErr = err
}

// BenchmarkLooplabEvent: looplab's Event over the same cycle, no callbacks.
// SetState(idle) after the last step, inside the timed loop, like Restore.
func BenchmarkLooplabEvent(b *testing.B) {
	cycle := startCycle(b)
	f := newLooplab(b, cycle, nil)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := f.Event(ctx, cycle[i].looplab); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(cycle) {
			i = 0
			f.SetState("idle")
		}
	}
}

// BenchmarkLooplabEventCallbacks: as above, with leave_state/enter_state
// callbacks doing the hooks' work and the frame passed as the event arg.
func BenchmarkLooplabEventCallbacks(b *testing.B) {
	cycle := startCycle(b)
	c := &counters{}
	f := newLooplab(b, cycle, looplabCallbacks(c))
	c.reset()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		mv := &cycle[i]
		if err := f.Event(ctx, mv.looplab, mv.arg); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(cycle) {
			i = 0
			f.SetState("idle")
			c.reset()
		}
	}
}

// BenchmarkLooplabReject: execution_start in idle (a known event with no
// transition from there).
func BenchmarkLooplabReject(b *testing.B) {
	f := newLooplab(b, startCycle(b), nil)
	ctx := context.Background()
	b.ReportAllocs()
	var err error
	for b.Loop() {
		err = f.Event(ctx, "execution_start")
	}
	if _, ok := err.(looplab.InvalidEventError); !ok {
		b.Fatalf("looplab: want InvalidEventError, got %v", err)
	}
	sinkErr = err
}

func TestTransitionAllocatesNothing(t *testing.T) {
	cycle := startCycle(t)

	allocs := testing.AllocsPerRun(1000, func() {
		s := preparation.Initial
		for _, mv := range cycle {
			st, err := preparation.Transition(s, mv.event, mv.held)
			if err != nil {
				panic(err)
			}
			s = st.To()
		}
		sinkState = s
	})
	require.Zero(t, allocs, "Transition over the cycle")

	allocs = testing.AllocsPerRun(1000, func() {
		_, sinkErr = preparation.Transition(preparation.StateIdle, preparation.EventExecutionStart, 0)
	})
	require.Zero(t, allocs, "rejected Transition")
	require.ErrorIs(t, sinkErr, fsm.ErrRejected)

	m, h := newMachine(t, cycle)
	allocs = testing.AllocsPerRun(1000, func() {
		for _, mv := range cycle {
			if err := m.Fire(fsm.EventID(mv.event), mv.arg); err != nil {
				panic(err)
			}
		}
		if _, err := m.Restore(initial); err != nil {
			panic(err)
		}
		h.reset()
	})
	require.Zero(t, allocs, "Fire over the cycle, with Restore")

	allocs = testing.AllocsPerRun(1000, func() {
		sinkErr = m.Fire(fsm.EventID(preparation.EventExecutionStart), nil)
	})
	require.Zero(t, allocs, "rejected Fire")
	require.ErrorIs(t, sinkErr, fsm.ErrRejected)
}

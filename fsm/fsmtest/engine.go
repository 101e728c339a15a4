package fsmtest

import (
	"fmt"
	"math/rand/v2"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// SameTable checks that got, a generated package's Table, is exactly what
// m.Table() builds from the spec: the same declarations, the same
// candidates in every cell, and the same sharing (one candidate per rule,
// referenced from every cell it covers, and never one candidate for two
// rules).
func SameTable(t testing.TB, m *spec.Machine, got *fsm.Table) {
	t.Helper()
	want, err := m.Table()
	require.NoError(t, err)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, path.Base(want.Source), path.Base(got.Source), "source file")
	require.Equal(t, want.States, got.States)
	require.Equal(t, want.Events, got.Events)
	require.Equal(t, want.Guards, got.Guards)
	require.Equal(t, want.Actions, got.Actions)
	require.Equal(t, want.Messages, got.Messages)
	require.Equal(t, want.Timers, got.Timers)
	require.Equal(t, want.Initial, got.Initial)
	require.Len(t, got.Cells, len(want.Cells))
	pair := map[*fsm.Candidate]*fsm.Candidate{} // want → got
	back := map[*fsm.Candidate]*fsm.Candidate{} // got → want
	for s := fsm.StateID(1); int(s) <= len(want.States); s++ {
		for e := fsm.EventID(1); int(e) <= len(want.Events); e++ {
			i := want.CellIndex(s, e)
			where := want.StateName(s) + " × " + want.EventName(e)
			wc, gc := want.Cells[i].Cands, got.Cells[i].Cands
			require.Len(t, gc, len(wc), where)
			for j, w := range wc {
				g := gc[j]
				require.NotNil(t, g, where)
				require.Equal(t, *w, *g, "%s: candidate %d", where, j+1)
				if p, ok := pair[w]; ok {
					require.Same(t, p, g, "%s: a rule's cells share one candidate", where)
				}
				if p, ok := back[g]; ok {
					require.Same(t, p, w, "%s: one candidate serves two rules", where)
				}
				pair[w], back[g] = g, w
			}
		}
	}
}

// heldSet holds the guards of a GuardSet, for an Instance.
type heldSet fsm.GuardSet

func (h heldSet) Guard(g fsm.GuardID, _ *fsm.Firing[int]) bool { return fsm.GuardSet(h).Has(g) }

// runToCompletion is the interpreter's answer for one Instance.Step in
// role: the event, then every event the raises of role queue, in order,
// with the same guards holding, until the queue empties, an event is
// rejected or the queue overflows. It returns the final state, the steps
// taken and the effects of role (raises excluded), as the spec writes them.
func runToCompletion(m *spec.Machine, role fsm.Role, s *spec.State, e *spec.Event, held map[string]bool) (*spec.State, int, []string, error) {
	var effects []string
	queue := []*spec.Event{e}
	steps := 0
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		r := m.Select(s, ev, func(g *spec.Guard) bool { return held[g.Name] })
		steps++
		switch r.Kind {
		case spec.RuleReject:
			return s, steps, effects, fsm.ErrRejected
		case spec.RuleIgnore:
			continue
		}
		s = r.To
		for _, ef := range r.Effects {
			if !role.Performs(ef.Role) {
				continue
			}
			if ef.Kind == spec.EffectRaise {
				if len(queue) == fsm.QueueCapacity {
					return s, steps, effects, fsm.ErrQueueFull
				}
				queue = append(queue, ef.Raise)
				continue
			}
			effects = append(effects, ef.String())
		}
	}
	return s, steps, effects, nil
}

// InstanceWalk drives an fsm.Instance of tb (a generated Table) for each
// role and the spec interpreter side by side with seeded random events and
// guard values: states, the steps taken (raised events run to completion),
// the effects each role performs and the errors must agree. It restarts
// from the initial state now and then once a terminal state is reached.
func InstanceWalk(t *testing.T, m *spec.Machine, tb *fsm.Table, seed uint64, steps int) {
	t.Helper()
	for _, role := range []fsm.Role{fsm.RoleCore, fsm.RoleRuntime} {
		rng := rand.New(rand.NewPCG(seed, uint64(role)))
		in, err := fsm.NewInstance[int](tb, role)
		require.NoError(t, err)
		var out fsm.Outbox
		s := m.Initial()
		for i := 0; i < steps; i++ {
			if s.Terminal() && rng.IntN(4) == 0 {
				s = m.Initial()
				_, err := in.Restore(tb.Initial)
				require.NoError(t, err)
			}
			e := m.Events[rng.IntN(len(m.Events))]
			held := map[string]bool{}
			var set fsm.GuardSet
			for _, g := range m.Guards {
				if rng.IntN(2) == 0 {
					held[g.Name] = true
					set = set.With(fsm.GuardID(g.Index + 1))
				}
			}
			where := fmt.Sprintf("%s, seed %d step %d: (%s, %s) with guards %v", role, seed, i, s.Name, e.Name, heldList(m, held))
			to, n, effects, wantErr := runToCompletion(m, role, s, e, held)
			out.Reset()
			err := in.Step(fsm.EventID(e.Index+1), i, heldSet(set), &out)
			if wantErr != nil {
				require.ErrorIs(t, err, wantErr, where)
			} else {
				require.NoError(t, err, where)
			}
			require.Equal(t, to.Name, tb.StateName(in.State()), where)
			require.Len(t, out.Steps, n, where)
			var got []string
			for _, p := range out.Effects {
				got = append(got, tb.EffectString(p.Effect))
			}
			require.Equal(t, effects, got, where)
			s = to
		}
	}
}

// TableAdapter exposes a table's pure Transition to the spec comparisons
// (EveryCellAgainstSpec, RandomWalk, DifferentialLooplab) in spec names.
// Every generated machine's tests use it with their Table, so the
// name-to-ID plumbing is written once.
func TableAdapter(t testing.TB, tb *fsm.Table) Adapter {
	return Adapter{Transition: func(state, event string, held []string) Result {
		s, err := tb.ParseState(state)
		require.NoError(t, err)
		e, err := tb.ParseEvent(event)
		require.NoError(t, err)
		var gs fsm.GuardSet
		for _, name := range held {
			found := false
			for i, g := range tb.Guards {
				if g == name {
					gs, found = gs.With(fsm.GuardID(i+1)), true
				}
			}
			require.True(t, found, "guard %q is not declared", name)
		}
		step, err := tb.Transition(s, e, gs)
		res := Result{To: tb.StateName(step.To()), Guard: tb.GuardName(step.Guard()), Disposition: step.Disposition(), Err: err}
		for i := range step.Effects() {
			res.Effects = append(res.Effects, tb.EffectString(&step.Effects()[i]))
		}
		return res
	}}
}

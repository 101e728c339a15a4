package fsmtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	looplab "github.com/looplab/fsm"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// EveryCellAgainstSpec checks every (state, event) cell under every truth
// assignment of the guards that cell uses.
func EveryCellAgainstSpec(t *testing.T, m *spec.Machine, a Adapter) {
	t.Helper()
	for _, s := range m.States {
		for _, e := range m.Events {
			for _, held := range assignments(guardsIn(m, s, e)) {
				want, _ := Expect(m, s, e, held)
				got := a.Transition(s.Name, e.Name, heldList(m, held))
				requireSame(t, want, got, fmt.Sprintf("(%s, %s) with guards %v", s.Name, e.Name, heldList(m, held)))
			}
		}
	}
}

// RandomWalk drives the machine and the interpreter side by side with
// seeded random events and guard values, restarting from the initial state
// when a terminal state is reached. A failure names the seed and step, and
// the walk is reproducible from them.
func RandomWalk(t *testing.T, m *spec.Machine, a Adapter, seed uint64, steps int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x6167656e74776972))
	s := m.Initial()
	for i := 0; i < steps; i++ {
		if s.Terminal() && rng.IntN(4) == 0 {
			s = m.Initial()
		}
		e := m.Events[rng.IntN(len(m.Events))]
		held := map[string]bool{}
		for _, g := range m.Guards {
			if rng.IntN(2) == 0 {
				held[g.Name] = true
			}
		}
		want, r := Expect(m, s, e, held)
		got := a.Transition(s.Name, e.Name, heldList(m, held))
		requireSame(t, want, got, fmt.Sprintf("seed %d step %d: (%s, %s) with guards %v", seed, i, s.Name, e.Name, heldList(m, held)))
		if r != nil && r.Kind == spec.RuleGoto {
			s = r.To
		}
	}
}

// looplabName is the looplab event for one goto candidate: looplab allows one
// destination per (event, source), so guarded alternatives get their own name.
func looplabName(r *spec.Rule) string {
	if r.Guard == nil {
		return r.Event.Name
	}
	return r.Event.Name + "?" + r.Guard.Name
}

// LooplabEvents builds github.com/looplab/fsm event descriptions from every
// goto rule of the spec.
func LooplabEvents(m *spec.Machine) looplab.Events {
	var evs looplab.Events
	for _, r := range m.Rules {
		if r.Kind != spec.RuleGoto {
			continue
		}
		evs = append(evs, looplab.EventDesc{Name: looplabName(r), Src: []string{r.From.Name}, Dst: r.To.Name})
	}
	return evs
}

// DifferentialLooplab checks that looplab/fsm, built from the same table,
// agrees with the machine on every cell under every guard assignment: where
// the machine moves, looplab makes the same move; where the machine ignores
// or rejects, looplab has no transition the machine should have taken.
func DifferentialLooplab(t *testing.T, m *spec.Machine, a Adapter) {
	t.Helper()
	ctx := context.Background()
	events := LooplabEvents(m)
	for _, s := range m.States {
		for _, e := range m.Events {
			for _, held := range assignments(guardsIn(m, s, e)) {
				got := a.Transition(s.Name, e.Name, heldList(m, held))
				where := fmt.Sprintf("(%s, %s) with guards %v", s.Name, e.Name, heldList(m, held))
				lf := looplab.NewFSM(s.Name, events, nil)
				switch got.Disposition {
				case fsm.Moved, fsm.Stayed:
					name := e.Name
					if got.Guard != "" {
						name += "?" + got.Guard
					}
					err := lf.Event(ctx, name)
					if got.Disposition == fsm.Stayed {
						var nt looplab.NoTransitionError
						require.True(t, errors.As(err, &nt), "%s: looplab should report a self-transition, got %v", where, err)
					} else {
						require.NoError(t, err, "%s: looplab refused %q", where, name)
					}
					require.Equal(t, lf.Current(), got.To, "%s: looplab and the machine disagree on the target", where)
				default:
					// A guarded reject or ignore (a read-only handle refusing
					// execution_start) preempts the cell's unguarded transition,
					// which looplab, having no guards, still offers.
					if got.Guard == "" {
						require.False(t, lf.Can(e.Name), "%s: looplab has an unguarded transition the machine did not take", where)
					}
					for g := range held {
						if lf.Can(e.Name+"?"+g) && got.Guard == "" {
							t.Fatalf("%s: looplab can take guarded %q but the machine's fallback %s it", where, g, got.Disposition)
						}
					}
				}
			}
		}
	}
}

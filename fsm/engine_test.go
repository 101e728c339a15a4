package fsm_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// realTables loads every machine of the real spec and converts it.
func realTables(t testing.TB) (*spec.Model, map[string]*fsm.Table) {
	t.Helper()
	model, err := spec.LoadDir(os.DirFS("../spec"), ".", "spec/")
	require.NoError(t, err)
	tables := map[string]*fsm.Table{}
	for _, m := range model.Machines {
		tb, err := m.Table()
		require.NoError(t, err, m.Name)
		tables[m.Name] = tb
	}
	return model, tables
}

// guardsFrom holds the guards named in a GuardSet.
type guardsFrom fsm.GuardSet

func (g guardsFrom) Guard(id fsm.GuardID, _ *fsm.Firing[int]) bool { return fsm.GuardSet(g).Has(id) }

// stringGuards is guardsFrom for string arguments.
type stringGuards fsm.GuardSet

func (g stringGuards) Guard(id fsm.GuardID, _ *fsm.Firing[string]) bool {
	return fsm.GuardSet(g).Has(id)
}

// TestEngineMatchesInterpreter runs every cell of every real machine, under
// random guard assignments, through the table's Transition and through an
// Instance, and compares both with the spec interpreter.
func TestEngineMatchesInterpreter(t *testing.T) {
	model, tables := realTables(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range model.Machines {
		tb := tables[m.Name]
		for _, s := range m.States {
			for _, e := range m.Events {
				for range 4 {
					held := map[string]bool{}
					var set fsm.GuardSet
					for _, g := range m.Guards {
						if rng.IntN(2) == 0 {
							held[g.Name] = true
							set = set.With(fsm.GuardID(g.Index + 1))
						}
					}
					want := m.Select(s, e, func(g *spec.Guard) bool { return held[g.Name] })
					sid, eid := fsm.StateID(s.Index+1), fsm.EventID(e.Index+1)
					step, err := tb.Transition(sid, eid, set)
					where := m.Name + ": " + s.Name + "/" + e.Name
					require.NotNil(t, want, where)
					assert.Equal(t, want.Pos.Line, step.Line(), where)
					if want.Kind == spec.RuleReject {
						require.ErrorIs(t, err, fsm.ErrRejected, where)
						var te *fsm.TransitionError
						require.ErrorAs(t, err, &te)
						assert.Equal(t, s.Name, te.State)
						assert.Equal(t, e.Name, te.Event)
						assert.Equal(t, want.Reason, te.Reason)
					} else {
						require.NoError(t, err, where)
					}
					wantTo := s.Name
					if want.Kind == spec.RuleGoto {
						wantTo = want.To.Name
					}
					assert.Equal(t, wantTo, tb.StateName(step.To()), where)
					var names []string
					for i := range step.Effects() {
						names = append(names, tb.EffectString(&step.Effects()[i]))
					}
					var wantNames []string
					for _, ef := range want.Effects {
						wantNames = append(wantNames, ef.String())
					}
					assert.Equal(t, wantNames, names, where)

					raises := false
					for _, ef := range want.Effects {
						raises = raises || ef.Kind == spec.EffectRaise
					}
					for _, role := range m.Roles() {
						in, err := fsm.NewInstance[int](tb, role)
						require.NoError(t, err)
						_, err = in.Restore(sid)
						require.NoError(t, err)
						var out fsm.Outbox
						err = in.Step(eid, 7, guardsFrom(set), &out)
						if want.Kind == spec.RuleReject {
							require.ErrorIs(t, err, fsm.ErrRejected, where)
						} else {
							require.NoError(t, err, where)
						}
						if raises {
							// The raised events run to completion after
							// this step: only the first step is this cell's.
							require.NotEmpty(t, out.Steps, where)
							assert.Equal(t, wantTo, tb.StateName(out.Steps[0].To()), where)
							continue
						}
						assert.Equal(t, wantTo, tb.StateName(in.State()), where)
						require.Len(t, out.Steps, 1, where)
						var got, own []string
						for _, p := range out.Effects {
							got = append(got, tb.EffectString(p.Effect))
						}
						for _, ef := range want.Effects {
							if ef.Kind != spec.EffectRaise && role.Performs(ef.Role) {
								own = append(own, ef.String())
							}
						}
						assert.Equal(t, own, got, "%s as %s", where, role)
					}
				}
			}
		}
	}
}

// TestWildcardRulesShareOneCandidate checks that a rule covering many cells
// is one candidate in the table, not a copy per cell.
func TestWildcardRulesShareOneCandidate(t *testing.T) {
	_, tables := realTables(t)
	tb := tables["preparation"]
	abandoned, err := tb.ParseState("abandoned")
	require.NoError(t, err)
	first, _ := tb.Transition(abandoned, 1, 0)
	for e := fsm.EventID(2); int(e) <= len(tb.Events); e++ {
		s, _ := tb.Transition(abandoned, e, 0)
		if s.Line() == first.Line() {
			assert.Equal(t, first.Reason(), s.Reason())
		}
	}
	seen := map[*fsm.Candidate]bool{}
	total := 0
	for i := range tb.Cells {
		for _, c := range tb.Cells[i].Cands {
			total++
			seen[c] = true
		}
	}
	assert.Less(t, len(seen)*3, total, "candidates are shared between the cells of one rule")
}

// raiseTable is a hand-built table: ping raises pong, which moves on.
func raiseTable(t *testing.T, raises int) *fsm.Table {
	t.Helper()
	tb := &fsm.Table{
		Name:     "raiser",
		States:   []fsm.StateDecl{{Name: "a"}, {Name: "b"}, {Name: "c", Outcome: fsm.OutcomeSuccess}},
		Events:   []fsm.EventDecl{{Name: "ping", Kind: fsm.EventLocal, Role: fsm.RoleBoth}, {Name: "pong", Kind: fsm.EventMessage, Role: fsm.RoleRuntime, Message: 1}},
		Messages: []string{"pong"},
		Actions:  []string{"note"},
		Guards:   []string{"ok"},
		Initial:  1,
	}
	var effects []fsm.Effect
	for range raises {
		effects = append(effects, fsm.Effect{Kind: fsm.EffectRaise, Role: fsm.RoleBoth, Raise: 2})
	}
	effects = append(effects, fsm.Effect{Kind: fsm.EffectDo, Role: fsm.RoleCore, Action: 1})
	ping := &fsm.Candidate{Disp: fsm.Moved, To: 2, Effects: effects}
	pong := &fsm.Candidate{Disp: fsm.Moved, To: 3, Guard: 1, Effects: []fsm.Effect{{Kind: fsm.EffectSend, Role: fsm.RoleRuntime, Message: 1}}}
	stay := &fsm.Candidate{Disp: fsm.Ignored, Reason: "nothing to do"}
	refuse := &fsm.Candidate{Disp: fsm.Rejected, Reason: "not now"}
	tb.Cells = []fsm.Cell{
		{Cands: []*fsm.Candidate{ping}}, {Cands: []*fsm.Candidate{refuse}},
		{Cands: []*fsm.Candidate{stay}}, {Cands: []*fsm.Candidate{pong, refuse}},
		{Cands: []*fsm.Candidate{stay}}, {Cands: []*fsm.Candidate{stay}},
	}
	require.NoError(t, tb.Seal())
	return tb
}

func TestInstanceRaisesRunToCompletion(t *testing.T) {
	tb := raiseTable(t, 1)
	in, err := fsm.NewInstance[string](tb, fsm.RoleCore)
	require.NoError(t, err)
	var out fsm.Outbox
	require.NoError(t, in.Step(1, "arg", stringGuards(fsm.GuardSet(0).With(1)), &out))
	assert.Equal(t, "c", tb.StateName(in.State()))
	require.Len(t, out.Steps, 2)
	assert.Equal(t, fsm.EventID(2), out.Steps[1].Event())
	// Core performs "do note"; the raise is run by the engine, and the
	// Runtime-only send is not Core's.
	require.Len(t, out.Effects, 1)
	assert.Equal(t, "core: do note", tb.EffectString(out.Effects[0].Effect))
	assert.True(t, out.Moved())

	// The raised event is refused when its guard does not hold: the first
	// step stays applied, its effects stay in the outbox.
	in2, err := fsm.NewInstance[string](tb, fsm.RoleRuntime)
	require.NoError(t, err)
	out.Reset()
	err = in2.Step(1, "arg", nil, &out)
	require.ErrorIs(t, err, fsm.ErrRejected)
	assert.Equal(t, "b", tb.StateName(in2.State()))
	assert.Len(t, out.Steps, 2)
	assert.Empty(t, out.Effects, "Runtime performs nothing of ping")
}

func TestInstanceQueueOverflow(t *testing.T) {
	tb := raiseTable(t, fsm.QueueCapacity+1)
	in, err := fsm.NewInstance[int](tb, fsm.RoleCore)
	require.NoError(t, err)
	var out fsm.Outbox
	err = in.Step(1, 0, nil, &out)
	require.ErrorIs(t, err, fsm.ErrQueueFull)
	// Nothing stays queued for the next step.
	out.Reset()
	require.NoError(t, in.Step(2, 0, guardsFrom(fsm.GuardSet(0).With(1)), &out))
	assert.Len(t, out.Steps, 1)
}

func TestInstanceRefusesRoleAndInput(t *testing.T) {
	tb := raiseTable(t, 0)
	for _, r := range []fsm.Role{0, fsm.RoleBoth, 9} {
		_, err := fsm.NewInstance[int](tb, r)
		require.ErrorIs(t, err, fsm.ErrInvalid, "role %v", r)
	}
	in, err := fsm.NewInstance[int](tb, fsm.RoleCore)
	require.NoError(t, err)
	var out fsm.Outbox
	require.ErrorIs(t, in.Step(0, 0, nil, &out), fsm.ErrInvalid)
	require.ErrorIs(t, in.Step(99, 0, nil, &out), fsm.ErrInvalid)
	require.Error(t, in.Step(1, 0, nil, nil))
	_, err = in.Restore(0)
	require.ErrorIs(t, err, fsm.ErrInvalid)
	_, err = tb.Transition(4, 1, 0)
	require.ErrorIs(t, err, fsm.ErrInvalid)
}

func TestSealRejectsBrokenTables(t *testing.T) {
	cases := map[string]func(*fsm.Table){
		"no fallback": func(tb *fsm.Table) {
			tb.Cells[0].Cands = []*fsm.Candidate{{Disp: fsm.Moved, To: 2, Guard: 1}}
		},
		"empty cell": func(tb *fsm.Table) { tb.Cells[1].Cands = nil },
		"bad target": func(tb *fsm.Table) { tb.Cells[0].Cands = []*fsm.Candidate{{Disp: fsm.Moved, To: 9}} },
		"bad guard": func(tb *fsm.Table) {
			tb.Cells[0].Cands = []*fsm.Candidate{{Disp: fsm.Moved, To: 2, Guard: 5}, {Disp: fsm.Ignored}}
		},
		"too many guards": func(tb *fsm.Table) { tb.Guards = make([]string, 64) },
		"cell count":      func(tb *fsm.Table) { tb.Cells = tb.Cells[:3] },
		"bad initial":     func(tb *fsm.Table) { tb.Initial = 0 },
		"effect on ignore": func(tb *fsm.Table) {
			tb.Cells[2].Cands = []*fsm.Candidate{{Disp: fsm.Ignored, Effects: []fsm.Effect{{Kind: fsm.EffectDo, Role: fsm.RoleBoth, Action: 1}}}}
		},
		"effect without role": func(tb *fsm.Table) {
			tb.Cells[0].Cands = []*fsm.Candidate{{Disp: fsm.Moved, To: 2, Effects: []fsm.Effect{{Kind: fsm.EffectDo, Action: 1}}}}
		},
		"unknown message": func(tb *fsm.Table) { tb.Events[1].Message = 4 },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			tb := &fsm.Table{
				Name:     "broken",
				States:   []fsm.StateDecl{{Name: "a"}, {Name: "b"}, {Name: "c"}},
				Events:   []fsm.EventDecl{{Name: "x", Kind: fsm.EventLocal, Role: fsm.RoleBoth}, {Name: "y", Kind: fsm.EventMessage, Role: fsm.RoleCore, Message: 1}},
				Messages: []string{"y"},
				Actions:  []string{"act"},
				Guards:   []string{"g"},
				Initial:  1,
			}
			ok := &fsm.Candidate{Disp: fsm.Ignored}
			for range 6 {
				tb.Cells = append(tb.Cells, fsm.Cell{Cands: []*fsm.Candidate{ok}})
			}
			breakIt(tb)
			err := tb.Seal()
			var te *fsm.TableError
			require.True(t, errors.As(err, &te), "got %v", err)
			_, err = fsm.NewInstance[int](tb, fsm.RoleCore)
			require.Error(t, err)
		})
	}
}

func TestMachineFirePerformsAfterTheStep(t *testing.T) {
	tb := raiseTable(t, 1)
	rec := &recorder{}
	m, err := fsm.NewMachine[string](tb, fsm.RoleRuntime, rec, nil)
	require.NoError(t, err)
	rec.holds = true
	require.NoError(t, m.Fire(1, "frame"))
	assert.Equal(t, []string{"perform send pong a->b? no: from b to c with frame"}, rec.log)

	rec2 := &recorder{fail: true, holds: true}
	m2, err := fsm.NewMachine[string](tb, fsm.RoleRuntime, rec2, nil)
	require.NoError(t, err)
	err = m2.Fire(1, "frame")
	require.ErrorIs(t, err, fsm.ErrEffect)
	assert.Contains(t, err.Error(), "runtime: send pong")
	assert.Equal(t, "c", tb.StateName(m2.State()), "the state moved before the effect failed")

	_, err = fsm.NewMachine[string](tb, 0, rec, nil)
	require.ErrorIs(t, err, fsm.ErrInvalid)
	_, err = fsm.NewMachine[string](tb, fsm.RoleCore, nil, nil)
	require.Error(t, err)
}

type recorder struct {
	log   []string
	holds bool
	fail  bool
}

func (r *recorder) Guard(_ fsm.GuardID, _ *fsm.Firing[string]) bool { return r.holds }

func (r *recorder) Perform(ef *fsm.Effect, f *fsm.Firing[string]) error {
	if r.fail {
		return errors.New("boom")
	}
	r.log = append(r.log, "perform "+f.Table.EffectString(ef)[len("runtime: "):]+" a->b? no: from "+f.Table.StateName(f.From)+" to "+f.Table.StateName(f.To)+" with "+f.Arg)
	return nil
}

// heldBinding holds the guards of a GuardSet and performs every effect by
// doing nothing.
type heldBinding struct{ held fsm.GuardSet }

func (b heldBinding) Guard(g fsm.GuardID, _ *fsm.Firing[int]) bool { return b.held.Has(g) }

func (heldBinding) Perform(*fsm.Effect, *fsm.Firing[int]) error { return nil }

func (heldBinding) StartTimer(*fsm.Firing[int], fsm.TimerID) error { return nil }

func (heldBinding) StopTimer(*fsm.Firing[int], fsm.TimerID) error { return nil }

// TestMachineFireSerialisesCallers fires from several goroutines at once:
// every step the observer sees must start where the previous one ended,
// which holds only if Fire serialises its callers.
func TestMachineFireSerialisesCallers(t *testing.T) {
	_, tables := realTables(t)
	tb := tables["preparation"]
	for round := range 10 {
		b := heldBinding{held: fsm.GuardSet(round) << 1}
		m, err := fsm.NewMachine[int](tb, fsm.RoleRuntime, b, b)
		require.NoError(t, err)
		var steps []fsm.Step
		m.Observe(func(s fsm.Step) { steps = append(steps, s) })
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for i := range 50 {
					_ = m.Fire(fsm.EventID(1+rng.IntN(len(tb.Events))), i)
				}
			})
		}
		wg.Wait()
		require.Len(t, steps, 200)
		at := tb.Initial
		for _, s := range steps {
			require.Equal(t, at, s.From())
			at = s.To()
		}
		require.Equal(t, at, m.State())
	}
}

func TestHookTable(t *testing.T) {
	tb := raiseTable(t, 0)
	var calls []string
	h := &fsm.HookTable[string]{
		Guards: []func(*fsm.Firing[string]) bool{1: func(f *fsm.Firing[string]) bool {
			calls = append(calls, "guard "+f.Arg)
			return true
		}},
		Sends: []func(*fsm.Firing[string]) error{1: func(f *fsm.Firing[string]) error {
			calls = append(calls, "send "+f.Arg)
			return nil
		}},
	}
	f := &fsm.Firing[string]{Table: tb, Arg: "x"}
	assert.True(t, h.Guard(1, f))
	assert.False(t, h.Guard(0, f), "no entry")
	assert.False(t, h.Guard(9, f), "out of range")
	require.NoError(t, h.Perform(&fsm.Effect{Kind: fsm.EffectSend, Role: fsm.RoleRuntime, Message: 1}, f))
	assert.Equal(t, []string{"guard x", "send x"}, calls)

	err := h.Perform(&fsm.Effect{Kind: fsm.EffectDo, Role: fsm.RoleCore, Action: 1}, f)
	var te *fsm.TableError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, err.Error(), "no hook for core: do note")

	// Machine.Fire reports the missing hook as the effect that failed.
	m, err := fsm.NewMachine[string](tb, fsm.RoleCore, h, nil)
	require.NoError(t, err)
	err = m.Fire(1, "y")
	require.ErrorIs(t, err, fsm.ErrEffect)
	assert.Contains(t, err.Error(), "no hook for core: do note")
}

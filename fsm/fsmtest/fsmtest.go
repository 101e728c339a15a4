// Package fsmtest checks a generated machine against its spec with two
// independent implementations: the spec interpreter (spec.Machine.Select)
// and github.com/looplab/fsm built from the same table. Generated tests call
// it through an Adapter, which speaks in spec names so this package needs no
// knowledge of any one machine's Go types.
package fsmtest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// Result is one step of the machine under test, in spec names.
type Result struct {
	To          string
	Guard       string // "" for the fallback
	Disposition fsm.Disposition
	Effects     []string // Effect.String() of each effect
	Err         error
}

// Adapter exposes a generated machine's pure Transition function by name.
type Adapter struct {
	// Transition runs the generated pure function for state and event with
	// exactly the named guards holding.
	Transition func(state, event string, held []string) Result
}

// LoadMachine loads one spec file (a path relative to the test's package
// directory) and returns its machine.
func LoadMachine(t testing.TB, file string) *spec.Machine {
	t.Helper()
	src, err := os.ReadFile(file)
	require.NoError(t, err, "read the spec the machine was generated from")
	model, err := spec.Load(map[string][]byte{filepath.ToSlash(file): src})
	require.NoError(t, err)
	require.Len(t, model.Machines, 1)
	return model.Machines[0]
}

// Expect is the spec interpreter's answer for one cell.
func Expect(m *spec.Machine, s *spec.State, e *spec.Event, held map[string]bool) (Result, *spec.Rule) {
	r := m.Select(s, e, func(g *spec.Guard) bool { return held[g.Name] })
	if r == nil {
		return Result{To: s.Name, Disposition: fsm.Rejected}, nil
	}
	res := Result{To: s.Name}
	if r.Guard != nil {
		res.Guard = r.Guard.Name
	}
	switch {
	case r.Kind == spec.RuleIgnore:
		res.Disposition = fsm.Ignored
	case r.Kind == spec.RuleReject:
		res.Disposition = fsm.Rejected
	case r.Internal():
		res.Disposition = fsm.Stayed
	default:
		res.Disposition, res.To = fsm.Moved, r.To.Name
	}
	if r.Kind == spec.RuleGoto {
		for _, ef := range r.Effects {
			res.Effects = append(res.Effects, ef.String())
		}
	}
	return res, r
}

// requireSame compares the machine's answer with the interpreter's.
func requireSame(t testing.TB, want, got Result, where string) {
	t.Helper()
	require.Equal(t, want.Disposition, got.Disposition, "%s: disposition", where)
	require.Equal(t, want.To, got.To, "%s: target state", where)
	require.Equal(t, want.Guard, got.Guard, "%s: selecting guard", where)
	require.Equal(t, want.Effects, got.Effects, "%s: effects", where)
	if want.Disposition == fsm.Rejected {
		require.ErrorIs(t, got.Err, fsm.ErrRejected, where)
		var te *fsm.TransitionError
		require.True(t, errors.As(got.Err, &te), where)
	} else {
		require.NoError(t, got.Err, where)
	}
}

// guardsIn lists the distinct guards used by the candidates of one cell.
func guardsIn(m *spec.Machine, s *spec.State, e *spec.Event) []string {
	var out []string
	for _, r := range m.Cell(s, e) {
		if r.Guard != nil {
			out = append(out, r.Guard.Name)
		}
	}
	return out
}

// assignments enumerates every truth assignment of the named guards.
func assignments(guards []string) []map[string]bool {
	out := make([]map[string]bool, 0, 1<<len(guards))
	for mask := 0; mask < 1<<len(guards); mask++ {
		held := map[string]bool{}
		for i, g := range guards {
			if mask&(1<<i) != 0 {
				held[g] = true
			}
		}
		out = append(out, held)
	}
	return out
}

func heldList(m *spec.Machine, held map[string]bool) []string {
	var out []string
	for _, g := range m.Guards {
		if held[g.Name] {
			out = append(out, g.Name)
		}
	}
	return out
}

package fsm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
)

// doorRules is a small table in the compact form, covering each way a rule
// expands: a list of states and events, a guard before its fallback, a goto
// into one of its own sources, to: same, and a catch-all that only fills
// the cells nothing else declared.
func doorRules() *fsm.Table {
	return &fsm.Table{
		Name:    "door",
		States:  []fsm.StateDecl{{Name: "closed"}, {Name: "open"}, {Name: "gone", Outcome: fsm.OutcomeSuccess}},
		Events:  []fsm.EventDecl{{Name: "push", Kind: fsm.EventLocal, Role: fsm.RoleBoth}, {Name: "kick", Kind: fsm.EventLocal, Role: fsm.RoleBoth}, {Name: "oil", Kind: fsm.EventLocal, Role: fsm.RoleBoth}},
		Guards:  []string{"strong"},
		Actions: []string{"creak"},
		Initial: 1,
		Rules: []fsm.Rule{
			{ID: "closed_push_if_strong", From: "closed", On: "push", Guard: "strong", To: "open", Effects: "do creak, raise oil"},
			{ID: "closed_push", From: "closed", On: "push", Ignore: "too weak"},
			{ID: "closed_kick", From: "closed, open", On: "kick", To: "open", Effects: "core: do creak"},
			{ID: "closed_oil", From: "closed, open", On: "oil", To: "same"},
			{ID: "closed_any", From: "closed, open, gone", On: "*", Reject: "no"},
		},
		Lines: []int{10, 14, 17, 20, 23},
	}
}

func TestExpandRules(t *testing.T) {
	tb := doorRules()
	require.NoError(t, tb.Seal())
	cands := func(s fsm.StateID, e fsm.EventID) []*fsm.Candidate { return tb.Cells[tb.CellIndex(s, e)].Cands }
	const closed, open, gone = 1, 2, 3
	const push, kick, oil = 1, 2, 3

	push1 := cands(closed, push)
	require.Len(t, push1, 2, "the guarded candidate first, then its fallback")
	require.Equal(t, fsm.Candidate{Rule: "closed_push_if_strong", Guard: 1, Disp: fsm.Moved, To: open, Line: 10, Effects: []fsm.Effect{
		{Kind: fsm.EffectDo, Role: fsm.RoleBoth, Action: 1}, {Kind: fsm.EffectRaise, Role: fsm.RoleBoth, Raise: oil}}}, *push1[0])
	require.Equal(t, fsm.Candidate{Rule: "closed_push", Disp: fsm.Ignored, Reason: "too weak", Line: 14}, *push1[1])

	moved, stayed := cands(closed, kick)[0], cands(open, kick)[0]
	require.Equal(t, fsm.Moved, moved.Disp, "a goto moves from its other sources")
	require.Equal(t, fsm.Stayed, stayed.Disp, "and stays in its target")
	require.Equal(t, fsm.RoleCore, moved.Effects[0].Role)
	require.Same(t, cands(closed, oil)[0], cands(open, oil)[0], "to: same is one internal candidate")
	require.Equal(t, fsm.Stayed, cands(open, oil)[0].Disp)

	require.Equal(t, "closed_any", cands(open, push)[0].Rule, "the catch-all fills what nothing declared")
	for e := fsm.EventID(1); e <= 3; e++ {
		require.Same(t, cands(open, push)[0], cands(gone, e)[0], "one shared candidate")
	}
	st, err := tb.Transition(open, push, 0)
	require.ErrorIs(t, err, fsm.ErrRejected)
	require.Equal(t, "closed_any", st.Rule())
	require.Equal(t, 23, st.Line())
}

func TestExpandRulesRefusesBrokenRules(t *testing.T) {
	for name, breakIt := range map[string]func(*fsm.Table){
		"unknown state":     func(tb *fsm.Table) { tb.Rules[0].From = "closed, ajar" },
		"unknown target":    func(tb *fsm.Table) { tb.Rules[0].To = "ajar" },
		"unknown event":     func(tb *fsm.Table) { tb.Rules[2].On = "kick, shove" },
		"unknown guard":     func(tb *fsm.Table) { tb.Rules[0].Guard = "weak" },
		"unreadable effect": func(tb *fsm.Table) { tb.Rules[0].Effects = "do dance" },
		"two outcomes":      func(tb *fsm.Table) { tb.Rules[1].Reject = "also" },
		"no outcome":        func(tb *fsm.Table) { tb.Rules[1].Ignore = "" },
		"lines":             func(tb *fsm.Table) { tb.Lines = tb.Lines[1:] },
		"a cell left empty": func(tb *fsm.Table) { tb.Rules = tb.Rules[:4] },
	} {
		t.Run(name, func(t *testing.T) {
			tb := doorRules()
			breakIt(tb)
			var te *fsm.TableError
			require.ErrorAs(t, tb.Seal(), &te)
		})
	}
}

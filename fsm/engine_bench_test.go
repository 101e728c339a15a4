package fsm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/run"
)

// engineCycle is the preparation happy path on a table loaded from the spec
// at run time: idle → requested → preparing → ready → starting → started.
type engineMove struct {
	event fsm.EventID
	held  fsm.GuardSet
	arg   *frame
}

func engineCycle(tb testing.TB) (*fsm.Table, []engineMove) {
	tb.Helper()
	_, tables := realTables(tb)
	t := tables["preparation"]
	ev := func(name string) fsm.EventID {
		id, err := t.ParseEvent(name)
		require.NoError(tb, err)
		return id
	}
	var newer fsm.GuardSet
	for i, g := range t.Guards {
		if g == "newer_revision" {
			newer = newer.With(fsm.GuardID(i + 1))
		}
	}
	return t, []engineMove{
		{ev("execution_prepare"), 0, &frame{Fingerprint: 0xfeed}},
		{ev("status_preparing"), newer, &frame{Rev: 1}},
		{ev("status_ready"), newer, &frame{Rev: 2}},
		{ev("execution_start"), 0, &frame{Fingerprint: 0xfeed}},
		{ev("status_started"), newer, &frame{Rev: 3}},
	}
}

// revisionGuards holds newer_revision when the frame's revision is newer.
type revisionGuards struct{ applied uint64 }

func (g *revisionGuards) Guard(_ fsm.GuardID, f *fsm.Firing[*frame]) bool {
	if f.Arg.Rev > g.applied {
		g.applied = f.Arg.Rev
		return true
	}
	return false
}

// BenchmarkEngineTransition: the generic engine's pure Transition over a
// spec-loaded table, one cycle step per op.
func BenchmarkEngineTransition(b *testing.B) {
	t, cycle := engineCycle(b)
	b.ReportAllocs()
	s, i := t.Initial, 0
	for b.Loop() {
		st, err := t.Transition(s, cycle[i].event, cycle[i].held)
		if err != nil {
			b.Fatal(err)
		}
		s = st.To()
		if i++; i == len(cycle) {
			i, s = 0, t.Initial
		}
	}
}

// BenchmarkEngineStep: Instance.Step with guards and an outbox the loop
// drains, one cycle step per op.
func BenchmarkEngineStep(b *testing.B) {
	t, cycle := engineCycle(b)
	in, err := fsm.NewInstance[*frame](t, fsm.RoleRuntime)
	require.NoError(b, err)
	g := &revisionGuards{}
	var out fsm.Outbox
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		out.Reset()
		if err := in.Step(cycle[i].event, cycle[i].arg, g, &out); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(cycle) {
			i, g.applied = 0, 0
			if _, err := in.Restore(t.Initial); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkExpandRun is the start-up price of the compact tables: sealing
// a fresh copy of the largest generated table (run) from its rules, which
// every process pays once per machine when the generated package starts.
func BenchmarkExpandRun(b *testing.B) {
	src := run.Table
	for b.Loop() {
		t := &fsm.Table{Name: src.Name, Source: src.Source, States: src.States, Events: src.Events, Guards: src.Guards,
			Actions: src.Actions, Messages: src.Messages, Timers: src.Timers, Initial: src.Initial, Rules: src.Rules, Lines: src.Lines}
		if err := t.Seal(); err != nil {
			b.Fatal(err)
		}
	}
}

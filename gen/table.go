package gen

import (
	"fmt"
	"sort"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// tableDecl writes `var Table = fsm.MustSeal(&fsm.Table{…})`: a literal of
// exactly the table spec.Machine.Table builds from the spec (the generated
// tests assert it), with every ID spelled as this package's enum constant.
// Each candidate is one package variable, named after its spec line and
// shared by every cell its rule covers, as in the spec's table.
func tableDecl(f *jen.File, m *spec.Machine, t *fsm.Table) {
	ids := idNames{t}
	names := candidateNames(t)

	// Candidates in order of their spec line, so the file reads like the spec.
	var cands []*fsm.Candidate
	for c := range names {
		cands = append(cands, c)
	}
	sort.Slice(cands, func(i, j int) bool { return names[cands[i]] < names[cands[j]] })
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Line < cands[j].Line })
	var defs []jen.Code
	for _, c := range cands {
		defs = append(defs, jen.Id(names[c]).Op("=").Op("&").Qual(fsmPkg, "Candidate").Add(ids.candidate(c)))
	}
	comment(f, "The candidates of Table, one per rule of "+m.Pos.File+" and shared by every cell the "+
		"rule covers (a rule that lists its own target among its sources is two: a move from the "+
		"others and an internal transition in the target).")
	f.Var().Defs(defs...)

	var states, events, timers []jen.Code
	for _, s := range t.States {
		var outcome, timers jen.Code
		if s.Outcome != fsm.OutcomeNone {
			outcome = jen.Qual(fsmPkg, "Outcome"+camel(s.Outcome.String()))
		}
		if len(s.Timers) > 0 {
			var ts []jen.Code
			for _, tm := range s.Timers {
				ts = append(ts, ids.timer(tm))
			}
			timers = jen.Index().Qual(fsmPkg, "TimerID").Values(ts...)
		}
		states = append(states, jen.Line().Add(keyed(false, field{"Name", jen.Lit(s.Name)}, field{"Outcome", outcome}, field{"Timers", timers})))
	}
	for _, e := range t.Events {
		var msg, tm, failed, dispatch jen.Code
		if e.Message != 0 {
			msg = ids.message(e.Message)
		}
		if e.FailedSend != 0 {
			failed = ids.event(e.FailedSend)
		}
		if e.Dispatch {
			dispatch = jen.True()
		}
		if e.Timer != 0 {
			tm = ids.timer(e.Timer)
		}
		events = append(events, jen.Line().Add(keyed(false,
			field{"Name", jen.Lit(e.Name)},
			field{"Kind", jen.Qual(fsmPkg, "Event"+camel(e.Kind.String()))},
			field{"Role", jen.Qual(fsmPkg, "Role"+camel(e.Role.String()))},
			field{"Message", msg}, field{"Timer", tm}, field{"FailedSend", failed}, field{"Dispatch", dispatch})))
	}
	for _, tm := range t.Timers {
		timers = append(timers, jen.Line().Add(keyed(false,
			field{"Name", jen.Lit(tm.Name)}, field{"Duration", durationCode(tm.Duration)}, field{"Event", ids.event(tm.Event)},
			field{"Policy", policyCode(tm.Policy)})))
	}

	var cells []jen.Code
	for si := range t.States {
		cells = append(cells, jen.Comment(t.States[si].Name))
		for ei := range t.Events {
			cell := t.Cells[t.CellIndex(fsm.StateID(si+1), fsm.EventID(ei+1))]
			var refs []jen.Code
			for _, c := range cell.Cands {
				refs = append(refs, jen.Id(names[c]))
			}
			cells = append(cells, jen.Values(jen.Id("Cands").Op(":").Index().Op("*").Qual(fsmPkg, "Candidate").Values(refs...)).
				Op(",").Comment(t.States[si].Name+" × "+t.Events[ei].Name))
		}
	}

	list := func(xs []string) jen.Code {
		if len(xs) == 0 {
			return nil
		}
		return jen.Index().String().Values(quoteAll(xs)...)
	}
	var timerDecls jen.Code
	if len(timers) > 0 {
		timerDecls = jen.Index().Qual(fsmPkg, "TimerDecl").Values(append(timers, jen.Line())...)
	}
	fields := keyed(true,
		field{"Name", jen.Id("Name")},
		field{"Source", jen.Lit(t.Source)},
		field{"States", jen.Index().Qual(fsmPkg, "StateDecl").Values(append(states, jen.Line())...)},
		field{"Events", jen.Index().Qual(fsmPkg, "EventDecl").Values(append(events, jen.Line())...)},
		field{"Guards", list(t.Guards)},
		field{"Actions", list(t.Actions)},
		field{"Messages", list(t.Messages)},
		field{"Timers", timerDecls},
		field{"Initial", ids.state(t.Initial)},
		field{"Cells", jen.Index().Qual(fsmPkg, "Cell").Custom(jen.Options{Open: "{", Close: "}", Multi: true}, cells...)},
	)
	comment(f, "Table is the "+m.Name+" machine as the engine runs it, sealed: every (state, event) "+
		"cell lists its candidates in the order they are tried, the unguarded fallback last. It is "+
		"exactly what spec.Machine.Table builds from "+m.Pos.File+". Treat it as read-only.")
	f.Var().Id("Table").Op("=").Qual(fsmPkg, "MustSeal").Call(jen.Op("&").Qual(fsmPkg, "Table").Add(fields))
}

// candidateNames names every distinct candidate of t after its spec line:
// rule55, or rule55Moved and rule55Stayed when one rule is two candidates.
func candidateNames(t *fsm.Table) map[*fsm.Candidate]string {
	byLine := map[int][]*fsm.Candidate{}
	seen := map[*fsm.Candidate]bool{}
	for i := range t.Cells {
		for _, c := range t.Cells[i].Cands {
			if !seen[c] {
				seen[c] = true
				byLine[c.Line] = append(byLine[c.Line], c)
			}
		}
	}
	names := map[*fsm.Candidate]string{}
	for line, cs := range byLine {
		base := fmt.Sprintf("rule%d", line)
		if len(cs) == 1 {
			names[cs[0]] = base
			continue
		}
		count := map[fsm.Disposition]int{}
		for _, c := range cs {
			count[c.Disp]++
			name := base + camel(c.Disp.String())
			if n := count[c.Disp]; n > 1 {
				// Two rules on one line (YAML flow style): number them.
				name += fmt.Sprint(n)
			}
			names[c] = name
		}
	}
	return names
}

// idNames spells the IDs of one table as the generated enum constants.
type idNames struct{ t *fsm.Table }

func (n idNames) state(id fsm.StateID) jen.Code {
	return jen.Qual(fsmPkg, "StateID").Call(jen.Id(stateConst(n.t.States[id-1].Name)))
}

func (n idNames) event(id fsm.EventID) jen.Code {
	return jen.Qual(fsmPkg, "EventID").Call(jen.Id(eventConst(n.t.Events[id-1].Name)))
}

func (n idNames) timer(id fsm.TimerID) jen.Code {
	return jen.Qual(fsmPkg, "TimerID").Call(jen.Id(timerConst(n.t.Timers[id-1].Name)))
}

func (n idNames) message(id fsm.MessageID) jen.Code {
	return jen.Qual(fsmPkg, "MessageID").Call(jen.Id(messageConst(n.t.Messages[id-1])))
}

func (n idNames) candidate(c *fsm.Candidate) jen.Code {
	var guard, to, reason, effects jen.Code
	if c.Guard != 0 {
		guard = jen.Qual(fsmPkg, "GuardID").Call(jen.Id(guardConst(n.t.Guards[c.Guard-1])))
	}
	if c.To != 0 {
		to = n.state(c.To)
	}
	if c.Reason != "" {
		reason = jen.Lit(c.Reason)
	}
	if len(c.Effects) > 0 {
		var efs []jen.Code
		for _, ef := range c.Effects {
			efs = append(efs, jen.Line().Add(n.effect(ef)))
		}
		effects = jen.Index().Qual(fsmPkg, "Effect").Values(append(efs, jen.Line())...)
	}
	return keyed(false,
		field{"Guard", guard},
		field{"Disp", jen.Qual(fsmPkg, camel(c.Disp.String()))},
		field{"To", to},
		field{"Reason", reason},
		field{"Line", jen.Lit(c.Line)},
		field{"Effects", effects},
	)
}

func (n idNames) effect(ef fsm.Effect) jen.Code {
	var arg field
	switch ef.Kind {
	case fsm.EffectSend:
		arg = field{"Message", n.message(ef.Message)}
	case fsm.EffectStart, fsm.EffectStop:
		arg = field{"Timer", n.timer(ef.Timer)}
	case fsm.EffectDo:
		arg = field{"Action", jen.Qual(fsmPkg, "ActionID").Call(jen.Id(actionConst(n.t.Actions[ef.Action-1])))}
	case fsm.EffectRaise:
		arg = field{"Raise", n.event(ef.Raise)}
	}
	return keyed(false,
		field{"Kind", jen.Qual(fsmPkg, "Effect"+camel(ef.Kind.String()))},
		field{"Role", jen.Qual(fsmPkg, "Role"+camel(ef.Role.String()))},
		arg,
	)
}

// durationCode writes d the way a person would: 5 * time.Minute.
func durationCode(d time.Duration) jen.Code {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}} {
		if d%u.unit == 0 {
			return jen.Lit(int(d/u.unit)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Lit(int(d)).Op("*").Qual("time", "Nanosecond")
}

func quoteAll(xs []string) []jen.Code {
	out := make([]jen.Code, len(xs))
	for i, x := range xs {
		out[i] = jen.Lit(x)
	}
	return out
}

// field is one key of a keyed composite literal; jen.Dict would sort the
// keys, and a table reads better in declaration order.
type field struct {
	key string
	val jen.Code
}

// keyed writes {k: v, …} in the given order, one field per line if multi.
func keyed(multi bool, fs ...field) *jen.Statement {
	var items []jen.Code
	for _, f := range fs {
		if f.val == nil {
			continue
		}
		it := jen.Id(f.key).Op(":").Add(f.val)
		if multi {
			it = jen.Line().Add(it)
		}
		items = append(items, it)
	}
	if multi {
		items = append(items, jen.Line())
	}
	return jen.Values(items...)
}

func policyCode(policy bool) jen.Code {
	if !policy {
		return nil
	}
	return jen.True()
}

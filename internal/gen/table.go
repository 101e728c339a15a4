package gen

import (
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// tableDecl writes `var Table = fsm.MustSeal(&fsm.Table{…})`: the
// declarations, and the rules in the compact form of fsm.Rule (one line per
// spec rule, named by its stable ID) that Seal expands into exactly the
// cells spec.Machine.Table builds (the generated tests assert it; so does
// the generator, before it writes anything).
func tableDecl(f *jen.File, m *spec.Machine, t *fsm.Table) error {
	ids := idNames{t}
	rules, lines, err := compactRules(m, t)
	if err != nil {
		return err
	}
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
		field{"Rules", jen.Index().Qual(fsmPkg, "Rule").Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, ruleLits(rules)...)},
		field{"Lines", jen.Index().Int().Values(intLits(lines)...)},
	)
	comment(f, "Table is the "+m.Name+" machine as the engine runs it: "+m.Pos.File+"'s declarations and "+
		"rules, one line per rule by stable ID (spec lines in Lines), that fsm.MustSeal expands at start-up.")
	f.Var().Id("Table").Op("=").Qual(fsmPkg, "MustSeal").Call(jen.Op("&").Qual(fsmPkg, "Table").Add(fields))
	return nil
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

func intLits(xs []int) []jen.Code {
	out := make([]jen.Code, len(xs))
	for i, x := range xs {
		out[i] = jen.Lit(x)
	}
	return out
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

package gen

import (
	"fmt"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// machineFile renders fsm/<machine>/<machine>.go: the enums, the static cell
// table, the pure Transition function and the Machine that runs hooks.
func machineFile(m *spec.Machine) *jen.File {
	f := jen.NewFile(m.Name)
	f.HeaderComment(header(m))
	for _, line := range strings.Split(packageDoc(m), "\n") {
		f.PackageComment(line)
	}
	f.ImportName(fsmPkg, "fsm")

	f.Comment("Name is the machine's name in the spec.")
	f.Const().Id("Name").Op("=").Lit(m.Name)
	f.Comment("Initial is the state every new instance starts in.")
	f.Const().Id("Initial").Op("=").Id(stateConst(m.Initial()))
	f.Const().Defs(
		jen.Id("numStates").Op("=").Lit(len(m.States)),
		jen.Id("numEvents").Op("=").Lit(len(m.Events)),
	)

	stateDecls(f, m)
	eventDecls(f, m)
	timerDecls(f, m)
	enum(f, "Guard", "Guard names a predicate the peer evaluates through its Hooks.", guardItems(m), true)
	f.Comment("GuardSet is the set of guards that hold, for the pure Transition function.")
	f.Type().Id("GuardSet").Uint64()
	f.Comment("With returns s with g added.")
	f.Func().Params(jen.Id("s").Id("GuardSet")).Id("With").Params(jen.Id("g").Id("Guard")).Id("GuardSet").Block(
		jen.If(jen.Op("!").Id("g").Dot("Valid").Call()).Block(jen.Return(jen.Id("s"))),
		jen.Return(jen.Id("s").Op("|").Lit(1).Op("<<").Parens(jen.Id("g").Op("-").Lit(1))),
	)
	f.Comment("Has reports whether g is in s.")
	f.Func().Params(jen.Id("s").Id("GuardSet")).Id("Has").Params(jen.Id("g").Id("Guard")).Bool().Block(
		jen.Return(jen.Id("g").Dot("Valid").Call().Op("&&").Id("s").Op("&").Parens(jen.Lit(1).Op("<<").Parens(jen.Id("g").Op("-").Lit(1))).Op("!=").Lit(0)),
	)
	enum(f, "Action", "Action names a local effect the peer performs through its Hooks.", actionItems(m), true)
	enum(f, "Message", "Message is a wire type this machine asks a peer to send.", messageItems(m), false)

	effectDecls(f)
	stepDecls(f)
	tableDecl(f, m)
	transitionFunc(f)
	hooksDecl(f, m)
	machineDecls(f, m)
	return f
}

// doc writes a multi-line comment as // lines; jennifer would otherwise
// render it as a /* */ block.
func doc(f *jen.File, text string) {
	for _, line := range strings.Split(text, "\n") {
		f.Comment(line)
	}
}

func packageDoc(m *spec.Machine) string {
	paras := []string{
		fmt.Sprintf("Package %s is the generated %s machine.", m.Name, m.Name),
		m.Doc,
		"One instance per " + m.Scope + ".",
		"The table and every hook name come from " + m.Pos.File + "; see docs/machines/" + m.Name + ".md for the diagram and the state × event matrix.",
	}
	for i, p := range paras {
		paras[i] = wrap(p, 76)
	}
	return strings.Join(paras, "\n\n")
}

// wrap folds text into lines of at most width bytes where it can.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

func stateDecls(f *jen.File, m *spec.Machine) {
	enum(f, "State", "State is a state of the "+m.Name+" machine.", stateItems(m), true)
	var outcomes, timers []jen.Code
	for _, s := range m.States {
		outcomes = append(outcomes, jen.Qual(fsmPkg, outcomeConst(s.Outcome)))
		if len(s.Timers) == 0 {
			timers = append(timers, jen.Nil())
			continue
		}
		var ts []jen.Code
		for _, t := range s.Timers {
			ts = append(ts, jen.Id(timerConst(t)))
		}
		timers = append(timers, jen.Index().Id("Timer").Values(ts...))
	}
	byteTable(f, "stateOutcomes", jen.Qual(fsmPkg, "Outcome"), outcomes)
	f.Var().Id("stateTimers").Op("=").Index(jen.Op("...")).Index().Id("Timer").Values(append([]jen.Code{jen.Nil()}, timers...)...)

	f.Comment("Outcome classifies a terminal state; it is fsm.OutcomeNone for the others.")
	f.Func().Params(jen.Id("s").Id("State")).Id("Outcome").Params().Qual(fsmPkg, "Outcome").Block(
		jen.If(jen.Op("!").Id("s").Dot("Valid").Call()).Block(jen.Return(jen.Qual(fsmPkg, "OutcomeNone"))),
		jen.Return(jen.Id("stateOutcomes").Index(jen.Id("s"))),
	)
	f.Comment("Terminal reports whether the lifecycle has settled in s.")
	f.Func().Params(jen.Id("s").Id("State")).Id("Terminal").Params().Bool().Block(
		jen.Return(jen.Id("s").Dot("Outcome").Call().Op("!=").Qual(fsmPkg, "OutcomeNone")),
	)
	f.Comment("Timers lists the timers armed while the machine is in s: the ones a restored machine must re-arm. The slice is shared; do not modify it.")
	f.Func().Params(jen.Id("s").Id("State")).Id("Timers").Params().Index().Id("Timer").Block(
		jen.If(jen.Op("!").Id("s").Dot("Valid").Call()).Block(jen.Return(jen.Nil())),
		jen.Return(jen.Id("stateTimers").Index(jen.Id("s"))),
	)
}

func eventDecls(f *jen.File, m *spec.Machine) {
	enum(f, "Event", "Event is an input of the "+m.Name+" machine: a wire message, a timer expiry or a local happening.", eventItems(m), true)
	var kinds, messages, roles []jen.Code
	for _, e := range m.Events {
		kinds = append(kinds, jen.Qual(fsmPkg, eventKindConst(e.Kind)))
		messages = append(messages, jen.Lit(e.Message))
		r := e.By
		if e.Kind == spec.EventMessage {
			r = e.From
		}
		roles = append(roles, jen.Qual(fsmPkg, roleConst(r)))
	}
	byteTable(f, "eventKinds", jen.Qual(fsmPkg, "EventKind"), kinds)
	f.Var().Id("eventMessages").Op("=").Index(jen.Op("...")).String().Values(append([]jen.Code{jen.Lit("")}, messages...)...)
	byteTable(f, "eventRoles", jen.Qual(fsmPkg, "Role"), roles)
	for _, x := range []struct {
		name, doc, table string
		typ              jen.Code
	}{
		{"Kind", "Kind says whether e is a wire message, a timer or a local event.", "eventKinds", jen.Qual(fsmPkg, "EventKind")},
		{"Message", "Message is the wire type of a message event, or \"\" for timers and local events. Several events may share one wire type (a status frame with different states).", "eventMessages", jen.String()},
		{"Role", "Role is the sender of a message event, the owner of a timer or the observer of a local event.", "eventRoles", jen.Qual(fsmPkg, "Role")},
	} {
		f.Comment(x.doc)
		f.Func().Params(jen.Id("e").Id("Event")).Id(x.name).Params().Add(x.typ).Block(
			jen.If(jen.Op("!").Id("e").Dot("Valid").Call()).Block(jen.Return(jen.Id(x.table).Index(jen.Lit(0)))),
			jen.Return(jen.Id(x.table).Index(jen.Id("e"))),
		)
	}
}

func timerDecls(f *jen.File, m *spec.Machine) {
	enum(f, "Timer", "Timer is a named timer. Arming and disarming are effects; expiry is the event of the same name.", timerItems(m), true)
	var durs, evs []jen.Code
	for _, t := range m.Timers() {
		durs = append(durs, durationCode(t.Duration))
		evs = append(evs, jen.Id(eventConst(t)))
	}
	f.Var().Id("timerDurations").Op("=").Index(jen.Op("...")).Qual("time", "Duration").Values(append([]jen.Code{jen.Lit(0)}, durs...)...)
	byteTable(f, "timerEvents", jen.Id("Event"), evs)
	f.Comment("Duration is how long the timer runs once armed.")
	f.Func().Params(jen.Id("t").Id("Timer")).Id("Duration").Params().Qual("time", "Duration").Block(
		jen.If(jen.Op("!").Id("t").Dot("Valid").Call()).Block(jen.Return(jen.Lit(0))),
		jen.Return(jen.Id("timerDurations").Index(jen.Id("t"))),
	)
	f.Comment("Event is the event to fire when the timer expires.")
	f.Func().Params(jen.Id("t").Id("Timer")).Id("Event").Params().Id("Event").Block(
		jen.If(jen.Op("!").Id("t").Dot("Valid").Call()).Block(jen.Return(jen.Lit(0))),
		jen.Return(jen.Id("timerEvents").Index(jen.Id("t"))),
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

func effectDecls(f *jen.File) {
	f.Comment("Effect is one step a transition asks a peer to perform, in spec order.")
	f.Type().Id("Effect").Struct(
		jen.Id("Kind").Qual(fsmPkg, "EffectKind"),
		jen.Comment("Role is the peer that performs the effect; RoleBoth for both."),
		jen.Id("Role").Qual(fsmPkg, "Role"),
		jen.Id("Message").Id("Message").Comment("EffectSend"),
		jen.Id("Timer").Id("Timer").Comment("EffectStart, EffectStop"),
		jen.Id("Action").Id("Action").Comment("EffectDo"),
		jen.Id("Raise").Id("Event").Comment("EffectRaise"),
	)
	f.Comment("String renders the effect as the spec writes it, e.g. \"runtime: send preparation_status\".")
	f.Func().Params(jen.Id("e").Id("Effect")).Id("String").Params().String().Block(
		jen.Id("prefix").Op(":=").Lit(""),
		jen.If(jen.Id("e").Dot("Role").Op("!=").Qual(fsmPkg, "RoleBoth")).Block(
			jen.Id("prefix").Op("=").Id("e").Dot("Role").Dot("String").Call().Op("+").Lit(": "),
		),
		jen.Switch(jen.Id("e").Dot("Kind")).Block(
			jen.Case(jen.Qual(fsmPkg, "EffectSend")).Block(jen.Return(jen.Id("prefix").Op("+").Lit("send ").Op("+").Id("e").Dot("Message").Dot("String").Call())),
			jen.Case(jen.Qual(fsmPkg, "EffectStart")).Block(jen.Return(jen.Id("prefix").Op("+").Lit("start ").Op("+").Id("e").Dot("Timer").Dot("String").Call())),
			jen.Case(jen.Qual(fsmPkg, "EffectStop")).Block(jen.Return(jen.Id("prefix").Op("+").Lit("stop ").Op("+").Id("e").Dot("Timer").Dot("String").Call())),
			jen.Case(jen.Qual(fsmPkg, "EffectDo")).Block(jen.Return(jen.Id("prefix").Op("+").Lit("do ").Op("+").Id("e").Dot("Action").Dot("String").Call())),
			jen.Case(jen.Qual(fsmPkg, "EffectRaise")).Block(jen.Return(jen.Id("prefix").Op("+").Lit("raise ").Op("+").Id("e").Dot("Raise").Dot("String").Call())),
		),
		jen.Return(jen.Id("prefix").Op("+").Id("e").Dot("Kind").Dot("String").Call()),
	)
}

func stepDecls(f *jen.File) {
	doc(f, `Step is what one event did: a read-only view of the selected candidate of
its cell. It is a single pointer into the generated table, so returning it
costs nothing and nobody can change the table through it. The zero Step,
returned for an invalid state or event, reports zero values.`)
	f.Type().Id("Step").Struct(jen.Id("c").Op("*").Id("candidate"))
	accessors := []struct {
		name, field, doc string
		typ              jen.Code
	}{
		{"From", "from", "From is the state the event arrived in.", jen.Id("State")},
		{"Event", "event", "Event is the event that was handled.", jen.Id("Event")},
		{"To", "to", "To is the state after the step; it equals From unless the disposition is fsm.Moved.", jen.Id("State")},
		{"Guard", "guard", "Guard is the guard that selected the candidate, or 0 for the cell's fallback.", jen.Id("Guard")},
		{"Disposition", "disp", "Disposition says whether the step moved, stayed, ignored or rejected the event.", jen.Qual(fsmPkg, "Disposition")},
		{"Effects", "effects", "Effects lists what the peer must do, in spec order; nil unless the step moved or stayed. The slice is shared: do not modify it.", jen.Index().Id("Effect")},
		{"Reason", "reason", "Reason is the spec's reason for an ignored or rejected event, or \"\".", jen.String()},
	}
	for _, a := range accessors {
		f.Comment(a.doc)
		f.Func().Params(jen.Id("s").Id("Step")).Id(a.name).Params().Add(a.typ).Block(
			jen.If(jen.Id("s").Dot("c").Op("==").Nil()).Block(jen.Var().Id("zero").Add(a.typ), jen.Return(jen.Id("zero"))),
			jen.Return(jen.Id("s").Dot("c").Dot(a.field)),
		)
	}
	f.Type().Id("candidate").Struct(
		jen.Id("guard").Id("Guard"),
		jen.Id("disp").Qual(fsmPkg, "Disposition"),
		jen.Id("to").Id("State"),
		jen.Id("effects").Index().Id("Effect"),
		jen.Id("reason").String(),
		jen.Comment("from, event and err are filled in by init."),
		jen.Id("from").Id("State"),
		jen.Id("event").Id("Event"),
		jen.Id("err").Op("*").Qual(fsmPkg, "TransitionError").Comment("non-nil exactly for rejections"),
	)
}

func effectValue(ef *spec.Effect) jen.Code {
	kv := []jen.Code{jen.Id("Kind").Op(":").Qual(fsmPkg, effectKindConst(ef.Kind))}
	if ef.Role != spec.RoleBoth {
		kv = append(kv, jen.Id("Role").Op(":").Qual(fsmPkg, roleConst(ef.Role)))
	}
	switch ef.Kind {
	case spec.EffectSend:
		kv = append(kv, jen.Id("Message").Op(":").Id(messageConst(ef.Message)))
	case spec.EffectStart, spec.EffectStop:
		kv = append(kv, jen.Id("Timer").Op(":").Id(timerConst(ef.Timer)))
	case spec.EffectDo:
		kv = append(kv, jen.Id("Action").Op(":").Id(actionConst(ef.Action)))
	case spec.EffectRaise:
		kv = append(kv, jen.Id("Raise").Op(":").Id(eventConst(ef.Raise)))
	}
	return jen.Values(kv...)
}

// candidateValue renders one candidate on one line, keyed, so the table
// reads like the spec it came from.
func candidateValue(s *spec.State, r *spec.Rule) jen.Code {
	kv := []jen.Code{jen.Id("disp").Op(":").Qual(fsmPkg, disposition(r))}
	if r.Guard != nil {
		kv = append(kv, jen.Id("guard").Op(":").Id(guardConst(r.Guard)))
	}
	to := s
	if r.Kind == spec.RuleGoto {
		to = r.To
	}
	kv = append(kv, jen.Id("to").Op(":").Id(stateConst(to)))
	if len(r.Effects) > 0 {
		var efs []jen.Code
		for _, ef := range r.Effects {
			efs = append(efs, effectValue(ef))
		}
		kv = append(kv, jen.Id("effects").Op(":").Index().Id("Effect").Values(efs...))
	}
	if r.Reason != "" {
		kv = append(kv, jen.Id("reason").Op(":").Lit(r.Reason))
	}
	return jen.Values(kv...)
}

// tableDecl writes the whole cell table as data: one line per candidate,
// each after a comment naming the spec line it came from.
func tableDecl(f *jen.File, m *spec.Machine) {
	var rows []jen.Code
	for _, s := range m.States {
		var cells []jen.Code
		for _, e := range m.Events {
			var cands []jen.Code
			for _, r := range m.Cell(s, e) {
				cands = append(cands, jen.Line().Comment(r.Pos.String()).Line().Add(candidateValue(s, r)))
			}
			cells = append(cells, jen.Line().Id(eventConst(e)).Op(":").Values(append(cands, jen.Line())...))
		}
		rows = append(rows, jen.Line().Id(stateConst(s)).Op(":").Values(append(cells, jen.Line())...))
	}
	f.Comment("table holds every (state, event) cell: its candidates in the order they are tried, the unguarded fallback last.")
	f.Var().Id("table").Op("=").Index(jen.Id("numStates").Op("+").Lit(1)).Index(jen.Id("numEvents").Op("+").Lit(1)).Index().Id("candidate").Values(append(rows, jen.Line())...)
	f.Comment("init completes each candidate, and builds the error of a rejection once, so that answering an event allocates nothing.")
	f.Func().Id("init").Params().Block(
		jen.For(jen.Id("s").Op(":=").Range().Id("table")).Block(
			jen.For(jen.Id("e").Op(":=").Range().Id("table").Index(jen.Id("s"))).Block(
				jen.For(jen.Id("i").Op(":=").Range().Id("table").Index(jen.Id("s")).Index(jen.Id("e"))).Block(
					jen.Id("c").Op(":=").Op("&").Id("table").Index(jen.Id("s")).Index(jen.Id("e")).Index(jen.Id("i")),
					jen.Id("c").Dot("from").Op(",").Id("c").Dot("event").Op("=").Id("State").Call(jen.Id("s")).Op(",").Id("Event").Call(jen.Id("e")),
					jen.If(jen.Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Rejected")).Block(
						jen.Id("c").Dot("err").Op("=").Op("&").Qual(fsmPkg, "TransitionError").Values(jen.Dict{
							jen.Id("Machine"): jen.Id("Name"),
							jen.Id("State"):   jen.Id("State").Call(jen.Id("s")).Dot("String").Call(),
							jen.Id("Event"):   jen.Id("Event").Call(jen.Id("e")).Dot("String").Call(),
							jen.Id("Reason"):  jen.Id("c").Dot("reason"),
						}),
					),
				),
			),
		),
	)
}

func transitionFunc(f *jen.File) {
	doc(f, `Transition is the pure transition function. It selects the candidate of
the (s, e) cell whose guard is in held (or the fallback), and returns the
step with its effects. It changes nothing, runs no hook and allocates
nothing for valid inputs: the returned step and error are shared, read-only
values from the table.

A rejected event returns a *fsm.TransitionError naming the machine, state
and event (errors.Is(err, fsm.ErrRejected)); Step.To() then equals s. An
invalid state or event returns the zero Step and a *fsm.InvalidError.`)
	f.Func().Id("Transition").Params(jen.Id("s").Id("State"), jen.Id("e").Id("Event"), jen.Id("held").Id("GuardSet")).Params(jen.Id("Step"), jen.Error()).Block(
		jen.If(jen.Op("!").Id("s").Dot("Valid").Call().Op("||").Op("!").Id("e").Dot("Valid").Call()).Block(
			jen.Return(jen.Id("Step").Values(), jen.Id("check").Call(jen.Id("s"), jen.Id("e"))),
		),
		jen.Id("cands").Op(":=").Id("table").Index(jen.Id("s")).Index(jen.Id("e")),
		jen.For(jen.Id("i").Op(":=").Range().Id("cands")).Block(
			jen.Id("c").Op(":=").Op("&").Id("cands").Index(jen.Id("i")),
			jen.If(jen.Id("c").Dot("guard").Op("!=").Lit(0).Op("&&").Op("!").Id("held").Dot("Has").Call(jen.Id("c").Dot("guard"))).Block(jen.Continue()),
			jen.Comment("A nil *TransitionError must not become a non-nil error."),
			jen.If(jen.Id("c").Dot("err").Op("!=").Nil()).Block(jen.Return(jen.Id("Step").Values(jen.Id("c")), jen.Id("c").Dot("err"))),
			jen.Return(jen.Id("Step").Values(jen.Id("c")), jen.Nil()),
		),
		jen.Comment("The generator refuses a cell without an unguarded fallback, so this is unreachable."),
		jen.Return(jen.Id("Step").Values(), jen.Op("&").Qual(fsmPkg, "InvalidError").Values(jen.Dict{jen.Id("Machine"): jen.Id("Name"), jen.Id("What"): jen.Lit("cell"), jen.Id("Value"): jen.Id("s").Dot("String").Call().Op("+").Lit("/").Op("+").Id("e").Dot("String").Call()})),
	)
	f.Comment("check builds the error for an invalid state or event; it is off the hot path.")
	f.Func().Id("check").Params(jen.Id("s").Id("State"), jen.Id("e").Id("Event")).Error().Block(
		jen.If(jen.Op("!").Id("s").Dot("Valid").Call()).Block(jen.Return(jen.Op("&").Qual(fsmPkg, "InvalidError").Values(jen.Dict{jen.Id("Machine"): jen.Id("Name"), jen.Id("What"): jen.Lit("state"), jen.Id("Value"): jen.Id("s").Dot("String").Call()}))),
		jen.If(jen.Op("!").Id("e").Dot("Valid").Call()).Block(jen.Return(jen.Op("&").Qual(fsmPkg, "InvalidError").Values(jen.Dict{jen.Id("Machine"): jen.Id("Name"), jen.Id("What"): jen.Lit("event"), jen.Id("Value"): jen.Id("e").Dot("String").Call()}))),
		jen.Return(jen.Nil()),
	)
}

func firingParam() jen.Code { return jen.Id("f").Op("*").Id("Firing").Types(jen.Id("A")) }

func hooksDecl(f *jen.File, m *spec.Machine) {
	var methods []jen.Code
	for _, g := range m.Guards {
		methods = append(methods, jen.Commentf("%s reports whether %s.", guardMethod(g), g.Doc), jen.Id(guardMethod(g)).Params(firingParam()).Bool())
	}
	for _, msg := range m.SentMessages() {
		methods = append(methods, jen.Commentf("%s sends a %s frame for this instance.", sendMethod(msg), msg), jen.Id(sendMethod(msg)).Params(firingParam()).Error())
	}
	if len(m.Timers()) > 0 {
		methods = append(methods,
			jen.Comment("StartTimer arms (or re-arms) t for t.Duration(); on expiry the peer fires t.Event()."),
			jen.Id("StartTimer").Params(firingParam(), jen.Id("t").Id("Timer")).Error(),
			jen.Comment("StopTimer disarms t. Stopping a timer that is not armed is not an error."),
			jen.Id("StopTimer").Params(firingParam(), jen.Id("t").Id("Timer")).Error(),
		)
	}
	for _, a := range m.Actions {
		methods = append(methods, jen.Commentf("%s performs %s: %s.", actionMethod(a), a.Name, a.Doc), jen.Id(actionMethod(a)).Params(firingParam()).Error())
	}
	doc(f, `Hooks is what a peer implements to drive the machine: one method per
guard, per message the machine asks it to send and per action, plus the
timer methods when the machine has timers. Fire calls them with the
machine's lock held, in spec order, and only for effects of the machine's
role. A hook must not call Fire on the same machine (it would deadlock);
it raises follow-up events with f.Raise, which run once the current event
completes. The *Firing is reused: do not keep it after the hook returns.`)
	f.Type().Id("Hooks").Types(jen.Id("A").Any()).Interface(methods...)
}

package gen

import (
	"fmt"
	"strings"
	"time"

	. "github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// machineFile renders fsm/<machine>/<machine>.go: the enums, the static cell
// table, the pure Transition function and the Machine that runs hooks.
func machineFile(m *spec.Machine) *File {
	f := NewFile(m.Name)
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
		Id("numStates").Op("=").Lit(len(m.States)),
		Id("numEvents").Op("=").Lit(len(m.Events)),
	)

	stateDecls(f, m)
	eventDecls(f, m)
	timerDecls(f, m)
	enum(f, "Guard", "Guard names a predicate the peer evaluates through its Hooks.", guardItems(m), true)
	f.Comment("GuardSet is the set of guards that hold, for the pure Transition function.")
	f.Type().Id("GuardSet").Uint64()
	f.Comment("With returns s with g added.")
	f.Func().Params(Id("s").Id("GuardSet")).Id("With").Params(Id("g").Id("Guard")).Id("GuardSet").Block(
		If(Op("!").Id("g").Dot("Valid").Call()).Block(Return(Id("s"))),
		Return(Id("s").Op("|").Lit(1).Op("<<").Parens(Id("g").Op("-").Lit(1))),
	)
	f.Comment("Has reports whether g is in s.")
	f.Func().Params(Id("s").Id("GuardSet")).Id("Has").Params(Id("g").Id("Guard")).Bool().Block(
		Return(Id("g").Dot("Valid").Call().Op("&&").Id("s").Op("&").Parens(Lit(1).Op("<<").Parens(Id("g").Op("-").Lit(1))).Op("!=").Lit(0)),
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
func doc(f *File, text string) {
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

func stateDecls(f *File, m *spec.Machine) {
	enum(f, "State", "State is a state of the "+m.Name+" machine.", stateItems(m), true)
	var outcomes, timers []Code
	for _, s := range m.States {
		outcomes = append(outcomes, Qual(fsmPkg, outcomeConst(s.Outcome)))
		if len(s.Timers) == 0 {
			timers = append(timers, Nil())
			continue
		}
		var ts []Code
		for _, t := range s.Timers {
			ts = append(ts, Id(timerConst(t)))
		}
		timers = append(timers, Index().Id("Timer").Values(ts...))
	}
	byteTable(f, "stateOutcomes", Qual(fsmPkg, "Outcome"), outcomes)
	f.Var().Id("stateTimers").Op("=").Index(Op("...")).Index().Id("Timer").Values(append([]Code{Nil()}, timers...)...)

	f.Comment("Outcome classifies a terminal state; it is fsm.OutcomeNone for the others.")
	f.Func().Params(Id("s").Id("State")).Id("Outcome").Params().Qual(fsmPkg, "Outcome").Block(
		If(Op("!").Id("s").Dot("Valid").Call()).Block(Return(Qual(fsmPkg, "OutcomeNone"))),
		Return(Id("stateOutcomes").Index(Id("s"))),
	)
	f.Comment("Terminal reports whether the lifecycle has settled in s.")
	f.Func().Params(Id("s").Id("State")).Id("Terminal").Params().Bool().Block(
		Return(Id("s").Dot("Outcome").Call().Op("!=").Qual(fsmPkg, "OutcomeNone")),
	)
	f.Comment("Timers lists the timers armed while the machine is in s: the ones a restored machine must re-arm. The slice is shared; do not modify it.")
	f.Func().Params(Id("s").Id("State")).Id("Timers").Params().Index().Id("Timer").Block(
		If(Op("!").Id("s").Dot("Valid").Call()).Block(Return(Nil())),
		Return(Id("stateTimers").Index(Id("s"))),
	)
}

func eventDecls(f *File, m *spec.Machine) {
	enum(f, "Event", "Event is an input of the "+m.Name+" machine: a wire message, a timer expiry or a local happening.", eventItems(m), true)
	var kinds, messages, roles []Code
	for _, e := range m.Events {
		kinds = append(kinds, Qual(fsmPkg, eventKindConst(e.Kind)))
		messages = append(messages, Lit(e.Message))
		r := e.By
		if e.Kind == spec.EventMessage {
			r = e.From
		}
		roles = append(roles, Qual(fsmPkg, roleConst(r)))
	}
	byteTable(f, "eventKinds", Qual(fsmPkg, "EventKind"), kinds)
	f.Var().Id("eventMessages").Op("=").Index(Op("...")).String().Values(append([]Code{Lit("")}, messages...)...)
	byteTable(f, "eventRoles", Qual(fsmPkg, "Role"), roles)
	failedSendDecls(f, m)
	for _, x := range []struct {
		name, doc, table string
		typ              Code
	}{
		{"Kind", "Kind says whether e is a wire message, a timer or a local event.", "eventKinds", Qual(fsmPkg, "EventKind")},
		{"Message", "Message is the wire type of a message event, or \"\" for timers and local events. Several events may share one wire type (a status frame with different states).", "eventMessages", String()},
		{"Role", "Role is the sender of a message event, the owner of a timer or the observer of a local event.", "eventRoles", Qual(fsmPkg, "Role")},
	} {
		f.Comment(x.doc)
		f.Func().Params(Id("e").Id("Event")).Id(x.name).Params().Add(x.typ).Block(
			If(Op("!").Id("e").Dot("Valid").Call()).Block(Return(Id(x.table).Index(Lit(0)))),
			Return(Id(x.table).Index(Id("e"))),
		)
	}
}

// failedSendDecls writes each message event's failed send (spec
// failed_send): the event a sender fires instead when its write failed.
func failedSendDecls(f *File, m *spec.Machine) {
	var fails []Code
	for _, e := range m.Events {
		if e.FailedSend == nil {
			fails = append(fails, Lit(0))
			continue
		}
		fails = append(fails, Id(eventConst(e.FailedSend)))
	}
	byteTable(f, "eventFailedSends", Id("Event"), fails)
	f.Comment("FailedSend is the local event a sender fires instead of message event e when its write of the frame returned an error (the frame may have left), from the state it was in before the send; 0 when the spec declares none.")
	f.Func().Params(Id("e").Id("Event")).Id("FailedSend").Params().Id("Event").Block(
		If(Op("!").Id("e").Dot("Valid").Call()).Block(Return(Lit(0))),
		Return(Id("eventFailedSends").Index(Id("e"))),
	)
}

func timerDecls(f *File, m *spec.Machine) {
	enum(f, "Timer", "Timer is a named timer. Arming and disarming are effects; expiry is the event of the same name.", timerItems(m), true)
	var durs, evs []Code
	for _, t := range m.Timers() {
		durs = append(durs, durationCode(t.Duration))
		evs = append(evs, Id(eventConst(t)))
	}
	f.Var().Id("timerDurations").Op("=").Index(Op("...")).Qual("time", "Duration").Values(append([]Code{Lit(0)}, durs...)...)
	byteTable(f, "timerEvents", Id("Event"), evs)
	f.Comment("Duration is how long the timer runs once armed.")
	f.Func().Params(Id("t").Id("Timer")).Id("Duration").Params().Qual("time", "Duration").Block(
		If(Op("!").Id("t").Dot("Valid").Call()).Block(Return(Lit(0))),
		Return(Id("timerDurations").Index(Id("t"))),
	)
	f.Comment("Event is the event to fire when the timer expires.")
	f.Func().Params(Id("t").Id("Timer")).Id("Event").Params().Id("Event").Block(
		If(Op("!").Id("t").Dot("Valid").Call()).Block(Return(Lit(0))),
		Return(Id("timerEvents").Index(Id("t"))),
	)
}

// durationCode writes d the way a person would: 5 * time.Minute.
func durationCode(d time.Duration) Code {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}} {
		if d%u.unit == 0 {
			return Lit(int(d/u.unit)).Op("*").Qual("time", u.name)
		}
	}
	return Lit(int(d)).Op("*").Qual("time", "Nanosecond")
}

func effectDecls(f *File) {
	f.Comment("Effect is one step a transition asks a peer to perform, in spec order.")
	f.Type().Id("Effect").Struct(
		Id("Kind").Qual(fsmPkg, "EffectKind"),
		Comment("Role is the peer that performs the effect; RoleBoth for both."),
		Id("Role").Qual(fsmPkg, "Role"),
		Id("Message").Id("Message").Comment("EffectSend"),
		Id("Timer").Id("Timer").Comment("EffectStart, EffectStop"),
		Id("Action").Id("Action").Comment("EffectDo"),
		Id("Raise").Id("Event").Comment("EffectRaise"),
	)
	f.Comment("String renders the effect as the spec writes it, e.g. \"runtime: send preparation_status\".")
	f.Func().Params(Id("e").Id("Effect")).Id("String").Params().String().Block(
		Id("prefix").Op(":=").Lit(""),
		If(Id("e").Dot("Role").Op("!=").Qual(fsmPkg, "RoleBoth")).Block(
			Id("prefix").Op("=").Id("e").Dot("Role").Dot("String").Call().Op("+").Lit(": "),
		),
		Switch(Id("e").Dot("Kind")).Block(
			Case(Qual(fsmPkg, "EffectSend")).Block(Return(Id("prefix").Op("+").Lit("send ").Op("+").Id("e").Dot("Message").Dot("String").Call())),
			Case(Qual(fsmPkg, "EffectStart")).Block(Return(Id("prefix").Op("+").Lit("start ").Op("+").Id("e").Dot("Timer").Dot("String").Call())),
			Case(Qual(fsmPkg, "EffectStop")).Block(Return(Id("prefix").Op("+").Lit("stop ").Op("+").Id("e").Dot("Timer").Dot("String").Call())),
			Case(Qual(fsmPkg, "EffectDo")).Block(Return(Id("prefix").Op("+").Lit("do ").Op("+").Id("e").Dot("Action").Dot("String").Call())),
			Case(Qual(fsmPkg, "EffectRaise")).Block(Return(Id("prefix").Op("+").Lit("raise ").Op("+").Id("e").Dot("Raise").Dot("String").Call())),
		),
		Return(Id("prefix").Op("+").Id("e").Dot("Kind").Dot("String").Call()),
	)
}

func stepDecls(f *File) {
	doc(f, `Step is what one event did: a read-only view of the selected candidate of
its cell. It is a single pointer into the generated table, so returning it
costs nothing and nobody can change the table through it. The zero Step,
returned for an invalid state or event, reports zero values.`)
	f.Type().Id("Step").Struct(Id("c").Op("*").Id("candidate"))
	accessors := []struct {
		name, field, doc string
		typ              Code
	}{
		{"From", "from", "From is the state the event arrived in.", Id("State")},
		{"Event", "event", "Event is the event that was handled.", Id("Event")},
		{"To", "to", "To is the state after the step; it equals From unless the disposition is fsm.Moved.", Id("State")},
		{"Guard", "guard", "Guard is the guard that selected the candidate, or 0 for the cell's fallback.", Id("Guard")},
		{"Disposition", "disp", "Disposition says whether the step moved, stayed, ignored or rejected the event.", Qual(fsmPkg, "Disposition")},
		{"Effects", "effects", "Effects lists what the peer must do, in spec order; nil unless the step moved or stayed. The slice is shared: do not modify it.", Index().Id("Effect")},
		{"Reason", "reason", "Reason is the spec's reason for an ignored or rejected event, or \"\".", String()},
	}
	for _, a := range accessors {
		f.Comment(a.doc)
		f.Func().Params(Id("s").Id("Step")).Id(a.name).Params().Add(a.typ).Block(
			If(Id("s").Dot("c").Op("==").Nil()).Block(Var().Id("zero").Add(a.typ), Return(Id("zero"))),
			Return(Id("s").Dot("c").Dot(a.field)),
		)
	}
	f.Type().Id("candidate").Struct(
		Id("guard").Id("Guard"),
		Id("disp").Qual(fsmPkg, "Disposition"),
		Id("to").Id("State"),
		Id("effects").Index().Id("Effect"),
		Id("reason").String(),
		Comment("from, event and err are filled in by init."),
		Id("from").Id("State"),
		Id("event").Id("Event"),
		Id("err").Op("*").Qual(fsmPkg, "TransitionError").Comment("non-nil exactly for rejections"),
	)
}

func effectValue(ef *spec.Effect) Code {
	kv := []Code{Id("Kind").Op(":").Qual(fsmPkg, effectKindConst(ef.Kind))}
	if ef.Role != spec.RoleBoth {
		kv = append(kv, Id("Role").Op(":").Qual(fsmPkg, roleConst(ef.Role)))
	}
	switch ef.Kind {
	case spec.EffectSend:
		kv = append(kv, Id("Message").Op(":").Id(messageConst(ef.Message)))
	case spec.EffectStart, spec.EffectStop:
		kv = append(kv, Id("Timer").Op(":").Id(timerConst(ef.Timer)))
	case spec.EffectDo:
		kv = append(kv, Id("Action").Op(":").Id(actionConst(ef.Action)))
	case spec.EffectRaise:
		kv = append(kv, Id("Raise").Op(":").Id(eventConst(ef.Raise)))
	}
	return Values(kv...)
}

// candidateValue renders one candidate on one line, keyed, so the table
// reads like the spec it came from.
func candidateValue(s *spec.State, r *spec.Rule) Code {
	kv := []Code{Id("disp").Op(":").Qual(fsmPkg, disposition(r))}
	if r.Guard != nil {
		kv = append(kv, Id("guard").Op(":").Id(guardConst(r.Guard)))
	}
	to := s
	if r.Kind == spec.RuleGoto {
		to = r.To
	}
	kv = append(kv, Id("to").Op(":").Id(stateConst(to)))
	if len(r.Effects) > 0 {
		var efs []Code
		for _, ef := range r.Effects {
			efs = append(efs, effectValue(ef))
		}
		kv = append(kv, Id("effects").Op(":").Index().Id("Effect").Values(efs...))
	}
	if r.Reason != "" {
		kv = append(kv, Id("reason").Op(":").Lit(r.Reason))
	}
	return Values(kv...)
}

// tableDecl writes the whole cell table as data: one line per candidate,
// each after a comment naming the spec line it came from.
func tableDecl(f *File, m *spec.Machine) {
	var rows []Code
	for _, s := range m.States {
		var cells []Code
		for _, e := range m.Events {
			var cands []Code
			for _, r := range m.Cell(s, e) {
				cands = append(cands, Line().Comment(r.Pos.String()).Line().Add(candidateValue(s, r)))
			}
			cells = append(cells, Line().Id(eventConst(e)).Op(":").Values(append(cands, Line())...))
		}
		rows = append(rows, Line().Id(stateConst(s)).Op(":").Values(append(cells, Line())...))
	}
	f.Comment("table holds every (state, event) cell: its candidates in the order they are tried, the unguarded fallback last.")
	f.Var().Id("table").Op("=").Index(Id("numStates").Op("+").Lit(1)).Index(Id("numEvents").Op("+").Lit(1)).Index().Id("candidate").Values(append(rows, Line())...)
	f.Comment("init completes each candidate, and builds the error of a rejection once, so that answering an event allocates nothing.")
	f.Func().Id("init").Params().Block(
		For(Id("s").Op(":=").Range().Id("table")).Block(
			For(Id("e").Op(":=").Range().Id("table").Index(Id("s"))).Block(
				For(Id("i").Op(":=").Range().Id("table").Index(Id("s")).Index(Id("e"))).Block(
					Id("c").Op(":=").Op("&").Id("table").Index(Id("s")).Index(Id("e")).Index(Id("i")),
					Id("c").Dot("from").Op(",").Id("c").Dot("event").Op("=").Id("State").Call(Id("s")).Op(",").Id("Event").Call(Id("e")),
					If(Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Rejected")).Block(
						Id("c").Dot("err").Op("=").Op("&").Qual(fsmPkg, "TransitionError").Values(Dict{
							Id("Machine"): Id("Name"),
							Id("State"):   Id("State").Call(Id("s")).Dot("String").Call(),
							Id("Event"):   Id("Event").Call(Id("e")).Dot("String").Call(),
							Id("Reason"):  Id("c").Dot("reason"),
						}),
					),
				),
			),
		),
	)
}

func transitionFunc(f *File) {
	doc(f, `Transition is the pure transition function. It selects the candidate of
the (s, e) cell whose guard is in held (or the fallback), and returns the
step with its effects. It changes nothing, runs no hook and allocates
nothing for valid inputs: the returned step and error are shared, read-only
values from the table.

A rejected event returns a *fsm.TransitionError naming the machine, state
and event (errors.Is(err, fsm.ErrRejected)); Step.To() then equals s. An
invalid state or event returns the zero Step and a *fsm.InvalidError.`)
	f.Func().Id("Transition").Params(Id("s").Id("State"), Id("e").Id("Event"), Id("held").Id("GuardSet")).Params(Id("Step"), Error()).Block(
		If(Op("!").Id("s").Dot("Valid").Call().Op("||").Op("!").Id("e").Dot("Valid").Call()).Block(
			Return(Id("Step").Values(), Id("check").Call(Id("s"), Id("e"))),
		),
		Id("cands").Op(":=").Id("table").Index(Id("s")).Index(Id("e")),
		For(Id("i").Op(":=").Range().Id("cands")).Block(
			Id("c").Op(":=").Op("&").Id("cands").Index(Id("i")),
			If(Id("c").Dot("guard").Op("!=").Lit(0).Op("&&").Op("!").Id("held").Dot("Has").Call(Id("c").Dot("guard"))).Block(Continue()),
			Comment("A nil *TransitionError must not become a non-nil error."),
			If(Id("c").Dot("err").Op("!=").Nil()).Block(Return(Id("Step").Values(Id("c")), Id("c").Dot("err"))),
			Return(Id("Step").Values(Id("c")), Nil()),
		),
		Comment("The generator refuses a cell without an unguarded fallback, so this is unreachable."),
		Return(Id("Step").Values(), Op("&").Qual(fsmPkg, "InvalidError").Values(Dict{Id("Machine"): Id("Name"), Id("What"): Lit("cell"), Id("Value"): Id("s").Dot("String").Call().Op("+").Lit("/").Op("+").Id("e").Dot("String").Call()})),
	)
	f.Comment("check builds the error for an invalid state or event; it is off the hot path.")
	f.Func().Id("check").Params(Id("s").Id("State"), Id("e").Id("Event")).Error().Block(
		If(Op("!").Id("s").Dot("Valid").Call()).Block(Return(Op("&").Qual(fsmPkg, "InvalidError").Values(Dict{Id("Machine"): Id("Name"), Id("What"): Lit("state"), Id("Value"): Id("s").Dot("String").Call()}))),
		If(Op("!").Id("e").Dot("Valid").Call()).Block(Return(Op("&").Qual(fsmPkg, "InvalidError").Values(Dict{Id("Machine"): Id("Name"), Id("What"): Lit("event"), Id("Value"): Id("e").Dot("String").Call()}))),
		Return(Nil()),
	)
}

func firingParam() Code { return Id("f").Op("*").Id("Firing").Types(Id("A")) }

func hooksDecl(f *File, m *spec.Machine) {
	var methods []Code
	for _, g := range m.Guards {
		methods = append(methods, Commentf("%s reports whether %s.", guardMethod(g), g.Doc), Id(guardMethod(g)).Params(firingParam()).Bool())
	}
	for _, msg := range m.SentMessages() {
		methods = append(methods, Commentf("%s sends a %s frame for this instance.", sendMethod(msg), msg), Id(sendMethod(msg)).Params(firingParam()).Error())
	}
	if len(m.Timers()) > 0 {
		methods = append(methods,
			Comment("StartTimer arms (or re-arms) t for t.Duration(); on expiry the peer fires t.Event()."),
			Id("StartTimer").Params(firingParam(), Id("t").Id("Timer")).Error(),
			Comment("StopTimer disarms t. Stopping a timer that is not armed is not an error."),
			Id("StopTimer").Params(firingParam(), Id("t").Id("Timer")).Error(),
		)
	}
	for _, a := range m.Actions {
		methods = append(methods, Commentf("%s performs %s: %s.", actionMethod(a), a.Name, a.Doc), Id(actionMethod(a)).Params(firingParam()).Error())
	}
	doc(f, `Hooks is what a peer implements to drive the machine: one method per
guard, per message the machine asks it to send and per action, plus the
timer methods when the machine has timers. Fire calls them with the
machine's lock held, in spec order, and only for effects of the machine's
role. A hook must not call Fire on the same machine (it would deadlock);
it raises follow-up events with f.Raise, which run once the current event
completes. The *Firing is reused: do not keep it after the hook returns.`)
	f.Type().Id("Hooks").Types(Id("A").Any()).Interface(methods...)
}

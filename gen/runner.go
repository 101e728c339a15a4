package gen

import (
	. "github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// machineDecls writes Firing and Machine: the part that runs guards and
// effects through Hooks, serialises callers and queues follow-up events.
func machineDecls(f *File, m *spec.Machine) {
	f.Comment("Firing describes the event being handled; hooks receive it.")
	f.Type().Id("Firing").Types(Id("A").Any()).Struct(
		Id("From").Id("State"),
		Id("Event").Id("Event"),
		Id("To").Id("State").Comment("the target while effects run; equals From while guards run"),
		Id("Arg").Id("A").Comment("the argument passed to Fire or Raise, e.g. the decoded frame"),
		Id("Role").Qual(fsmPkg, "Role"),
		Id("m").Op("*").Id("Machine").Types(Id("A")),
	)
	f.Comment("Raise queues a follow-up event that runs after the current one, under the same Fire call.")
	f.Func().Params(Id("f").Op("*").Id("Firing").Types(Id("A"))).Id("Raise").Params(Id("e").Id("Event"), Id("arg").Id("A")).Error().Block(
		Return(Id("f").Dot("m").Dot("enqueue").Call(Id("e"), Id("arg"))),
	)

	doc(f, `Machine is one instance of the lifecycle. It is safe for concurrent use:
Fire serialises callers, and each caller gets the result of its own event.`)
	f.Type().Id("Machine").Types(Id("A").Any()).Struct(
		Id("mu").Qual("sync", "Mutex"),
		Id("state").Id("State"),
		Id("role").Qual(fsmPkg, "Role"),
		Id("hooks").Id("Hooks").Types(Id("A")),
		Id("observe").Func().Params(Id("Step")),
		Id("firing").Id("Firing").Types(Id("A")),
		Id("queue").Qual(fsmPkg, "Queue").Types(Id("Event"), Id("A")),
	)
	f.Comment("New returns a machine in the Initial state that performs the effects of role.")
	f.Func().Id("New").Types(Id("A").Any()).Params(Id("role").Qual(fsmPkg, "Role"), Id("hooks").Id("Hooks").Types(Id("A"))).Op("*").Id("Machine").Types(Id("A")).Block(
		Return(Op("&").Id("Machine").Types(Id("A")).Values(Dict{Id("state"): Id("Initial"), Id("role"): Id("role"), Id("hooks"): Id("hooks")})),
	)
	recv := func() *Statement { return Params(Id("m").Op("*").Id("Machine").Types(Id("A"))) }
	lock := []Code{Id("m").Dot("mu").Dot("Lock").Call(), Defer().Id("m").Dot("mu").Dot("Unlock").Call()}

	f.Comment("State returns the current state.")
	f.Func().Add(recv()).Id("State").Params().Id("State").Block(append(lock, Return(Id("m").Dot("state")))...)

	f.Comment("Observe registers fn to be called, with the lock held, after every step, including ignored and rejected ones (for logs, metrics and trace checks). Pass nil to remove it.")
	f.Func().Add(recv()).Id("Observe").Params(Id("fn").Func().Params(Id("Step"))).Block(append(lock, Id("m").Dot("observe").Op("=").Id("fn"))...)

	doc(f, `Fire handles event e with argument arg, then every follow-up event the
effects raised, in order, before returning (run to completion).

It returns nil when the event moved the machine, kept it in place or was
ignored; a *fsm.TransitionError when the spec rejects it (the state is
unchanged and queued follow-ups are dropped); a *fsm.EffectError when a hook
failed (the state has already moved, the rest of the effects did not run).`)
	f.Func().Add(recv()).Id("Fire").Params(Id("e").Id("Event"), Id("arg").Id("A")).Error().Block(append(lock,
		Err().Op(":=").Id("m").Dot("step").Call(Id("e"), Id("arg")),
		For(Err().Op("==").Nil()).Block(
			List(Id("next"), Id("nextArg"), Id("ok")).Op(":=").Id("m").Dot("queue").Dot("Pop").Call(),
			If(Op("!").Id("ok")).Block(Break()),
			Err().Op("=").Id("m").Dot("step").Call(Id("next"), Id("nextArg")),
		),
		Comment("An error ends the run: drop the follow-ups it left behind."),
		Id("m").Dot("queue").Dot("Clear").Call(),
		Comment("Only the argument can hold on to caller memory; the rest is overwritten by the next step."),
		Var().Id("zero").Id("A"),
		Id("m").Dot("firing").Dot("Arg").Op("=").Id("zero"),
		Return(Err()),
	)...)

	f.Func().Add(recv()).Id("enqueue").Params(Id("e").Id("Event"), Id("arg").Id("A")).Error().Block(
		If(Op("!").Id("m").Dot("queue").Dot("Push").Call(Id("e"), Id("arg"))).Block(
			Return(Op("&").Qual(fsmPkg, "QueueError").Values(Dict{Id("Machine"): Id("Name"), Id("Event"): Id("e").Dot("String").Call()})),
		),
		Return(Nil()),
	)

	f.Func().Add(recv()).Id("step").Params(Id("e").Id("Event"), Id("arg").Id("A")).Error().Block(
		Id("s").Op(":=").Id("m").Dot("state"),
		If(Op("!").Id("e").Dot("Valid").Call()).Block(Return(Id("check").Call(Id("s"), Id("e")))),
		Comment("Field by field: assigning a whole Firing literal costs a stalled copy on every event."),
		Id("fr").Op(":=").Op("&").Id("m").Dot("firing"),
		Id("fr").Dot("From").Op(",").Id("fr").Dot("Event").Op(",").Id("fr").Dot("To").Op(",").Id("fr").Dot("Arg").Op(",").Id("fr").Dot("Role").Op(",").Id("fr").Dot("m").Op("=").Id("s").Op(",").Id("e").Op(",").Id("s").Op(",").Id("arg").Op(",").Id("m").Dot("role").Op(",").Id("m"),
		For(Id("i").Op(":=").Range().Id("table").Index(Id("s")).Index(Id("e"))).Block(
			Id("c").Op(":=").Op("&").Id("table").Index(Id("s")).Index(Id("e")).Index(Id("i")),
			If(Id("c").Dot("guard").Op("!=").Lit(0).Op("&&").Op("!").Id("m").Dot("guard").Call(Id("c").Dot("guard"), Id("fr"))).Block(Continue()),
			If(Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Moved").Op("||").Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Stayed")).Block(
				Id("m").Dot("state").Op(",").Id("fr").Dot("To").Op("=").Id("c").Dot("to").Op(",").Id("c").Dot("to"),
			),
			If(Id("m").Dot("observe").Op("!=").Nil()).Block(
				Id("m").Dot("observe").Call(Id("Step").Values(Id("c"))),
			),
			If(Id("c").Dot("err").Op("!=").Nil()).Block(Return(Id("c").Dot("err"))),
			For(Id("j").Op(":=").Range().Id("c").Dot("effects")).Block(
				Id("ef").Op(":=").Op("&").Id("c").Dot("effects").Index(Id("j")),
				If(Op("!").Id("m").Dot("role").Dot("Performs").Call(Id("ef").Dot("Role"))).Block(Continue()),
				If(Err().Op(":=").Id("m").Dot("perform").Call(Id("fr"), Id("ef")), Err().Op("!=").Nil()).Block(
					Return(Op("&").Qual(fsmPkg, "EffectError").Values(Dict{Id("Machine"): Id("Name"), Id("From"): Id("s").Dot("String").Call(), Id("Event"): Id("e").Dot("String").Call(), Id("To"): Id("c").Dot("to").Dot("String").Call(), Id("Effect"): Id("ef").Dot("String").Call(), Id("Err"): Err()})),
				),
			),
			Return(Nil()),
		),
		Return(Nil()),
	)

	var guardCases []Code
	for _, g := range m.Guards {
		guardCases = append(guardCases, Case(Id(guardConst(g))).Block(Return(Id("m").Dot("hooks").Dot(guardMethod(g)).Call(Id("fr")))))
	}
	f.Func().Add(recv()).Id("guard").Params(Id("g").Id("Guard"), Id("fr").Op("*").Id("Firing").Types(Id("A"))).Bool().Block(
		Switch(Id("g")).Block(guardCases...),
		Return(False()),
	)

	var sendCases, actionCases []Code
	for _, msg := range m.SentMessages() {
		sendCases = append(sendCases, Case(Id(messageConst(msg))).Block(Return(Id("m").Dot("hooks").Dot(sendMethod(msg)).Call(Id("fr")))))
	}
	for _, a := range m.Actions {
		actionCases = append(actionCases, Case(Id(actionConst(a))).Block(Return(Id("m").Dot("hooks").Dot(actionMethod(a)).Call(Id("fr")))))
	}
	var kinds []Code
	if len(sendCases) > 0 {
		kinds = append(kinds, Case(Qual(fsmPkg, "EffectSend")).Block(Switch(Id("ef").Dot("Message")).Block(sendCases...)))
	}
	if len(m.Timers()) > 0 {
		kinds = append(kinds,
			Case(Qual(fsmPkg, "EffectStart")).Block(Return(Id("m").Dot("hooks").Dot("StartTimer").Call(Id("fr"), Id("ef").Dot("Timer")))),
			Case(Qual(fsmPkg, "EffectStop")).Block(Return(Id("m").Dot("hooks").Dot("StopTimer").Call(Id("fr"), Id("ef").Dot("Timer")))),
		)
	}
	if len(actionCases) > 0 {
		kinds = append(kinds, Case(Qual(fsmPkg, "EffectDo")).Block(Switch(Id("ef").Dot("Action")).Block(actionCases...)))
	}
	kinds = append(kinds, Case(Qual(fsmPkg, "EffectRaise")).Block(Return(Id("m").Dot("enqueue").Call(Id("ef").Dot("Raise"), Id("fr").Dot("Arg")))))
	f.Func().Add(recv()).Id("perform").Params(Id("fr").Op("*").Id("Firing").Types(Id("A")), Id("ef").Op("*").Id("Effect")).Error().Block(
		Switch(Id("ef").Dot("Kind")).Block(kinds...),
		Return(Nil()),
	)

	doc(f, `Restore puts the machine in the state saved under name (State.String) and
returns the timers that state keeps armed, which the peer must re-arm. It
runs no hook and no effect.`)
	f.Func().Add(recv()).Id("Restore").Params(Id("name").String()).Params(Index().Id("Timer"), Error()).Block(
		List(Id("s"), Err()).Op(":=").Id("ParseState").Call(Id("name")),
		If(Err().Op("!=").Nil()).Block(Return(Nil(), Err())),
		Id("m").Dot("mu").Dot("Lock").Call(),
		Defer().Id("m").Dot("mu").Dot("Unlock").Call(),
		Id("m").Dot("state").Op("=").Id("s"),
		Return(Id("s").Dot("Timers").Call(), Nil()),
	)
}

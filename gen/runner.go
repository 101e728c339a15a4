package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// machineDecls writes Firing and Machine: the part that runs guards and
// effects through Hooks, serialises callers and queues follow-up events.
func machineDecls(f *jen.File, m *spec.Machine) {
	f.Comment("Firing describes the event being handled; hooks receive it.")
	f.Type().Id("Firing").Types(jen.Id("A").Any()).Struct(
		jen.Id("From").Id("State"),
		jen.Id("Event").Id("Event"),
		jen.Id("To").Id("State").Comment("the target while effects run; equals From while guards run"),
		jen.Id("Arg").Id("A").Comment("the argument passed to Fire or Raise, e.g. the decoded frame"),
		jen.Id("Role").Qual(fsmPkg, "Role"),
		jen.Id("m").Op("*").Id("Machine").Types(jen.Id("A")),
	)
	f.Comment("Raise queues a follow-up event that runs after the current one, under the same Fire call.")
	f.Func().Params(jen.Id("f").Op("*").Id("Firing").Types(jen.Id("A"))).Id("Raise").Params(jen.Id("e").Id("Event"), jen.Id("arg").Id("A")).Error().Block(
		jen.Return(jen.Id("f").Dot("m").Dot("enqueue").Call(jen.Id("e"), jen.Id("arg"))),
	)

	doc(f, `Machine is one instance of the lifecycle. It is safe for concurrent use:
Fire serialises callers, and each caller gets the result of its own event.`)
	f.Type().Id("Machine").Types(jen.Id("A").Any()).Struct(
		jen.Id("mu").Qual("sync", "Mutex"),
		jen.Id("state").Id("State"),
		jen.Id("role").Qual(fsmPkg, "Role"),
		jen.Id("hooks").Id("Hooks").Types(jen.Id("A")),
		jen.Id("observe").Func().Params(jen.Id("Step")),
		jen.Id("firing").Id("Firing").Types(jen.Id("A")),
		jen.Id("queue").Qual(fsmPkg, "Queue").Types(jen.Id("Event"), jen.Id("A")),
	)
	f.Comment("New returns a machine in the Initial state that performs the effects of role.")
	f.Func().Id("New").Types(jen.Id("A").Any()).Params(jen.Id("role").Qual(fsmPkg, "Role"), jen.Id("hooks").Id("Hooks").Types(jen.Id("A"))).Op("*").Id("Machine").Types(jen.Id("A")).Block(
		jen.Return(jen.Op("&").Id("Machine").Types(jen.Id("A")).Values(jen.Dict{jen.Id("state"): jen.Id("Initial"), jen.Id("role"): jen.Id("role"), jen.Id("hooks"): jen.Id("hooks")})),
	)
	recv := func() *jen.Statement { return jen.Params(jen.Id("m").Op("*").Id("Machine").Types(jen.Id("A"))) }
	lock := []jen.Code{jen.Id("m").Dot("mu").Dot("Lock").Call(), jen.Defer().Id("m").Dot("mu").Dot("Unlock").Call()}

	f.Comment("State returns the current state.")
	f.Func().Add(recv()).Id("State").Params().Id("State").Block(append(lock, jen.Return(jen.Id("m").Dot("state")))...)

	f.Comment("Observe registers fn to be called, with the lock held, after every step, including ignored and rejected ones (for logs, metrics and trace checks). Pass nil to remove it.")
	f.Func().Add(recv()).Id("Observe").Params(jen.Id("fn").Func().Params(jen.Id("Step"))).Block(append(lock, jen.Id("m").Dot("observe").Op("=").Id("fn"))...)

	doc(f, `Fire handles event e with argument arg, then every follow-up event the
effects raised, in order, before returning (run to completion).

It returns nil when the event moved the machine, kept it in place or was
ignored; a *fsm.TransitionError when the spec rejects it (the state is
unchanged and queued follow-ups are dropped); a *fsm.EffectError when a hook
failed (the state has already moved, the rest of the effects did not run).`)
	f.Func().Add(recv()).Id("Fire").Params(jen.Id("e").Id("Event"), jen.Id("arg").Id("A")).Error().Block(append(lock,
		jen.Err().Op(":=").Id("m").Dot("step").Call(jen.Id("e"), jen.Id("arg")),
		jen.For(jen.Err().Op("==").Nil()).Block(
			jen.List(jen.Id("next"), jen.Id("nextArg"), jen.Id("ok")).Op(":=").Id("m").Dot("queue").Dot("Pop").Call(),
			jen.If(jen.Op("!").Id("ok")).Block(jen.Break()),
			jen.Err().Op("=").Id("m").Dot("step").Call(jen.Id("next"), jen.Id("nextArg")),
		),
		jen.Comment("An error ends the run: drop the follow-ups it left behind."),
		jen.Id("m").Dot("queue").Dot("Clear").Call(),
		jen.Comment("Only the argument can hold on to caller memory; the rest is overwritten by the next step."),
		jen.Var().Id("zero").Id("A"),
		jen.Id("m").Dot("firing").Dot("Arg").Op("=").Id("zero"),
		jen.Return(jen.Err()),
	)...)

	f.Func().Add(recv()).Id("enqueue").Params(jen.Id("e").Id("Event"), jen.Id("arg").Id("A")).Error().Block(
		jen.If(jen.Op("!").Id("m").Dot("queue").Dot("Push").Call(jen.Id("e"), jen.Id("arg"))).Block(
			jen.Return(jen.Op("&").Qual(fsmPkg, "QueueError").Values(jen.Dict{jen.Id("Machine"): jen.Id("Name"), jen.Id("Event"): jen.Id("e").Dot("String").Call()})),
		),
		jen.Return(jen.Nil()),
	)

	f.Func().Add(recv()).Id("step").Params(jen.Id("e").Id("Event"), jen.Id("arg").Id("A")).Error().Block(
		jen.Id("s").Op(":=").Id("m").Dot("state"),
		jen.If(jen.Op("!").Id("e").Dot("Valid").Call()).Block(jen.Return(jen.Id("check").Call(jen.Id("s"), jen.Id("e")))),
		jen.Comment("Field by field: assigning a whole Firing literal costs a stalled copy on every event."),
		jen.Id("fr").Op(":=").Op("&").Id("m").Dot("firing"),
		jen.Id("fr").Dot("From").Op(",").Id("fr").Dot("Event").Op(",").Id("fr").Dot("To").Op(",").Id("fr").Dot("Arg").Op(",").Id("fr").Dot("Role").Op(",").Id("fr").Dot("m").Op("=").Id("s").Op(",").Id("e").Op(",").Id("s").Op(",").Id("arg").Op(",").Id("m").Dot("role").Op(",").Id("m"),
		jen.For(jen.Id("i").Op(":=").Range().Id("table").Index(jen.Id("s")).Index(jen.Id("e"))).Block(
			jen.Id("c").Op(":=").Op("&").Id("table").Index(jen.Id("s")).Index(jen.Id("e")).Index(jen.Id("i")),
			jen.If(jen.Id("c").Dot("guard").Op("!=").Lit(0).Op("&&").Op("!").Id("m").Dot("guard").Call(jen.Id("c").Dot("guard"), jen.Id("fr"))).Block(jen.Continue()),
			jen.If(jen.Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Moved").Op("||").Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Stayed")).Block(
				jen.Id("m").Dot("state").Op(",").Id("fr").Dot("To").Op("=").Id("c").Dot("to").Op(",").Id("c").Dot("to"),
			),
			jen.If(jen.Id("m").Dot("observe").Op("!=").Nil()).Block(
				jen.Id("m").Dot("observe").Call(jen.Id("Step").Values(jen.Id("c"))),
			),
			jen.If(jen.Id("c").Dot("err").Op("!=").Nil()).Block(jen.Return(jen.Id("c").Dot("err"))),
			jen.For(jen.Id("j").Op(":=").Range().Id("c").Dot("effects")).Block(
				jen.Id("ef").Op(":=").Op("&").Id("c").Dot("effects").Index(jen.Id("j")),
				jen.If(jen.Op("!").Id("m").Dot("role").Dot("Performs").Call(jen.Id("ef").Dot("Role"))).Block(jen.Continue()),
				jen.If(jen.Err().Op(":=").Id("m").Dot("perform").Call(jen.Id("fr"), jen.Id("ef")), jen.Err().Op("!=").Nil()).Block(
					jen.Return(jen.Op("&").Qual(fsmPkg, "EffectError").Values(jen.Dict{jen.Id("Machine"): jen.Id("Name"), jen.Id("From"): jen.Id("s").Dot("String").Call(), jen.Id("Event"): jen.Id("e").Dot("String").Call(), jen.Id("To"): jen.Id("c").Dot("to").Dot("String").Call(), jen.Id("Effect"): jen.Id("ef").Dot("String").Call(), jen.Id("Err"): jen.Err()})),
				),
			),
			jen.Return(jen.Nil()),
		),
		jen.Return(jen.Nil()),
	)

	var guardCases []jen.Code
	for _, g := range m.Guards {
		guardCases = append(guardCases, jen.Case(jen.Id(guardConst(g))).Block(jen.Return(jen.Id("m").Dot("hooks").Dot(guardMethod(g)).Call(jen.Id("fr")))))
	}
	f.Func().Add(recv()).Id("guard").Params(jen.Id("g").Id("Guard"), jen.Id("fr").Op("*").Id("Firing").Types(jen.Id("A"))).Bool().Block(
		jen.Switch(jen.Id("g")).Block(guardCases...),
		jen.Return(jen.False()),
	)

	var sendCases, actionCases []jen.Code
	for _, msg := range m.SentMessages() {
		sendCases = append(sendCases, jen.Case(jen.Id(messageConst(msg))).Block(jen.Return(jen.Id("m").Dot("hooks").Dot(sendMethod(msg)).Call(jen.Id("fr")))))
	}
	for _, a := range m.Actions {
		actionCases = append(actionCases, jen.Case(jen.Id(actionConst(a))).Block(jen.Return(jen.Id("m").Dot("hooks").Dot(actionMethod(a)).Call(jen.Id("fr")))))
	}
	var kinds []jen.Code
	if len(sendCases) > 0 {
		kinds = append(kinds, jen.Case(jen.Qual(fsmPkg, "EffectSend")).Block(jen.Switch(jen.Id("ef").Dot("Message")).Block(sendCases...)))
	}
	if len(m.Timers()) > 0 {
		kinds = append(kinds,
			jen.Case(jen.Qual(fsmPkg, "EffectStart")).Block(jen.Return(jen.Id("m").Dot("hooks").Dot("StartTimer").Call(jen.Id("fr"), jen.Id("ef").Dot("Timer")))),
			jen.Case(jen.Qual(fsmPkg, "EffectStop")).Block(jen.Return(jen.Id("m").Dot("hooks").Dot("StopTimer").Call(jen.Id("fr"), jen.Id("ef").Dot("Timer")))),
		)
	}
	if len(actionCases) > 0 {
		kinds = append(kinds, jen.Case(jen.Qual(fsmPkg, "EffectDo")).Block(jen.Switch(jen.Id("ef").Dot("Action")).Block(actionCases...)))
	}
	kinds = append(kinds, jen.Case(jen.Qual(fsmPkg, "EffectRaise")).Block(jen.Return(jen.Id("m").Dot("enqueue").Call(jen.Id("ef").Dot("Raise"), jen.Id("fr").Dot("Arg")))))
	f.Func().Add(recv()).Id("perform").Params(jen.Id("fr").Op("*").Id("Firing").Types(jen.Id("A")), jen.Id("ef").Op("*").Id("Effect")).Error().Block(
		jen.Switch(jen.Id("ef").Dot("Kind")).Block(kinds...),
		jen.Return(jen.Nil()),
	)

	doc(f, `Restore puts the machine in the state saved under name (State.String) and
returns the timers that state keeps armed, which the peer must re-arm. It
runs no hook and no effect.`)
	f.Func().Add(recv()).Id("Restore").Params(jen.Id("name").String()).Params(jen.Index().Id("Timer"), jen.Error()).Block(
		jen.List(jen.Id("s"), jen.Err()).Op(":=").Id("ParseState").Call(jen.Id("name")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("m").Dot("mu").Dot("Lock").Call(),
		jen.Defer().Id("m").Dot("mu").Dot("Unlock").Call(),
		jen.Id("m").Dot("state").Op("=").Id("s"),
		jen.Return(jen.Id("s").Dot("Timers").Call(), jen.Nil()),
	)
}

package gen

import (
	. "github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

const (
	requirePkg = "github.com/stretchr/testify/require"
	fsmtestPkg = "github.com/agentwire/agentwire/fsm/fsmtest"
)

// testFile renders fsm/<machine>/<machine>_test.go. The expectations in
// cellCases and pathCases are literals computed from the spec at generation
// time; the other tests compare the machine with two independent
// implementations (the spec interpreter and looplab/fsm) at test time.
func testFile(m *spec.Machine) *File {
	f := NewFile(m.Name)
	f.HeaderComment(header(m))
	f.ImportName(fsmPkg, "fsm")
	f.ImportName(requirePkg, "require")
	f.ImportName(fsmtestPkg, "fsmtest")

	f.Const().Id("specFile").Op("=").Lit("../../" + m.Pos.File)
	recorderDecl(f, m)
	adapterDecl(f)
	cellCasesDecl(f, m)
	pathCasesDecl(f, m)
	cellTests(f)
	propertyTests(f)
	lifecycleTests(f, m)
	return f
}

func recorderDecl(f *File, m *spec.Machine) {
	f.Comment("recorder implements Hooks: guards answer from held, effects are logged in spec form, and the effect named fail returns errHook. raise, when set, is called from inside every hook: it exercises follow-up events.")
	f.Type().Id("recorder").Struct(
		Id("held").Id("GuardSet"),
		Id("log").Index().String(),
		Id("fail").String(),
		Id("raise").Func().Params(Op("*").Id("Firing").Types(Int())).Error(),
	)
	f.Var().Id("errHook").Op("=").Qual("errors", "New").Call(Lit("hook failed"))
	f.Var().Id("_").Id("Hooks").Types(Int()).Op("=").Parens(Op("*").Id("recorder")).Parens(Nil())
	f.Func().Params(Id("r").Op("*").Id("recorder")).Id("record").Params(Id("f").Op("*").Id("Firing").Types(Int()), Id("effect").String()).Error().Block(
		Id("r").Dot("log").Op("=").Append(Id("r").Dot("log"), Id("effect")),
		If(Id("effect").Op("==").Id("r").Dot("fail")).Block(Return(Id("errHook"))),
		If(Id("r").Dot("raise").Op("!=").Nil()).Block(Return(Id("r").Dot("raise").Call(Id("f")))),
		Return(Nil()),
	)
	fp := func() Code { return Id("f").Op("*").Id("Firing").Types(Int()) }
	for _, g := range m.Guards {
		f.Func().Params(Id("r").Op("*").Id("recorder")).Id(guardMethod(g)).Params(fp()).Bool().Block(
			Return(Id("r").Dot("held").Dot("Has").Call(Id(guardConst(g)))),
		)
	}
	for _, msg := range m.SentMessages() {
		f.Func().Params(Id("r").Op("*").Id("recorder")).Id(sendMethod(msg)).Params(fp()).Error().Block(
			Return(Id("r").Dot("record").Call(Id("f"), Lit("send "+msg))),
		)
	}
	if len(m.Timers()) > 0 {
		for _, verb := range []string{"Start", "Stop"} {
			f.Func().Params(Id("r").Op("*").Id("recorder")).Id(verb+"Timer").Params(fp(), Id("t").Id("Timer")).Error().Block(
				Return(Id("r").Dot("record").Call(Id("f"), Lit(lowerFirst(verb)+" ").Op("+").Id("t").Dot("String").Call())),
			)
		}
	}
	for _, a := range m.Actions {
		f.Func().Params(Id("r").Op("*").Id("recorder")).Id(actionMethod(a)).Params(fp()).Error().Block(
			Return(Id("r").Dot("record").Call(Id("f"), Lit("do "+a.Name))),
		)
	}
}

func adapterDecl(f *File) {
	f.Comment("adapter exposes Transition to fsmtest in spec names.")
	f.Func().Id("adapter").Params(Id("t").Op("*").Qual("testing", "T")).Qual(fsmtestPkg, "Adapter").Block(
		Return(Qual(fsmtestPkg, "Adapter").Values(Dict{Id("Transition"): Func().Params(List(Id("state"), Id("event")).String(), Id("held").Index().String()).Qual(fsmtestPkg, "Result").Block(
			List(Id("s"), Err()).Op(":=").Id("ParseState").Call(Id("state")),
			Qual(requirePkg, "NoError").Call(Id("t"), Err()),
			List(Id("e"), Err()).Op(":=").Id("ParseEvent").Call(Id("event")),
			Qual(requirePkg, "NoError").Call(Id("t"), Err()),
			Var().Id("gs").Id("GuardSet"),
			For(List(Id("_"), Id("name")).Op(":=").Range().Id("held")).Block(
				List(Id("g"), Err()).Op(":=").Id("ParseGuard").Call(Id("name")),
				Qual(requirePkg, "NoError").Call(Id("t"), Err()),
				Id("gs").Op("=").Id("gs").Dot("With").Call(Id("g")),
			),
			List(Id("step"), Err()).Op(":=").Id("Transition").Call(Id("s"), Id("e"), Id("gs")),
			Id("res").Op(":=").Qual(fsmtestPkg, "Result").Values(Dict{Id("To"): Id("step").Dot("To").Call().Dot("String").Call(), Id("Disposition"): Id("step").Dot("Disposition").Call(), Id("Err"): Err()}),
			If(Id("step").Dot("Guard").Call().Op("!=").Lit(0)).Block(Id("res").Dot("Guard").Op("=").Id("step").Dot("Guard").Call().Dot("String").Call()),
			For(List(Id("_"), Id("ef")).Op(":=").Range().Id("step").Dot("Effects").Call()).Block(
				Id("res").Dot("Effects").Op("=").Append(Id("res").Dot("Effects"), Id("ef").Dot("String").Call()),
			),
			Return(Id("res")),
		)})),
	)
}

// hookLog is what a recorder running for role logs for a rule's effects.
func hookLog(r *spec.Rule, role spec.Role) []Code {
	var out []Code
	for _, ef := range r.Effects {
		if ef.Kind == spec.EffectRaise {
			continue
		}
		if role != spec.RoleBoth && ef.Role != spec.RoleBoth && ef.Role != role {
			continue
		}
		bare := *ef
		bare.Role = spec.RoleBoth
		out = append(out, Lit(bare.String()))
	}
	return out
}

func strs(xs []Code) Code {
	if len(xs) == 0 {
		return Nil()
	}
	return Index().String().Values(xs...)
}

func cellCasesDecl(f *File, m *spec.Machine) {
	f.Type().Id("cellCase").Struct(
		Id("line").String(),
		Id("from").Id("State"),
		Id("event").Id("Event"),
		Id("held").Id("GuardSet"),
		Id("disp").Qual(fsmPkg, "Disposition"),
		Id("to").Id("State"),
		Id("guard").Id("Guard"),
		Id("effects").Index().String(),
		Id("both").Op(",").Id("core").Op(",").Id("runtime").Index().String(),
		Id("raises").Bool(),
	)
	var cases []Code
	for _, s := range m.States {
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				d := Dict{
					Id("line"):  Lit(r.Pos.String()),
					Id("from"):  Id(stateConst(s)),
					Id("event"): Id(eventConst(e)),
					Id("disp"):  Qual(fsmPkg, disposition(r)),
				}
				to := s
				if r.Kind == spec.RuleGoto {
					to = r.To
				}
				d[Id("to")] = Id(stateConst(to))
				if r.Guard != nil {
					d[Id("held")] = Id("GuardSet").Call(Lit(0)).Dot("With").Call(Id(guardConst(r.Guard)))
					d[Id("guard")] = Id(guardConst(r.Guard))
				}
				if len(r.Effects) > 0 {
					var efs []Code
					raises := false
					for _, ef := range r.Effects {
						efs = append(efs, Lit(ef.String()))
						raises = raises || ef.Kind == spec.EffectRaise
					}
					d[Id("effects")] = strs(efs)
					d[Id("both")] = strs(hookLog(r, spec.RoleBoth))
					d[Id("core")] = strs(hookLog(r, spec.RoleCore))
					d[Id("runtime")] = strs(hookLog(r, spec.RoleRuntime))
					if raises {
						d[Id("raises")] = True()
					}
				}
				cases = append(cases, Values(d))
			}
		}
	}
	f.Comment("cellCases has one entry per candidate of every cell, computed from the spec when the code was generated.")
	f.Var().Id("cellCases").Op("=").Index().Id("cellCase").Values(cases...)
}

func pathCasesDecl(f *File, m *spec.Machine) {
	f.Type().Id("pathStep").Struct(Id("event").Id("Event"), Id("held").Id("GuardSet"))
	paths := m.Paths()
	var cases []Code
	for _, s := range m.States {
		var steps []Code
		for _, r := range paths[s] {
			d := Dict{Id("event"): Id(eventConst(r.Event))}
			if r.Guard != nil {
				d[Id("held")] = Id("GuardSet").Call(Lit(0)).Dot("With").Call(Id(guardConst(r.Guard)))
			}
			steps = append(steps, Values(d))
		}
		cases = append(cases, Values(Id(stateConst(s)), Index().Id("pathStep").Values(steps...)))
	}
	f.Comment("pathCases is a shortest path from Initial to every state.")
	f.Var().Id("pathCases").Op("=").Index().Struct(Id("target").Id("State"), Id("steps").Index().Id("pathStep")).Values(cases...)
}

func cellTests(f *File) {
	req := func(fn string, args ...Code) Code {
		return Qual(requirePkg, fn).Call(append([]Code{Id("t")}, args...)...)
	}
	f.Func().Id("TestEveryCell").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		For(List(Id("_"), Id("c")).Op(":=").Range().Id("cellCases")).Block(
			Id("where").Op(":=").Id("c").Dot("line").Op("+").Lit(": ").Op("+").Id("c").Dot("from").Dot("String").Call().Op("+").Lit(" on ").Op("+").Id("c").Dot("event").Dot("String").Call(),
			List(Id("step"), Id("trErr")).Op(":=").Id("Transition").Call(Id("c").Dot("from"), Id("c").Dot("event"), Id("c").Dot("held")),
			req("Equal", Id("c").Dot("disp"), Id("step").Dot("Disposition").Call(), Id("where")),
			req("Equal", Id("c").Dot("to"), Id("step").Dot("To").Call(), Id("where")),
			req("Equal", Id("c").Dot("guard"), Id("step").Dot("Guard").Call(), Id("where")),
			Var().Id("effects").Index().String(),
			For(List(Id("_"), Id("ef")).Op(":=").Range().Id("step").Dot("Effects").Call()).Block(Id("effects").Op("=").Append(Id("effects"), Id("ef").Dot("String").Call())),
			req("Equal", Id("c").Dot("effects"), Id("effects"), Id("where")),
			For(List(Id("_"), Id("role")).Op(":=").Range().Index().Qual(fsmPkg, "Role").Values(Qual(fsmPkg, "RoleBoth"), Qual(fsmPkg, "RoleCore"), Qual(fsmPkg, "RoleRuntime"))).Block(
				Id("rec").Op(":=").Op("&").Id("recorder").Values(Dict{Id("held"): Id("c").Dot("held")}),
				Id("m").Op(":=").Id("New").Types(Int()).Call(Id("role"), Id("rec")),
				List(Id("_"), Err()).Op(":=").Id("m").Dot("Restore").Call(Id("c").Dot("from").Dot("String").Call()),
				req("NoError", Err()),
				Id("fireErr").Op(":=").Id("m").Dot("Fire").Call(Id("c").Dot("event"), Lit(0)),
				If(Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Rejected")).Block(
					req("ErrorIs", Id("trErr"), Qual(fsmPkg, "ErrRejected"), Id("where")),
					req("ErrorIs", Id("fireErr"), Qual(fsmPkg, "ErrRejected"), Id("where")),
					Var().Id("te").Op("*").Qual(fsmPkg, "TransitionError"),
					req("ErrorAs", Id("fireErr"), Op("&").Id("te"), Id("where")),
					req("Equal", Index().String().Values(Id("Name"), Id("c").Dot("from").Dot("String").Call(), Id("c").Dot("event").Dot("String").Call()), Index().String().Values(Id("te").Dot("Machine"), Id("te").Dot("State"), Id("te").Dot("Event")), Id("where")),
					req("Equal", Id("c").Dot("from"), Id("m").Dot("State").Call(), Lit("a rejected event must leave the state unchanged: ").Op("+").Id("where")),
					Continue(),
				),
				req("NoError", Id("trErr"), Id("where")),
				req("NoError", Id("fireErr"), Id("where")),
				If(Id("c").Dot("raises")).Block(Continue().Comment("follow-ups move the machine further; covered by the walk tests")),
				req("Equal", Id("c").Dot("to"), Id("m").Dot("State").Call(), Id("where")),
				Id("want").Op(":=").Map(Qual(fsmPkg, "Role")).Index().String().Values(Dict{Qual(fsmPkg, "RoleBoth"): Id("c").Dot("both"), Qual(fsmPkg, "RoleCore"): Id("c").Dot("core"), Qual(fsmPkg, "RoleRuntime"): Id("c").Dot("runtime")}).Index(Id("role")),
				req("Equal", Id("want"), Id("rec").Dot("log"), Lit("hooks run for role ").Op("+").Id("role").Dot("String").Call().Op("+").Lit(": ").Op("+").Id("where")),
			),
		),
	)
	f.Func().Id("TestShortestPaths").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		For(List(Id("_"), Id("p")).Op(":=").Range().Id("pathCases")).Block(
			Id("rec").Op(":=").Op("&").Id("recorder").Values(),
			Id("m").Op(":=").Id("New").Types(Int()).Call(Qual(fsmPkg, "RoleBoth"), Id("rec")),
			For(List(Id("_"), Id("st")).Op(":=").Range().Id("p").Dot("steps")).Block(
				Id("rec").Dot("held").Op("=").Id("st").Dot("held"),
				req("NoError", Id("m").Dot("Fire").Call(Id("st").Dot("event"), Lit(0)), Lit("path to ").Op("+").Id("p").Dot("target").Dot("String").Call()),
			),
			req("Equal", Id("p").Dot("target"), Id("m").Dot("State").Call()),
		),
	)
}

func propertyTests(f *File) {
	load := List(Id("m")).Op(":=").Qual(fsmtestPkg, "LoadMachine").Call(Id("t"), Id("specFile"))
	f.Comment("TestEveryCellAgainstSpec compares every cell, under every guard assignment, with the spec interpreter reading the YAML at test time.")
	f.Func().Id("TestEveryCellAgainstSpec").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		load, Qual(fsmtestPkg, "EveryCellAgainstSpec").Call(Id("t"), Id("m"), Id("adapter").Call(Id("t"))),
	)
	f.Func().Id("TestRandomWalkAgainstSpec").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		load,
		For(Id("seed").Op(":=").Uint64().Call(Lit(1)), Id("seed").Op("<=").Lit(8), Id("seed").Op("++")).Block(
			Qual(fsmtestPkg, "RandomWalk").Call(Id("t"), Id("m"), Id("adapter").Call(Id("t")), Id("seed"), Lit(2000)),
		),
	)
	f.Func().Id("TestDifferentialLooplab").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		load, Qual(fsmtestPkg, "DifferentialLooplab").Call(Id("t"), Id("m"), Id("adapter").Call(Id("t"))),
	)
}

func lifecycleTests(f *File, m *spec.Machine) {
	req := func(fn string, args ...Code) Code {
		return Qual(requirePkg, fn).Call(append([]Code{Id("t")}, args...)...)
	}
	var restore []Code
	for _, s := range m.States {
		restore = append(restore, Id(stateConst(s)))
	}
	f.Func().Id("TestRestoreAndParse").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		For(List(Id("_"), Id("s")).Op(":=").Range().Index().Id("State").Values(restore...)).Block(
			Id("m").Op(":=").Id("New").Types(Int()).Call(Qual(fsmPkg, "RoleBoth"), Op("&").Id("recorder").Values()),
			List(Id("timers"), Err()).Op(":=").Id("m").Dot("Restore").Call(Id("s").Dot("String").Call()),
			req("NoError", Err()),
			req("Equal", Id("s"), Id("m").Dot("State").Call()),
			req("Equal", Id("s").Dot("Timers").Call(), Id("timers")),
			List(Id("back"), Err()).Op(":=").Id("ParseState").Call(Id("s").Dot("String").Call()),
			req("NoError", Err()),
			req("Equal", Id("s"), Id("back")),
		),
		For(Id("e").Op(":=").Id("Event").Call(Lit(1)), Id("e").Dot("Valid").Call(), Id("e").Op("++")).Block(
			List(Id("back"), Err()).Op(":=").Id("ParseEvent").Call(Id("e").Dot("String").Call()),
			req("NoError", Err()),
			req("Equal", Id("e"), Id("back")),
		),
		List(Id("_"), Err()).Op(":=").Id("New").Types(Int()).Call(Qual(fsmPkg, "RoleBoth"), Op("&").Id("recorder").Values()).Dot("Restore").Call(Lit("no_such_state")),
		req("ErrorIs", Err(), Qual(fsmPkg, "ErrInvalid")),
		req("Equal", Lit("State(0)"), Id("State").Call(Lit(0)).Dot("String").Call()),
		List(Id("_"), Err()).Op("=").Id("Transition").Call(Id("Initial"), Id("Event").Call(Lit(0)), Lit(0)),
		req("ErrorIs", Err(), Qual(fsmPkg, "ErrInvalid")),
	)

	f.Comment("TestConcurrentFire fires from several goroutines at once: every step the observer sees must start where the previous one ended, which holds only if Fire serialises its callers.")
	f.Func().Id("TestConcurrentFire").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		For(Id("round").Op(":=").Lit(0), Id("round").Op("<").Lit(20), Id("round").Op("++")).Block(
			Id("m").Op(":=").Id("New").Types(Int()).Call(Qual(fsmPkg, "RoleBoth"), Op("&").Id("recorder").Values(Dict{Id("held"): Id("GuardSet").Call(Id("round"))})),
			Var().Id("steps").Index().Id("Step"),
			Id("m").Dot("Observe").Call(Func().Params(Id("s").Id("Step")).Block(Id("steps").Op("=").Append(Id("steps"), Id("s")))),
			Var().Id("wg").Qual("sync", "WaitGroup"),
			For(Id("g").Op(":=").Lit(0), Id("g").Op("<").Lit(4), Id("g").Op("++")).Block(
				Id("wg").Dot("Go").Call(Func().Params().Block(
					Id("rng").Op(":=").Qual("math/rand/v2", "New").Call(Qual("math/rand/v2", "NewPCG").Call(Uint64().Call(Id("round")), Uint64().Call(Id("g")))),
					For(Id("i").Op(":=").Lit(0), Id("i").Op("<").Lit(50), Id("i").Op("++")).Block(
						Id("_").Op("=").Id("m").Dot("Fire").Call(Id("Event").Call(Lit(1).Op("+").Id("rng").Dot("IntN").Call(Id("numEvents"))), Id("i")),
					),
				)),
			),
			Id("wg").Dot("Wait").Call(),
			req("GreaterOrEqual", Len(Id("steps")), Lit(200)),
			Id("at").Op(":=").Id("Initial"),
			For(List(Id("_"), Id("s")).Op(":=").Range().Id("steps")).Block(
				req("Equal", Id("at"), Id("s").Dot("From").Call()),
				Id("at").Op("=").Id("s").Dot("To").Call(),
			),
			req("Equal", Id("at"), Id("m").Dot("State").Call()),
		),
	)

	// Pick a cell whose effects call a hook, to test effect failures and
	// follow-up events raised from inside a hook.
	var hooked *spec.Rule
	for _, r := range m.Rules {
		if r.Kind == spec.RuleGoto && r.Guard == nil && len(hookLog(r, spec.RoleBoth)) > 0 {
			hooked = r
			break
		}
	}
	if hooked == nil {
		return
	}
	first := hookLog(hooked, spec.RoleBoth)[0]
	f.Comment("TestEffectError makes the first hook of " + hooked.Pos.String() + " fail: the state has moved and the error names the effect.")
	f.Func().Id("TestEffectError").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		Id("m").Op(":=").Id("New").Types(Int()).Call(Qual(fsmPkg, "RoleBoth"), Op("&").Id("recorder").Values(Dict{Id("fail"): first})),
		List(Id("_"), Err()).Op(":=").Id("m").Dot("Restore").Call(Lit(hooked.From.Name)),
		req("NoError", Err()),
		Err().Op("=").Id("m").Dot("Fire").Call(Id(eventConst(hooked.Event)), Lit(0)),
		req("ErrorIs", Err(), Qual(fsmPkg, "ErrEffect")),
		req("ErrorIs", Err(), Id("errHook")),
		Var().Id("ee").Op("*").Qual(fsmPkg, "EffectError"),
		req("ErrorAs", Err(), Op("&").Id("ee")),
		req("Equal", Id(stateConst(hooked.To)), Id("m").Dot("State").Call()),
	)

	// A follow-up from the hooked rule's target that is accepted there.
	var next *spec.Rule
	for _, e := range m.Events {
		for _, r := range m.Cell(hooked.To, e) {
			if r.Guard == nil && r.Kind == spec.RuleGoto && r.To != hooked.To {
				next = r
			}
		}
		if next != nil {
			break
		}
	}
	if next == nil {
		return
	}
	f.Comment("TestFollowUpFromHook raises " + next.Event.Name + " from inside a hook of " + hooked.Pos.String() + ": it runs after the current event, under the same Fire, without deadlocking.")
	f.Func().Id("TestFollowUpFromHook").Params(Id("t").Op("*").Qual("testing", "T")).Block(
		Id("rec").Op(":=").Op("&").Id("recorder").Values(),
		Id("raised").Op(":=").False(),
		Id("rec").Dot("raise").Op("=").Func().Params(Id("f").Op("*").Id("Firing").Types(Int())).Error().Block(
			If(Id("raised")).Block(Return(Nil())),
			Id("raised").Op("=").True(),
			Return(Id("f").Dot("Raise").Call(Id(eventConst(next.Event)), Lit(7))),
		),
		Id("m").Op(":=").Id("New").Types(Int()).Call(Qual(fsmPkg, "RoleBoth"), Id("rec")),
		List(Id("_"), Err()).Op(":=").Id("m").Dot("Restore").Call(Lit(hooked.From.Name)),
		req("NoError", Err()),
		req("NoError", Id("m").Dot("Fire").Call(Id(eventConst(hooked.Event)), Lit(0))),
		req("Equal", Id(stateConst(next.To)), Id("m").Dot("State").Call()),
		Comment("An unbounded chain of follow-ups fails instead of spinning."),
		Id("rec").Dot("raise").Op("=").Func().Params(Id("f").Op("*").Id("Firing").Types(Int())).Error().Block(
			For(Range().Qual(fsmPkg, "QueueCapacity").Op("+").Lit(1)).Block(
				If(Err().Op(":=").Id("f").Dot("Raise").Call(Id(eventConst(next.Event)), Lit(7)), Err().Op("!=").Nil()).Block(Return(Err())),
			),
			Return(Nil()),
		),
		List(Id("_"), Err()).Op("=").Id("m").Dot("Restore").Call(Lit(hooked.From.Name)),
		req("NoError", Err()),
		req("ErrorIs", Id("m").Dot("Fire").Call(Id(eventConst(hooked.Event)), Lit(0)), Qual(fsmPkg, "ErrQueueFull")),
	)
}

package gen

import (
	"github.com/dave/jennifer/jen"

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
func testFile(m *spec.Machine) *jen.File {
	f := jen.NewFile(m.Name)
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

func recorderDecl(f *jen.File, m *spec.Machine) {
	f.Comment("recorder implements Hooks: guards answer from held, effects are logged in spec form, and the effect named fail returns errHook. raise, when set, is called from inside every hook: it exercises follow-up events.")
	f.Type().Id("recorder").Struct(
		jen.Id("held").Id("GuardSet"),
		jen.Id("log").Index().String(),
		jen.Id("fail").String(),
		jen.Id("raise").Func().Params(jen.Op("*").Id("Firing").Types(jen.Int())).Error(),
	)
	f.Var().Id("errHook").Op("=").Qual("errors", "New").Call(jen.Lit("hook failed"))
	f.Var().Id("_").Id("Hooks").Types(jen.Int()).Op("=").Parens(jen.Op("*").Id("recorder")).Parens(jen.Nil())
	f.Func().Params(jen.Id("r").Op("*").Id("recorder")).Id("record").Params(jen.Id("f").Op("*").Id("Firing").Types(jen.Int()), jen.Id("effect").String()).Error().Block(
		jen.Id("r").Dot("log").Op("=").Append(jen.Id("r").Dot("log"), jen.Id("effect")),
		jen.If(jen.Id("effect").Op("==").Id("r").Dot("fail")).Block(jen.Return(jen.Id("errHook"))),
		jen.If(jen.Id("r").Dot("raise").Op("!=").Nil()).Block(jen.Return(jen.Id("r").Dot("raise").Call(jen.Id("f")))),
		jen.Return(jen.Nil()),
	)
	fp := func() jen.Code { return jen.Id("f").Op("*").Id("Firing").Types(jen.Int()) }
	for _, g := range m.Guards {
		f.Func().Params(jen.Id("r").Op("*").Id("recorder")).Id(guardMethod(g)).Params(fp()).Bool().Block(
			jen.Return(jen.Id("r").Dot("held").Dot("Has").Call(jen.Id(guardConst(g)))),
		)
	}
	for _, msg := range m.SentMessages() {
		f.Func().Params(jen.Id("r").Op("*").Id("recorder")).Id(sendMethod(msg)).Params(fp()).Error().Block(
			jen.Return(jen.Id("r").Dot("record").Call(jen.Id("f"), jen.Lit("send "+msg))),
		)
	}
	if len(m.Timers()) > 0 {
		for _, verb := range []string{"Start", "Stop"} {
			f.Func().Params(jen.Id("r").Op("*").Id("recorder")).Id(verb+"Timer").Params(fp(), jen.Id("t").Id("Timer")).Error().Block(
				jen.Return(jen.Id("r").Dot("record").Call(jen.Id("f"), jen.Lit(lowerFirst(verb)+" ").Op("+").Id("t").Dot("String").Call())),
			)
		}
	}
	for _, a := range m.Actions {
		f.Func().Params(jen.Id("r").Op("*").Id("recorder")).Id(actionMethod(a)).Params(fp()).Error().Block(
			jen.Return(jen.Id("r").Dot("record").Call(jen.Id("f"), jen.Lit("do "+a.Name))),
		)
	}
}

func adapterDecl(f *jen.File) {
	f.Comment("adapter exposes Transition to fsmtest in spec names.")
	f.Func().Id("adapter").Params(jen.Id("t").Op("*").Qual("testing", "T")).Qual(fsmtestPkg, "Adapter").Block(
		jen.Return(jen.Qual(fsmtestPkg, "Adapter").Values(jen.Dict{jen.Id("Transition"): jen.Func().Params(jen.List(jen.Id("state"), jen.Id("event")).String(), jen.Id("held").Index().String()).Qual(fsmtestPkg, "Result").Block(
			jen.List(jen.Id("s"), jen.Err()).Op(":=").Id("ParseState").Call(jen.Id("state")),
			jen.Qual(requirePkg, "NoError").Call(jen.Id("t"), jen.Err()),
			jen.List(jen.Id("e"), jen.Err()).Op(":=").Id("ParseEvent").Call(jen.Id("event")),
			jen.Qual(requirePkg, "NoError").Call(jen.Id("t"), jen.Err()),
			jen.Var().Id("gs").Id("GuardSet"),
			jen.For(jen.List(jen.Id("_"), jen.Id("name")).Op(":=").Range().Id("held")).Block(
				jen.List(jen.Id("g"), jen.Err()).Op(":=").Id("ParseGuard").Call(jen.Id("name")),
				jen.Qual(requirePkg, "NoError").Call(jen.Id("t"), jen.Err()),
				jen.Id("gs").Op("=").Id("gs").Dot("With").Call(jen.Id("g")),
			),
			jen.List(jen.Id("step"), jen.Err()).Op(":=").Id("Transition").Call(jen.Id("s"), jen.Id("e"), jen.Id("gs")),
			jen.Id("res").Op(":=").Qual(fsmtestPkg, "Result").Values(jen.Dict{jen.Id("To"): jen.Id("step").Dot("To").Call().Dot("String").Call(), jen.Id("Disposition"): jen.Id("step").Dot("Disposition").Call(), jen.Id("Err"): jen.Err()}),
			jen.If(jen.Id("step").Dot("Guard").Call().Op("!=").Lit(0)).Block(jen.Id("res").Dot("Guard").Op("=").Id("step").Dot("Guard").Call().Dot("String").Call()),
			jen.For(jen.List(jen.Id("_"), jen.Id("ef")).Op(":=").Range().Id("step").Dot("Effects").Call()).Block(
				jen.Id("res").Dot("Effects").Op("=").Append(jen.Id("res").Dot("Effects"), jen.Id("ef").Dot("String").Call()),
			),
			jen.Return(jen.Id("res")),
		)})),
	)
}

// hookLog is what a recorder running for role logs for a rule's effects.
func hookLog(r *spec.Rule, role spec.Role) []jen.Code {
	var out []jen.Code
	for _, ef := range r.Effects {
		if ef.Kind == spec.EffectRaise {
			continue
		}
		if role != spec.RoleBoth && ef.Role != spec.RoleBoth && ef.Role != role {
			continue
		}
		bare := *ef
		bare.Role = spec.RoleBoth
		out = append(out, jen.Lit(bare.String()))
	}
	return out
}

func strs(xs []jen.Code) jen.Code {
	if len(xs) == 0 {
		return jen.Nil()
	}
	return jen.Index().String().Values(xs...)
}

func cellCasesDecl(f *jen.File, m *spec.Machine) {
	f.Type().Id("cellCase").Struct(
		jen.Id("line").String(),
		jen.Id("from").Id("State"),
		jen.Id("event").Id("Event"),
		jen.Id("held").Id("GuardSet"),
		jen.Id("disp").Qual(fsmPkg, "Disposition"),
		jen.Id("to").Id("State"),
		jen.Id("guard").Id("Guard"),
		jen.Id("effects").Index().String(),
		jen.Id("both").Op(",").Id("core").Op(",").Id("runtime").Index().String(),
		jen.Id("raises").Bool(),
	)
	var cases []jen.Code
	for _, s := range m.States {
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				d := jen.Dict{
					jen.Id("line"):  jen.Lit(r.Pos.String()),
					jen.Id("from"):  jen.Id(stateConst(s)),
					jen.Id("event"): jen.Id(eventConst(e)),
					jen.Id("disp"):  jen.Qual(fsmPkg, disposition(r)),
				}
				to := s
				if r.Kind == spec.RuleGoto {
					to = r.To
				}
				d[jen.Id("to")] = jen.Id(stateConst(to))
				if r.Guard != nil {
					d[jen.Id("held")] = jen.Id("GuardSet").Call(jen.Lit(0)).Dot("With").Call(jen.Id(guardConst(r.Guard)))
					d[jen.Id("guard")] = jen.Id(guardConst(r.Guard))
				}
				if len(r.Effects) > 0 {
					var efs []jen.Code
					raises := false
					for _, ef := range r.Effects {
						efs = append(efs, jen.Lit(ef.String()))
						raises = raises || ef.Kind == spec.EffectRaise
					}
					d[jen.Id("effects")] = strs(efs)
					d[jen.Id("both")] = strs(hookLog(r, spec.RoleBoth))
					d[jen.Id("core")] = strs(hookLog(r, spec.RoleCore))
					d[jen.Id("runtime")] = strs(hookLog(r, spec.RoleRuntime))
					if raises {
						d[jen.Id("raises")] = jen.True()
					}
				}
				cases = append(cases, jen.Values(d))
			}
		}
	}
	f.Comment("cellCases has one entry per candidate of every cell, computed from the spec when the code was generated.")
	f.Var().Id("cellCases").Op("=").Index().Id("cellCase").Values(cases...)
}

func pathCasesDecl(f *jen.File, m *spec.Machine) {
	f.Type().Id("pathStep").Struct(jen.Id("event").Id("Event"), jen.Id("held").Id("GuardSet"))
	paths := m.Paths()
	var cases []jen.Code
	for _, s := range m.States {
		var steps []jen.Code
		for _, r := range paths[s] {
			d := jen.Dict{jen.Id("event"): jen.Id(eventConst(r.Event))}
			if r.Guard != nil {
				d[jen.Id("held")] = jen.Id("GuardSet").Call(jen.Lit(0)).Dot("With").Call(jen.Id(guardConst(r.Guard)))
			}
			steps = append(steps, jen.Values(d))
		}
		cases = append(cases, jen.Values(jen.Id(stateConst(s)), jen.Index().Id("pathStep").Values(steps...)))
	}
	f.Comment("pathCases is a shortest path from Initial to every state.")
	f.Var().Id("pathCases").Op("=").Index().Struct(jen.Id("target").Id("State"), jen.Id("steps").Index().Id("pathStep")).Values(cases...)
}

func cellTests(f *jen.File) {
	req := func(fn string, args ...jen.Code) jen.Code {
		return jen.Qual(requirePkg, fn).Call(append([]jen.Code{jen.Id("t")}, args...)...)
	}
	f.Func().Id("TestEveryCell").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Id("cellCases")).Block(
			jen.Id("where").Op(":=").Id("c").Dot("line").Op("+").Lit(": ").Op("+").Id("c").Dot("from").Dot("String").Call().Op("+").Lit(" on ").Op("+").Id("c").Dot("event").Dot("String").Call(),
			jen.List(jen.Id("step"), jen.Id("trErr")).Op(":=").Id("Transition").Call(jen.Id("c").Dot("from"), jen.Id("c").Dot("event"), jen.Id("c").Dot("held")),
			req("Equal", jen.Id("c").Dot("disp"), jen.Id("step").Dot("Disposition").Call(), jen.Id("where")),
			req("Equal", jen.Id("c").Dot("to"), jen.Id("step").Dot("To").Call(), jen.Id("where")),
			req("Equal", jen.Id("c").Dot("guard"), jen.Id("step").Dot("Guard").Call(), jen.Id("where")),
			jen.Var().Id("effects").Index().String(),
			jen.For(jen.List(jen.Id("_"), jen.Id("ef")).Op(":=").Range().Id("step").Dot("Effects").Call()).Block(jen.Id("effects").Op("=").Append(jen.Id("effects"), jen.Id("ef").Dot("String").Call())),
			req("Equal", jen.Id("c").Dot("effects"), jen.Id("effects"), jen.Id("where")),
			jen.For(jen.List(jen.Id("_"), jen.Id("role")).Op(":=").Range().Index().Qual(fsmPkg, "Role").Values(jen.Qual(fsmPkg, "RoleBoth"), jen.Qual(fsmPkg, "RoleCore"), jen.Qual(fsmPkg, "RoleRuntime"))).Block(
				jen.Id("rec").Op(":=").Op("&").Id("recorder").Values(jen.Dict{jen.Id("held"): jen.Id("c").Dot("held")}),
				jen.Id("m").Op(":=").Id("New").Types(jen.Int()).Call(jen.Id("role"), jen.Id("rec")),
				jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Id("c").Dot("from").Dot("String").Call()),
				req("NoError", jen.Err()),
				jen.Id("fireErr").Op(":=").Id("m").Dot("Fire").Call(jen.Id("c").Dot("event"), jen.Lit(0)),
				jen.If(jen.Id("c").Dot("disp").Op("==").Qual(fsmPkg, "Rejected")).Block(
					req("ErrorIs", jen.Id("trErr"), jen.Qual(fsmPkg, "ErrRejected"), jen.Id("where")),
					req("ErrorIs", jen.Id("fireErr"), jen.Qual(fsmPkg, "ErrRejected"), jen.Id("where")),
					jen.Var().Id("te").Op("*").Qual(fsmPkg, "TransitionError"),
					req("ErrorAs", jen.Id("fireErr"), jen.Op("&").Id("te"), jen.Id("where")),
					req("Equal", jen.Index().String().Values(jen.Id("Name"), jen.Id("c").Dot("from").Dot("String").Call(), jen.Id("c").Dot("event").Dot("String").Call()), jen.Index().String().Values(jen.Id("te").Dot("Machine"), jen.Id("te").Dot("State"), jen.Id("te").Dot("Event")), jen.Id("where")),
					req("Equal", jen.Id("c").Dot("from"), jen.Id("m").Dot("State").Call(), jen.Lit("a rejected event must leave the state unchanged: ").Op("+").Id("where")),
					jen.Continue(),
				),
				req("NoError", jen.Id("trErr"), jen.Id("where")),
				req("NoError", jen.Id("fireErr"), jen.Id("where")),
				jen.If(jen.Id("c").Dot("raises")).Block(jen.Continue().Comment("follow-ups move the machine further; covered by the walk tests")),
				req("Equal", jen.Id("c").Dot("to"), jen.Id("m").Dot("State").Call(), jen.Id("where")),
				jen.Id("want").Op(":=").Map(jen.Qual(fsmPkg, "Role")).Index().String().Values(jen.Dict{jen.Qual(fsmPkg, "RoleBoth"): jen.Id("c").Dot("both"), jen.Qual(fsmPkg, "RoleCore"): jen.Id("c").Dot("core"), jen.Qual(fsmPkg, "RoleRuntime"): jen.Id("c").Dot("runtime")}).Index(jen.Id("role")),
				req("Equal", jen.Id("want"), jen.Id("rec").Dot("log"), jen.Lit("hooks run for role ").Op("+").Id("role").Dot("String").Call().Op("+").Lit(": ").Op("+").Id("where")),
			),
		),
	)
	f.Func().Id("TestShortestPaths").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("p")).Op(":=").Range().Id("pathCases")).Block(
			jen.Id("rec").Op(":=").Op("&").Id("recorder").Values(),
			jen.Id("m").Op(":=").Id("New").Types(jen.Int()).Call(jen.Qual(fsmPkg, "RoleBoth"), jen.Id("rec")),
			jen.For(jen.List(jen.Id("_"), jen.Id("st")).Op(":=").Range().Id("p").Dot("steps")).Block(
				jen.Id("rec").Dot("held").Op("=").Id("st").Dot("held"),
				req("NoError", jen.Id("m").Dot("Fire").Call(jen.Id("st").Dot("event"), jen.Lit(0)), jen.Lit("path to ").Op("+").Id("p").Dot("target").Dot("String").Call()),
			),
			req("Equal", jen.Id("p").Dot("target"), jen.Id("m").Dot("State").Call()),
		),
	)
}

func propertyTests(f *jen.File) {
	load := jen.List(jen.Id("m")).Op(":=").Qual(fsmtestPkg, "LoadMachine").Call(jen.Id("t"), jen.Id("specFile"))
	f.Comment("TestEveryCellAgainstSpec compares every cell, under every guard assignment, with the spec interpreter reading the YAML at test time.")
	f.Func().Id("TestEveryCellAgainstSpec").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		load, jen.Qual(fsmtestPkg, "EveryCellAgainstSpec").Call(jen.Id("t"), jen.Id("m"), jen.Id("adapter").Call(jen.Id("t"))),
	)
	f.Func().Id("TestRandomWalkAgainstSpec").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		load,
		jen.For(jen.Id("seed").Op(":=").Uint64().Call(jen.Lit(1)), jen.Id("seed").Op("<=").Lit(8), jen.Id("seed").Op("++")).Block(
			jen.Qual(fsmtestPkg, "RandomWalk").Call(jen.Id("t"), jen.Id("m"), jen.Id("adapter").Call(jen.Id("t")), jen.Id("seed"), jen.Lit(2000)),
		),
	)
	f.Func().Id("TestDifferentialLooplab").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		load, jen.Qual(fsmtestPkg, "DifferentialLooplab").Call(jen.Id("t"), jen.Id("m"), jen.Id("adapter").Call(jen.Id("t"))),
	)
}

func lifecycleTests(f *jen.File, m *spec.Machine) {
	req := func(fn string, args ...jen.Code) jen.Code {
		return jen.Qual(requirePkg, fn).Call(append([]jen.Code{jen.Id("t")}, args...)...)
	}
	var restore []jen.Code
	for _, s := range m.States {
		restore = append(restore, jen.Id(stateConst(s)))
	}
	f.Func().Id("TestRestoreAndParse").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Index().Id("State").Values(restore...)).Block(
			jen.Id("m").Op(":=").Id("New").Types(jen.Int()).Call(jen.Qual(fsmPkg, "RoleBoth"), jen.Op("&").Id("recorder").Values()),
			jen.List(jen.Id("timers"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Id("s").Dot("String").Call()),
			req("NoError", jen.Err()),
			req("Equal", jen.Id("s"), jen.Id("m").Dot("State").Call()),
			req("Equal", jen.Id("s").Dot("Timers").Call(), jen.Id("timers")),
			jen.List(jen.Id("back"), jen.Err()).Op(":=").Id("ParseState").Call(jen.Id("s").Dot("String").Call()),
			req("NoError", jen.Err()),
			req("Equal", jen.Id("s"), jen.Id("back")),
		),
		jen.For(jen.Id("e").Op(":=").Id("Event").Call(jen.Lit(1)), jen.Id("e").Dot("Valid").Call(), jen.Id("e").Op("++")).Block(
			jen.List(jen.Id("back"), jen.Err()).Op(":=").Id("ParseEvent").Call(jen.Id("e").Dot("String").Call()),
			req("NoError", jen.Err()),
			req("Equal", jen.Id("e"), jen.Id("back")),
		),
		jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("New").Types(jen.Int()).Call(jen.Qual(fsmPkg, "RoleBoth"), jen.Op("&").Id("recorder").Values()).Dot("Restore").Call(jen.Lit("no_such_state")),
		req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrInvalid")),
		req("Equal", jen.Lit("State(0)"), jen.Id("State").Call(jen.Lit(0)).Dot("String").Call()),
		jen.List(jen.Id("_"), jen.Err()).Op("=").Id("Transition").Call(jen.Id("Initial"), jen.Id("Event").Call(jen.Lit(0)), jen.Lit(0)),
		req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrInvalid")),
	)

	f.Comment("TestConcurrentFire fires from several goroutines at once: every step the observer sees must start where the previous one ended, which holds only if Fire serialises its callers.")
	f.Func().Id("TestConcurrentFire").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		jen.For(jen.Id("round").Op(":=").Lit(0), jen.Id("round").Op("<").Lit(20), jen.Id("round").Op("++")).Block(
			jen.Id("m").Op(":=").Id("New").Types(jen.Int()).Call(jen.Qual(fsmPkg, "RoleBoth"), jen.Op("&").Id("recorder").Values(jen.Dict{jen.Id("held"): jen.Id("GuardSet").Call(jen.Id("round"))})),
			jen.Var().Id("steps").Index().Id("Step"),
			jen.Id("m").Dot("Observe").Call(jen.Func().Params(jen.Id("s").Id("Step")).Block(jen.Id("steps").Op("=").Append(jen.Id("steps"), jen.Id("s")))),
			jen.Var().Id("wg").Qual("sync", "WaitGroup"),
			jen.For(jen.Id("g").Op(":=").Lit(0), jen.Id("g").Op("<").Lit(4), jen.Id("g").Op("++")).Block(
				jen.Id("wg").Dot("Go").Call(jen.Func().Params().Block(
					jen.Id("rng").Op(":=").Qual("math/rand/v2", "New").Call(jen.Qual("math/rand/v2", "NewPCG").Call(jen.Uint64().Call(jen.Id("round")), jen.Uint64().Call(jen.Id("g")))),
					jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Lit(50), jen.Id("i").Op("++")).Block(
						jen.Id("_").Op("=").Id("m").Dot("Fire").Call(jen.Id("Event").Call(jen.Lit(1).Op("+").Id("rng").Dot("IntN").Call(jen.Id("numEvents"))), jen.Id("i")),
					),
				)),
			),
			jen.Id("wg").Dot("Wait").Call(),
			req("GreaterOrEqual", jen.Len(jen.Id("steps")), jen.Lit(200)),
			jen.Id("at").Op(":=").Id("Initial"),
			jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("steps")).Block(
				req("Equal", jen.Id("at"), jen.Id("s").Dot("From").Call()),
				jen.Id("at").Op("=").Id("s").Dot("To").Call(),
			),
			req("Equal", jen.Id("at"), jen.Id("m").Dot("State").Call()),
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
	f.Func().Id("TestEffectError").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		jen.Id("m").Op(":=").Id("New").Types(jen.Int()).Call(jen.Qual(fsmPkg, "RoleBoth"), jen.Op("&").Id("recorder").Values(jen.Dict{jen.Id("fail"): first})),
		jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Lit(hooked.From.Name)),
		req("NoError", jen.Err()),
		jen.Err().Op("=").Id("m").Dot("Fire").Call(jen.Id(eventConst(hooked.Event)), jen.Lit(0)),
		req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrEffect")),
		req("ErrorIs", jen.Err(), jen.Id("errHook")),
		jen.Var().Id("ee").Op("*").Qual(fsmPkg, "EffectError"),
		req("ErrorAs", jen.Err(), jen.Op("&").Id("ee")),
		req("Equal", jen.Id(stateConst(hooked.To)), jen.Id("m").Dot("State").Call()),
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
	f.Func().Id("TestFollowUpFromHook").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
		jen.Id("rec").Op(":=").Op("&").Id("recorder").Values(),
		jen.Id("raised").Op(":=").False(),
		jen.Id("rec").Dot("raise").Op("=").Func().Params(jen.Id("f").Op("*").Id("Firing").Types(jen.Int())).Error().Block(
			jen.If(jen.Id("raised")).Block(jen.Return(jen.Nil())),
			jen.Id("raised").Op("=").True(),
			jen.Return(jen.Id("f").Dot("Raise").Call(jen.Id(eventConst(next.Event)), jen.Lit(7))),
		),
		jen.Id("m").Op(":=").Id("New").Types(jen.Int()).Call(jen.Qual(fsmPkg, "RoleBoth"), jen.Id("rec")),
		jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Lit(hooked.From.Name)),
		req("NoError", jen.Err()),
		req("NoError", jen.Id("m").Dot("Fire").Call(jen.Id(eventConst(hooked.Event)), jen.Lit(0))),
		req("Equal", jen.Id(stateConst(next.To)), jen.Id("m").Dot("State").Call()),
		jen.Comment("An unbounded chain of follow-ups fails instead of spinning."),
		jen.Id("rec").Dot("raise").Op("=").Func().Params(jen.Id("f").Op("*").Id("Firing").Types(jen.Int())).Error().Block(
			jen.For(jen.Range().Qual(fsmPkg, "QueueCapacity").Op("+").Lit(1)).Block(
				jen.If(jen.Err().Op(":=").Id("f").Dot("Raise").Call(jen.Id(eventConst(next.Event)), jen.Lit(7)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			),
			jen.Return(jen.Nil()),
		),
		jen.List(jen.Id("_"), jen.Err()).Op("=").Id("m").Dot("Restore").Call(jen.Lit(hooked.From.Name)),
		req("NoError", jen.Err()),
		req("ErrorIs", jen.Id("m").Dot("Fire").Call(jen.Id(eventConst(hooked.Event)), jen.Lit(0)), jen.Qual(fsmPkg, "ErrQueueFull")),
	)
}

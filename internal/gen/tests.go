package gen

import (
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

const (
	requirePkg = "github.com/stretchr/testify/require"
	fsmtestPkg = "github.com/agentwire/agentwire/fsm/fsmtest"
)

// testFile renders fsm/<machine>/<machine>_test.go. The expectations in
// cellCases, pathCases and stateTimers are literals computed from the spec
// at generation time; the other tests compare the machine with independent
// implementations (the spec's own table, the spec interpreter and
// looplab/fsm) reading the YAML at test time.
func testFile(m *spec.Machine) *jen.File {
	g := testGen{m: m}
	var roles []jen.Code
	for _, r := range m.Roles() {
		g.views = append(g.views, analyse(m, r))
		roles = append(roles, roleConst(r))
	}
	f := jen.NewFile(m.Name)
	f.HeaderComment(header(m))
	f.ImportName(fsmPkg, "fsm")
	f.ImportName(requirePkg, "require")
	f.ImportName(fsmtestPkg, "fsmtest")

	f.Const().Id("specFile").Op("=").Lit("../../" + m.Pos.File)
	f.Var().Id("roles").Op("=").Index().Qual(fsmPkg, "Role").Values(roles...)
	g.recorderDecl(f)
	g.cellCasesDecl(f)
	g.pathCasesDecl(f)
	g.tableTests(f)
	g.cellTests(f)
	g.specTests(f)
	g.lifecycleTests(f)
	g.effectErrorTest(f)
	g.allocTest(f)
	return f
}

type testGen struct {
	m     *spec.Machine
	views []roleView
}

func (g testGen) hasGuards() bool { return len(g.m.Guards) > 0 }
func (g testGen) hasTimers() bool { return len(g.m.Timers()) > 0 }

// req calls require.<fn>(t, args…).
func req(fn string, args ...jen.Code) jen.Code {
	return jen.Qual(requirePkg, fn).Call(append([]jen.Code{jen.Id("t")}, args...)...)
}

func tParam() jen.Code { return jen.Id("t").Op("*").Qual("testing", "T") }

func firingInt() jen.Code { return jen.Op("*").Qual(fsmPkg, "Firing").Types(jen.Int()) }

func (g testGen) recorderDecl(f *jen.File) {
	m := g.m
	var ifaces []string
	for _, v := range g.views {
		ifaces = append(ifaces, v.name+"Hooks")
	}
	comment(f, "recorder implements "+strings.Join(ifaces, ", ")+" and fsm.Timers. Guards answer from held; "+
		"each hook notes its method in called (when set) and its effect, in spec form, in log (unless "+
		"quiet); the effect named fail returns errHook.")
	f.Type().Id("recorder").Struct(
		jen.Id("held").Id("GuardSet"),
		jen.Id("log").Index().String(),
		jen.Id("fail").String(),
		jen.Id("quiet").Bool(),
		jen.Id("called").Map(jen.String()).Bool(),
	)
	f.Var().Id("errHook").Op("=").Qual("errors", "New").Call(jen.Lit("hook failed"))
	var checks []jen.Code
	for _, v := range g.views {
		checks = append(checks, jen.Id("_").Id(v.name+"Hooks").Types(jen.Int()).Op("=").Parens(jen.Op("*").Id("recorder")).Parens(jen.Nil()))
	}
	if g.hasTimers() {
		checks = append(checks, jen.Id("_").Qual(fsmPkg, "Timers").Types(jen.Int()).Op("=").Parens(jen.Op("*").Id("recorder")).Parens(jen.Nil()))
	}
	f.Var().Defs(checks...)

	recv := func() jen.Code { return jen.Params(jen.Id("r").Op("*").Id("recorder")) }
	called := jen.If(jen.Id("r").Dot("called").Op("!=").Nil().Op("&&").Id("method").Op("!=").Lit("")).Block(
		jen.Id("r").Dot("called").Index(jen.Id("method")).Op("=").True(),
	)
	if g.hasGuards() {
		f.Func().Add(recv()).Id("guard").Params(jen.Id("method").String(), jen.Id("g").Id("Guard")).Bool().Block(
			called,
			jen.Return(jen.Id("r").Dot("held").Dot("Has").Call(jen.Id("g"))),
		)
	}
	f.Func().Add(recv()).Id("effect").Params(jen.List(jen.Id("method"), jen.Id("effect")).String()).Error().Block(
		called,
		jen.If(jen.Op("!").Id("r").Dot("quiet")).Block(jen.Id("r").Dot("log").Op("=").Append(jen.Id("r").Dot("log"), jen.Id("effect"))),
		jen.If(jen.Id("effect").Op("==").Id("r").Dot("fail")).Block(jen.Return(jen.Id("errHook"))),
		jen.Return(jen.Nil()),
	)

	// The union of both roles' methods, in the order the interfaces list them.
	guards, sends, actions := map[*spec.Guard]bool{}, map[string]bool{}, map[*spec.Action]bool{}
	for _, v := range g.views {
		for _, x := range v.guards {
			guards[x] = true
		}
		for _, x := range v.sends {
			sends[x] = true
		}
		for _, x := range v.actions {
			actions[x] = true
		}
	}
	for _, x := range m.Guards {
		if guards[x] {
			f.Func().Add(recv()).Id(guardMethod(x.Name)).Params(firingInt()).Bool().Block(
				jen.Return(jen.Id("r").Dot("guard").Call(jen.Lit(guardMethod(x.Name)), jen.Id(guardConst(x.Name)))),
			)
		}
	}
	for _, x := range m.Messages() {
		if sends[x] {
			f.Func().Add(recv()).Id(sendMethod(x)).Params(firingInt()).Error().Block(
				jen.Return(jen.Id("r").Dot("effect").Call(jen.Lit(sendMethod(x)), jen.Lit("send "+x))),
			)
		}
	}
	for _, x := range m.Actions {
		if actions[x] {
			f.Func().Add(recv()).Id(actionMethod(x.Name)).Params(firingInt()).Error().Block(
				jen.Return(jen.Id("r").Dot("effect").Call(jen.Lit(actionMethod(x.Name)), jen.Lit("do "+x.Name))),
			)
		}
	}
	if g.hasTimers() {
		for _, verb := range []string{"Start", "Stop"} {
			f.Func().Add(recv()).Id(verb+"Timer").Params(jen.Id("_").Add(firingInt()), jen.Id("tm").Qual(fsmPkg, "TimerID")).Error().Block(
				jen.If(jen.Id("r").Dot("quiet")).Block(jen.Return(jen.Nil()).Comment("building the log entry would allocate")),
				jen.Return(jen.Id("r").Dot("effect").Call(jen.Lit(""), jen.Lit(lowerFirst(verb)+" ").Op("+").Id("Timer").Call(jen.Id("tm")).Dot("String").Call())),
			)
		}
	}

	timers := jen.Nil()
	if g.hasTimers() {
		timers = jen.Id("rec")
	}
	comment(f, "newMachine returns a machine for role whose hooks and timers are rec.")
	body := []jen.Code{jen.Id("t").Dot("Helper").Call()}
	for i, v := range g.views {
		build := []jen.Code{
			jen.List(jen.Id("m"), jen.Err()).Op(":=").Id("New"+v.name).Index(jen.Int()).Call(jen.Id("rec"), timers),
			req("NoError", jen.Err()),
			jen.Return(jen.Id("m")),
		}
		if i < len(g.views)-1 {
			body = append(body, jen.If(jen.Id("role").Op("==").Add(roleConst(v.role))).Block(build...))
		} else {
			body = append(body, build...)
		}
	}
	f.Func().Id("newMachine").Params(tParam(), jen.Id("role").Qual(fsmPkg, "Role"), jen.Id("rec").Op("*").Id("recorder")).Op("*").Qual(fsmPkg, "Machine").Types(jen.Int()).Block(body...)
	if g.hasGuards() {
		comment(f, "heldGuards holds the guards of a GuardSet, for an fsm.Instance.")
		f.Type().Id("heldGuards").Id("GuardSet")
		f.Func().Params(jen.Id("h").Id("heldGuards")).Id("Guard").Params(jen.Id("g").Qual(fsmPkg, "GuardID"), jen.Id("_").Add(firingInt())).Bool().Block(
			jen.Return(jen.Qual(fsmPkg, "GuardSet").Call(jen.Id("h")).Dot("Has").Call(jen.Id("g"))),
		)
	}
}

// hookLog is what a recorder running for role logs for a rule's effects.
func hookLog(r *spec.Rule, role spec.Role) []jen.Code {
	var out []jen.Code
	for _, ef := range r.Effects {
		if ef.Kind == spec.EffectRaise || !role.Performs(ef.Role) {
			continue
		}
		out = append(out, jen.Lit(bareEffect(ef)))
	}
	return out
}

// bareEffect is an effect as the spec writes it, without its role prefix.
func bareEffect(ef *spec.Effect) string {
	bare := *ef
	bare.Role = spec.RoleBoth
	return bare.String()
}

func strs(xs []jen.Code) jen.Code {
	if len(xs) == 0 {
		return jen.Nil()
	}
	return jen.Index().String().Values(xs...)
}

func heldOf(r *spec.Rule) jen.Code {
	return jen.Id("GuardSet").Call(jen.Lit(0)).Dot("With").Call(jen.Id(guardConst(r.Guard.Name)))
}

func (g testGen) cellCasesDecl(f *jen.File) {
	m := g.m
	fields := []jen.Code{
		jen.Id("rule").String(),
		jen.Id("from").Id("State"),
		jen.Id("event").Id("Event"),
		jen.Id("held").Id("GuardSet"),
		jen.Id("disp").Qual(fsmPkg, "Disposition"),
		jen.Id("to").Id("State"),
	}
	if g.hasGuards() {
		fields = append(fields, jen.Id("guard").Id("Guard"))
	}
	fields = append(fields,
		jen.Id("reason").String(),
		jen.Id("effects").Index().String().Comment("every role's, as the spec writes them"),
		jen.Id("logs").Map(jen.Qual(fsmPkg, "Role")).Index().String().Comment("the hook log of each role that handles the event"),
		jen.Id("raises").Bool(),
	)
	f.Type().Id("cellCase").Struct(fields...)
	var cases []jen.Code
	for _, s := range m.States {
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				to := s
				if r.Kind == spec.RuleGoto {
					to = r.To
				}
				var held, guard, reason, effects, raises jen.Code
				if r.Guard != nil {
					held, guard = heldOf(r), jen.Id(guardConst(r.Guard.Name))
				}
				if r.Reason != "" {
					reason = jen.Lit(r.Reason)
				}
				var efs []jen.Code
				for _, ef := range r.Effects {
					efs = append(efs, jen.Lit(ef.String()))
					if ef.Kind == spec.EffectRaise {
						raises = jen.True()
					}
				}
				if len(efs) > 0 {
					effects = jen.Index().String().Values(efs...)
				}
				var logs []jen.Code
				for _, v := range g.views {
					if !v.handles[e] {
						continue
					}
					log := jen.Nil()
					if l := hookLog(r, v.role); len(l) > 0 {
						log = jen.Values(l...)
					}
					logs = append(logs, jen.Qual(fsmPkg, "Role"+v.name).Op(":").Add(log))
				}
				d := keyed(false,
					field{"rule", jen.Lit(r.ID)},
					field{"from", jen.Id(stateConst(s.Name))},
					field{"event", jen.Id(eventConst(e.Name))},
					field{"held", held},
					field{"disp", jen.Qual(fsmPkg, disposition(r))},
					field{"to", jen.Id(stateConst(to.Name))},
					field{"guard", guard},
					field{"reason", reason},
					field{"effects", effects},
					field{"logs", jen.Map(jen.Qual(fsmPkg, "Role")).Index().String().Values(logs...)},
					field{"raises", raises},
				)
				cases = append(cases, jen.Line().Add(d))
			}
		}
	}
	comment(f, "cellCases has one entry per candidate of every cell, computed from the spec when the "+
		"code was generated.")
	f.Var().Id("cellCases").Op("=").Index().Id("cellCase").Values(append(cases, jen.Line())...)
}

// disposition names the fsm.Disposition a rule produces.
func disposition(r *spec.Rule) string {
	switch r.Kind {
	case spec.RuleIgnore:
		return "Ignored"
	case spec.RuleReject:
		return "Rejected"
	}
	if r.Internal() {
		return "Stayed"
	}
	return "Moved"
}

func (g testGen) pathCasesDecl(f *jen.File) {
	m := g.m
	f.Type().Id("pathStep").Struct(jen.Id("event").Id("Event"), jen.Id("held").Id("GuardSet"))
	paths := m.Paths()
	var cases []jen.Code
	for _, s := range m.States {
		p, ok := paths[s]
		if !ok {
			continue
		}
		var steps []jen.Code
		for _, r := range p {
			var held jen.Code
			if r.Guard != nil {
				held = heldOf(r)
			}
			steps = append(steps, keyed(false, field{"event", jen.Id(eventConst(r.Event.Name))}, field{"held", held}))
		}
		cases = append(cases, jen.Line().Values(jen.Id(stateConst(s.Name)), jen.Index().Id("pathStep").Values(steps...)))
	}
	comment(f, "pathCases is a shortest path from Initial to every state.")
	f.Var().Id("pathCases").Op("=").Index().Struct(jen.Id("target").Id("State"), jen.Id("steps").Index().Id("pathStep")).Values(append(cases, jen.Line())...)

	timers := jen.Dict{}
	for _, s := range m.States {
		if len(s.Timers) == 0 {
			continue
		}
		var ts []jen.Code
		for _, tm := range s.Timers {
			ts = append(ts, jen.Qual(fsmPkg, "TimerID").Call(jen.Id(timerConst(tm.Name))))
		}
		timers[jen.Id(stateConst(s.Name))] = jen.Values(ts...)
	}
	comment(f, "stateTimers lists the timers each state keeps armed (none when absent), from the spec.")
	f.Var().Id("stateTimers").Op("=").Map(jen.Id("State")).Index().Qual(fsmPkg, "TimerID").Values(timers)
}

func (g testGen) tableTests(f *jen.File) {
	comment(f, "TestTableMatchesSpec checks that Table is exactly what spec.Machine.Table builds from the "+
		"spec file: declarations, cells, and one shared candidate per rule.")
	f.Func().Id("TestTableMatchesSpec").Params(tParam()).Block(
		jen.Qual(fsmtestPkg, "SameTable").Call(jen.Id("t"), jen.Qual(fsmtestPkg, "LoadMachine").Call(jen.Id("t"), jen.Id("specFile")), jen.Id("Table")),
	)
}

func (g testGen) cellTests(f *jen.File) {
	c := func(field string) *jen.Statement { return jen.Id("c").Dot(field) }
	checks := []jen.Code{
		jen.Id("where").Op(":=").Qual("fmt", "Sprintf").Call(jen.Lit("%s: rule %s: %s on %s"), jen.Id("specFile"), c("rule"), c("from"), c("event")),
		jen.List(jen.Id("step"), jen.Id("trErr")).Op(":=").Id("Transition").Call(c("from"), c("event"), c("held")),
		req("Equal", c("rule"), jen.Id("step").Dot("Rule").Call(), jen.Id("where")),
		req("Equal", c("from"), jen.Id("step").Dot("From").Call(), jen.Id("where")),
		req("Equal", c("event"), jen.Id("step").Dot("Event").Call(), jen.Id("where")),
		req("Equal", c("disp"), jen.Id("step").Dot("Disposition").Call(), jen.Id("where")),
		req("Equal", c("to"), jen.Id("step").Dot("To").Call(), jen.Id("where")),
	}
	if g.hasGuards() {
		checks = append(checks, req("Equal", c("guard"), jen.Id("step").Dot("Guard").Call(), jen.Id("where")))
	}
	checks = append(checks,
		req("Equal", c("reason"), jen.Id("step").Dot("Reason").Call(), jen.Id("where")),
		jen.Var().Id("effects").Index().String(),
		jen.For(jen.Id("i").Op(":=").Range().Id("step").Dot("Effects").Call()).Block(
			jen.Id("effects").Op("=").Append(jen.Id("effects"), jen.Id("Table").Dot("EffectString").Call(jen.Op("&").Id("step").Dot("Effects").Call().Index(jen.Id("i")))),
		),
		req("Equal", c("effects"), jen.Id("effects"), jen.Id("where")),
		jen.If(c("disp").Op("==").Qual(fsmPkg, "Rejected")).Block(
			req("ErrorIs", jen.Id("trErr"), jen.Qual(fsmPkg, "ErrRejected"), jen.Id("where")),
			jen.Var().Id("te").Op("*").Qual(fsmPkg, "TransitionError"),
			req("ErrorAs", jen.Id("trErr"), jen.Op("&").Id("te"), jen.Id("where")),
			req("Equal", jen.Index().String().Values(jen.Id("Name"), c("from").Dot("String").Call(), c("event").Dot("String").Call(), c("reason")),
				jen.Index().String().Values(jen.Id("te").Dot("Machine"), jen.Id("te").Dot("State"), jen.Id("te").Dot("Event"), jen.Id("te").Dot("Reason")), jen.Id("where")),
		).Else().Block(req("NoError", jen.Id("trErr"), jen.Id("where"))),
		jen.For(jen.List(jen.Id("role"), jen.Id("want")).Op(":=").Range().Add(c("logs"))).Block(
			jen.Id("rec").Op(":=").Op("&").Id("recorder").Values(jen.Dict{jen.Id("held"): c("held")}),
			jen.Id("m").Op(":=").Id("newMachine").Call(jen.Id("t"), jen.Id("role"), jen.Id("rec")),
			jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Qual(fsmPkg, "StateID").Call(c("from"))),
			req("NoError", jen.Err()),
			jen.Err().Op("=").Id("m").Dot("Fire").Call(jen.Qual(fsmPkg, "EventID").Call(c("event")), jen.Lit(0)),
			jen.If(c("disp").Op("==").Qual(fsmPkg, "Rejected")).Block(
				req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrRejected"), jen.Id("where")),
				req("Equal", c("from"), jen.Id("State").Call(jen.Id("m").Dot("State").Call()), jen.Lit("a rejected event leaves the state unchanged: ").Op("+").Id("where")),
				req("Empty", jen.Id("rec").Dot("log"), jen.Id("where")),
				jen.Continue(),
			),
			req("NoError", jen.Err(), jen.Id("where")),
			jen.If(c("raises")).Block(jen.Continue().Comment("the raised events move on: TestInstanceWalkAgainstSpec")),
			req("Equal", c("to"), jen.Id("State").Call(jen.Id("m").Dot("State").Call()), jen.Id("where")),
			req("Equal", jen.Id("want"), jen.Id("rec").Dot("log"), jen.Lit("hooks of the %s: %s"), jen.Id("role"), jen.Id("where")),
		),
	)
	comment(f, "TestEveryCell checks every candidate of every cell through Transition and, for each role "+
		"that handles its event, through that role's machine and hooks.")
	f.Func().Id("TestEveryCell").Params(tParam()).Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Id("cellCases")).Block(checks...),
	)

	comment(f, "TestHooksPerRole checks that each role's hooks interface holds exactly what that role "+
		"calls: running every cell the role handles calls every one of its methods (and TestEveryCell "+
		"that none is missing).")
	f.Func().Id("TestHooksPerRole").Params(tParam()).Block(
		jen.For(jen.List(jen.Id("role"), jen.Id("iface")).Op(":=").Range().Map(jen.Qual(fsmPkg, "Role")).Qual("reflect", "Type").Values(hookTypes(g.views))).Block(
			jen.Id("rec").Op(":=").Op("&").Id("recorder").Values(jen.Dict{jen.Id("called"): jen.Map(jen.String()).Bool().Values()}),
			jen.Id("m").Op(":=").Id("newMachine").Call(jen.Id("t"), jen.Id("role"), jen.Id("rec")),
			jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Id("cellCases")).Block(
				jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Add(c("logs")).Index(jen.Id("role")), jen.Op("!").Id("ok")).Block(jen.Continue()),
				jen.Id("rec").Dot("held").Op("=").Add(c("held")),
				jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Qual(fsmPkg, "StateID").Call(c("from"))),
				req("NoError", jen.Err()),
				jen.Id("_").Op("=").Id("m").Dot("Fire").Call(jen.Qual(fsmPkg, "EventID").Call(c("event")), jen.Lit(0)).Comment("outcomes: TestEveryCell"),
			),
			jen.Var().List(jen.Id("want"), jen.Id("got")).Index().String(),
			jen.For(jen.Id("i").Op(":=").Range().Id("iface").Dot("NumMethod").Call()).Block(
				jen.Id("want").Op("=").Append(jen.Id("want"), jen.Id("iface").Dot("Method").Call(jen.Id("i")).Dot("Name")),
			),
			jen.For(jen.Id("name").Op(":=").Range().Id("rec").Dot("called")).Block(
				jen.Id("got").Op("=").Append(jen.Id("got"), jen.Id("name")),
			),
			req("ElementsMatch", jen.Id("want"), jen.Id("got"), jen.Lit("hooks of the %s"), jen.Id("role")),
		),
	)

	guards := jen.Nil()
	if g.hasGuards() {
		guards = jen.Id("heldGuards").Call(jen.Id("st").Dot("held"))
	}
	comment(f, "TestShortestPaths walks an fsm.Instance of Table, for each role, along a shortest path to "+
		"every state.")
	f.Func().Id("TestShortestPaths").Params(tParam()).Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("role")).Op(":=").Range().Id("roles")).Block(
			jen.For(jen.List(jen.Id("_"), jen.Id("p")).Op(":=").Range().Id("pathCases")).Block(
				jen.List(jen.Id("in"), jen.Err()).Op(":=").Qual(fsmPkg, "NewInstance").Index(jen.Int()).Call(jen.Id("Table"), jen.Id("role")),
				req("NoError", jen.Err()),
				jen.Var().Id("out").Qual(fsmPkg, "Outbox"),
				jen.For(jen.List(jen.Id("_"), jen.Id("st")).Op(":=").Range().Id("p").Dot("steps")).Block(
					req("NoError", jen.Id("in").Dot("Step").Call(jen.Qual(fsmPkg, "EventID").Call(jen.Id("st").Dot("event")), jen.Lit(0), guards, jen.Op("&").Id("out")),
						jen.Lit("%s: path to %s"), jen.Id("role"), jen.Id("p").Dot("target")),
				),
				req("Equal", jen.Id("p").Dot("target"), jen.Id("State").Call(jen.Id("in").Dot("State").Call()), jen.Id("role").Dot("String").Call()),
			),
		),
	)
}

func (g testGen) specTests(f *jen.File) {
	m := g.m
	adapter := jen.Qual(fsmtestPkg, "TableAdapter").Call(jen.Id("t"), jen.Id("Table"))
	load := jen.Id("m").Op(":=").Qual(fsmtestPkg, "LoadMachine").Call(jen.Id("t"), jen.Id("specFile"))
	comment(f, "TestEveryCellAgainstSpec compares every cell, under every guard assignment, with the spec "+
		"interpreter reading the YAML at test time.")
	f.Func().Id("TestEveryCellAgainstSpec").Params(tParam()).Block(
		load, jen.Qual(fsmtestPkg, "EveryCellAgainstSpec").Call(jen.Id("t"), jen.Id("m"), adapter),
	)
	f.Func().Id("TestRandomWalkAgainstSpec").Params(tParam()).Block(
		load,
		jen.For(jen.Id("seed").Op(":=").Uint64().Call(jen.Lit(1)), jen.Id("seed").Op("<=").Lit(8), jen.Id("seed").Op("++")).Block(
			jen.Qual(fsmtestPkg, "RandomWalk").Call(jen.Id("t"), jen.Id("m"), adapter, jen.Id("seed"), jen.Lit(2000)),
		),
	)
	comment(f, "TestInstanceWalkAgainstSpec runs an fsm.Instance of Table for each role beside the spec "+
		"interpreter: raised events run to completion and each role performs only its own effects.")
	f.Func().Id("TestInstanceWalkAgainstSpec").Params(tParam()).Block(
		load,
		jen.For(jen.Id("seed").Op(":=").Uint64().Call(jen.Lit(1)), jen.Id("seed").Op("<=").Lit(4), jen.Id("seed").Op("++")).Block(
			jen.Qual(fsmtestPkg, "InstanceWalk").Call(jen.Id("t"), jen.Id("m"), jen.Id("Table"), jen.Id("seed"), jen.Lit(1000)),
		),
	)
	f.Func().Id("TestDifferentialLooplab").Params(tParam()).Block(
		load, jen.Qual(fsmtestPkg, "DifferentialLooplab").Call(jen.Id("t"), jen.Id("m"), adapter),
	)
	_ = m
}

// roundTrip checks Parse<typ>(v.String()) == v for every value of an enum.
func roundTrip(typ string) jen.Code {
	return jen.For(jen.Id("v").Op(":=").Id(typ).Call(jen.Lit(1)), jen.Id("v").Dot("Valid").Call(), jen.Id("v").Op("++")).Block(
		jen.List(jen.Id("back"), jen.Err()).Op(":=").Id("Parse"+typ).Call(jen.Id("v").Dot("String").Call()),
		req("NoError", jen.Err()),
		req("Equal", jen.Id("v"), jen.Id("back")),
	)
}

func (g testGen) lifecycleTests(f *jen.File) {
	m := g.m
	body := []jen.Code{
		jen.For(jen.Id("s").Op(":=").Id("State").Call(jen.Lit(1)), jen.Id("s").Dot("Valid").Call(), jen.Id("s").Op("++")).Block(
			jen.For(jen.List(jen.Id("_"), jen.Id("role")).Op(":=").Range().Id("roles")).Block(
				jen.Id("m").Op(":=").Id("newMachine").Call(jen.Id("t"), jen.Id("role"), jen.Op("&").Id("recorder").Values()),
				jen.List(jen.Id("timers"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Qual(fsmPkg, "StateID").Call(jen.Id("s"))),
				req("NoError", jen.Err()),
				req("Equal", jen.Id("s"), jen.Id("State").Call(jen.Id("m").Dot("State").Call())),
				req("Equal", jen.Id("stateTimers").Index(jen.Id("s")), jen.Id("timers"), jen.Lit("the timers to re-arm in %s"), jen.Id("s")),
			),
		),
		roundTrip("State"), roundTrip("Event"),
	}
	if g.hasTimers() {
		body = append(body, roundTrip("Timer"))
	}
	if g.hasGuards() {
		body = append(body, roundTrip("Guard"))
	}
	if len(m.Actions) > 0 {
		body = append(body, roundTrip("Action"))
	}
	if len(m.Messages()) > 0 {
		body = append(body, roundTrip("Message"))
	}
	body = append(body,
		req("False", jen.Id("State").Call(jen.Lit(len(m.States)+1)).Dot("Valid").Call()),
		req("Equal", jen.Lit("State(0)"), jen.Id("State").Call(jen.Lit(0)).Dot("String").Call()),
		jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("ParseState").Call(jen.Lit("no_such_state")),
		req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrInvalid")),
		jen.List(jen.Id("_"), jen.Err()).Op("=").Id("newMachine").Call(jen.Id("t"), jen.Qual(fsmPkg, "RoleCore"), jen.Op("&").Id("recorder").Values()).Dot("Restore").Call(jen.Lit(0)),
		req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrInvalid")),
		jen.List(jen.Id("_"), jen.Err()).Op("=").Id("Transition").Call(jen.Id("Initial"), jen.Id("Event").Call(jen.Lit(0)), jen.Lit(0)),
		req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrInvalid")),
		jen.List(jen.Id("_"), jen.Err()).Op("=").Id("Transition").Call(jen.Id("State").Call(jen.Lit(0)), jen.Id("Event").Call(jen.Lit(1)), jen.Lit(0)),
		req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrInvalid")),
	)
	comment(f, "TestRestoreAndParse restores every state for each role (Restore returns the timers to "+
		"re-arm), round-trips every enum through its spec name, and refuses invalid values.")
	f.Func().Id("TestRestoreAndParse").Params(tParam()).Block(body...)

	var checks []jen.Code
	for i, v := range g.views {
		assign := "="
		if i == 0 {
			assign = ":="
		}
		checks = append(checks,
			jen.List(jen.Id("_"), jen.Err()).Op(assign).Id("New"+v.name).Index(jen.Int()).Call(jen.Nil(), jen.Nil()),
			req("Error", jen.Err(), jen.Lit("a "+v.name+" machine needs hooks")),
		)
	}
	for _, v := range g.views {
		if v.timers {
			checks = append(checks,
				jen.List(jen.Id("_"), jen.Err()).Op("=").Id("New"+v.name).Index(jen.Int()).Call(jen.Op("&").Id("recorder").Values(), jen.Nil()),
				req("Error", jen.Err(), jen.Lit("the "+v.name+" arms timers")),
			)
		}
	}
	comment(f, "TestNewRefusesMissingParts checks that a machine needs its hooks, and its timers when its "+
		"role arms any.")
	f.Func().Id("TestNewRefusesMissingParts").Params(tParam()).Block(checks...)
}

// effectErrorTest makes the first hook of the first unguarded move with a
// hook fail, for a role that performs it.
func (g testGen) effectErrorTest(f *jen.File) {
	for _, r := range g.m.Rules {
		if r.Kind != spec.RuleGoto || r.Guard != nil || r.Internal() {
			continue
		}
		for _, v := range g.views {
			if !v.handles[r.Event] {
				continue
			}
			var first *spec.Effect
			for _, ef := range r.Effects {
				if ef.Kind != spec.EffectRaise && v.role.Performs(ef.Role) {
					first = ef
					break
				}
			}
			if first == nil {
				continue
			}
			commentf(f, "TestEffectError makes the %s's first hook of %s fail: the state has moved, the error "+
				"names the effect and the effects after it do not run.", v.name, r.Pos)
			f.Func().Id("TestEffectError").Params(tParam()).Block(
				jen.Id("rec").Op(":=").Op("&").Id("recorder").Values(jen.Dict{jen.Id("fail"): jen.Lit(bareEffect(first))}),
				jen.Id("m").Op(":=").Id("newMachine").Call(jen.Id("t"), jen.Qual(fsmPkg, "Role"+v.name), jen.Id("rec")),
				jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Qual(fsmPkg, "StateID").Call(jen.Id(stateConst(r.From.Name)))),
				req("NoError", jen.Err()),
				jen.Err().Op("=").Id("m").Dot("Fire").Call(jen.Qual(fsmPkg, "EventID").Call(jen.Id(eventConst(r.Event.Name))), jen.Lit(0)),
				req("ErrorIs", jen.Err(), jen.Qual(fsmPkg, "ErrEffect")),
				req("ErrorIs", jen.Err(), jen.Id("errHook")),
				jen.Var().Id("ee").Op("*").Qual(fsmPkg, "EffectError"),
				req("ErrorAs", jen.Err(), jen.Op("&").Id("ee")),
				req("Equal", jen.Lit(first.String()), jen.Id("ee").Dot("Effect")),
				req("Equal", jen.Id(stateConst(r.To.Name)), jen.Id("State").Call(jen.Id("m").Dot("State").Call())),
				req("Equal", jen.Index().String().Values(jen.Lit(bareEffect(first))), jen.Id("rec").Dot("log")),
			)
			return
		}
	}
}

func (g testGen) allocTest(f *jen.File) {
	f.Var().Defs(jen.Id("sinkStep").Id("Step"), jen.Id("sinkErr").Error())
	c := func(field string) *jen.Statement { return jen.Id("c").Dot(field) }
	comment(f, "TestNoAllocations checks that Transition, and Fire for each role with hooks that "+
		"allocate nothing, allocate nothing in any cell.")
	f.Func().Id("TestNoAllocations").Params(tParam()).Block(
		jen.Id("allocs").Op(":=").Qual("testing", "AllocsPerRun").Call(jen.Lit(10), jen.Func().Params().Block(
			jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Id("cellCases")).Block(
				jen.List(jen.Id("sinkStep"), jen.Id("sinkErr")).Op("=").Id("Transition").Call(c("from"), c("event"), c("held")),
			),
		)),
		req("Zero", jen.Id("allocs"), jen.Lit("Transition")),
		jen.For(jen.List(jen.Id("_"), jen.Id("role")).Op(":=").Range().Id("roles")).Block(
			jen.Id("rec").Op(":=").Op("&").Id("recorder").Values(jen.Dict{jen.Id("quiet"): jen.True()}),
			jen.Id("m").Op(":=").Id("newMachine").Call(jen.Id("t"), jen.Id("role"), jen.Id("rec")),
			jen.Id("allocs").Op(":=").Qual("testing", "AllocsPerRun").Call(jen.Lit(10), jen.Func().Params().Block(
				jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Id("cellCases")).Block(
					jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Add(c("logs")).Index(jen.Id("role")), jen.Op("!").Id("ok")).Block(jen.Continue()),
					jen.Id("rec").Dot("held").Op("=").Add(c("held")),
					jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("m").Dot("Restore").Call(jen.Qual(fsmPkg, "StateID").Call(c("from"))), jen.Err().Op("!=").Nil()).Block(
						jen.Panic(jen.Err()),
					),
					jen.Id("sinkErr").Op("=").Id("m").Dot("Fire").Call(jen.Qual(fsmPkg, "EventID").Call(c("event")), jen.Lit(0)),
				),
			)),
			req("Zero", jen.Id("allocs"), jen.Lit("Fire as %s"), jen.Id("role")),
		),
	)
}

// roleConst is the fsm constant of a role.
func roleConst(r spec.Role) jen.Code { return jen.Qual(fsmPkg, "Role"+roleName(r)) }

// hookTypes maps each role of views to the reflect.Type of its hooks interface.
func hookTypes(views []roleView) jen.Dict {
	d := jen.Dict{}
	for _, v := range views {
		d[roleConst(v.role)] = jen.Qual("reflect", "TypeFor").Index(jen.Id(v.name + "Hooks").Index(jen.Int())).Call()
	}
	return d
}

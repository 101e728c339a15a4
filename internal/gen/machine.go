package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// machineFile renders fsm/<machine>/<machine>.go: only what differs per
// machine. The typed enums, the table as a literal of the engine's
// fsm.Table, the typed Transition and Step, and the hooks of each role with
// their bindings; running the table is the engine's job (package fsm).
func machineFile(m *spec.Machine) (*jen.File, error) {
	t, err := m.Table()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Pos, err)
	}
	f := jen.NewFile(m.Name)
	f.HeaderComment(header(m))
	for _, line := range strings.Split(packageDoc(m), "\n") {
		f.PackageComment(line)
	}
	f.ImportName(fsmPkg, "fsm")

	f.Const().Defs(
		jen.Id("Name").Op("=").Lit(m.Name).Comment("the machine's name in the spec"),
		jen.Id("Initial").Op("=").Id(stateConst(m.Initial().Name)).Comment("the state every new instance starts in"),
	)

	enum(f, "State", "State is a state of the "+m.Name+" machine (an fsm.StateID of Table). "+enumMethods("State")+
		" Outcome is fsm.OutcomeNone but in a terminal state (Terminal).", stateItems(m))
	stateMethods(f)
	enum(f, "Event", "Event is an input of the "+m.Name+" machine (an fsm.EventID of Table): a wire message, "+
		"a timer expiry or a local happening. "+enumMethods("Event")+" "+eventAccessors(m), eventItems(m))
	eventMethods(f, m)
	enum(f, "Timer", "Timer is a named timer (an fsm.TimerID of Table) that effects arm: it expires, "+
		"Duration later, as the event of its name (Event). "+enumMethods("Timer"), timerItems(m))
	timerMethods(f, m)
	enum(f, "Guard", "Guard is a predicate a peer evaluates through its hooks (an fsm.GuardID of Table). "+
		enumMethods("Guard"), guardItems(m))
	guardSetDecl(f, m)
	enum(f, "Action", "Action is a local effect a peer performs through its hooks (an fsm.ActionID of Table). "+
		enumMethods("Action"), actionItems(m))
	enum(f, "Message", "Message is a wire type the machine sends or observes (an fsm.MessageID of Table). "+
		enumMethods("Message"), messageItems(m))

	if err := tableDecl(f, m, t); err != nil {
		return nil, err
	}
	stepDecl(f, m)
	transitionFunc(f)
	for _, role := range m.Roles() {
		hooksDecl(f, m, analyse(m, role))
	}
	return f, nil
}

func packageDoc(m *spec.Machine) string {
	paras := []string{
		fmt.Sprintf("Package %s is the generated %s machine. ", m.Name, m.Name) + m.Doc,
		"One instance per " + m.Scope + ".",
		"Generated from " + m.Pos.File + ": a constant's comment is the first clause of its spec doc; " +
			"docs/machines/" + m.Name + ".md has every doc in full, the diagram and the state × event matrix.",
	}
	for i, p := range paras {
		paras[i] = strings.Join(wrapLines(p, docWidth), "\n")
	}
	return strings.Join(paras, "\n\n")
}

// doc writes a hand-wrapped multi-line comment as // lines; jennifer would
// otherwise render it as a /* */ block.
func doc(f *jen.File, text string) {
	for _, line := range strings.Split(text, "\n") {
		f.Comment(line)
	}
}

// lineWidth is the column a generated comment line should not pass
// (counting a tab as 4).
const lineWidth = 100

// docWidth is how wide a generated doc comment's text is, so that a
// top-level "// " comment ends near column 100.
const docWidth = lineWidth - 4

// comment writes text as top-level // lines wrapped at docWidth.
func comment(f *jen.File, text string) {
	for _, l := range wrapLines(text, docWidth) {
		f.Comment(l)
	}
}

func commentf(f *jen.File, format string, args ...any) { comment(f, fmt.Sprintf(format, args...)) }

// comments returns text wrapped at width as comment lines, for a block
// (struct fields, interface methods, constants).
func comments(text string, width int) []jen.Code {
	var out []jen.Code
	for _, l := range wrapLines(text, width) {
		out = append(out, jen.Comment(l))
	}
	return out
}

// wrapLines folds text into lines of at most width bytes where it can; a
// blank line (two newlines) separates paragraphs.
func wrapLines(text string, width int) []string {
	var out []string
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			out = append(out, "")
		}
		line := ""
		for _, word := range strings.Fields(para) {
			if line != "" && len(line)+1+len(word) > width {
				out = append(out, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += word
		}
		out = append(out, line)
	}
	return out
}

// declAccessor writes a one-line method of an enum that reads v's
// declaration in Table (StateOf, EventOf or TimerOf), or returns the zero
// value for an invalid v.
func declAccessor(recvType, name string, result jen.Code, value *jen.Statement) jen.Code {
	return jen.Func().Params(jen.Id("v").Id(recvType)).Id(name).Params().Add(result).Add(returns(value))
}

// decl is Table.<Kind>Of(fsm.<Kind>ID(v)).<field>.
func decl(kind, field string) *jen.Statement {
	return jen.Id("Table").Dot(kind + "Of").Call(jen.Qual(fsmPkg, kind+"ID").Call(jen.Id("v"))).Dot(field)
}

// The accessors below have no doc comment of their own: the enum's doc
// describes them (see enum).
func stateMethods(f *jen.File) {
	f.Add(declAccessor("State", "Outcome", jen.Qual(fsmPkg, "Outcome"), decl("State", "Outcome")))
	f.Func().Params(jen.Id("v").Id("State")).Id("Terminal").Params().Bool().Add(returns(
		jen.Id("v").Dot("Outcome").Call().Op("!=").Qual(fsmPkg, "OutcomeNone")))
}

// eventAccessors describes the accessors eventMethods writes for m; the
// fields they read are documented once, on fsm.EventDecl.
func eventAccessors(m *spec.Machine) string {
	names := []string{"Kind", "Role"}
	if len(m.Messages()) > 0 {
		names = append(names, "Message", "FailedSend")
	}
	if len(m.Timers()) > 0 {
		names = append(names, "Timer")
	}
	list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	if len(names) == 2 {
		return list + " read its fsm.EventDecl."
	}
	return list + " read its fsm.EventDecl (0 where a field does not apply)."
}

func eventMethods(f *jen.File, m *spec.Machine) {
	ev := func(field string) *jen.Statement { return decl("Event", field) }
	f.Add(declAccessor("Event", "Kind", jen.Qual(fsmPkg, "EventKind"), ev("Kind")))
	f.Add(declAccessor("Event", "Role", jen.Qual(fsmPkg, "Role"), ev("Role")))
	if len(m.Messages()) > 0 {
		f.Add(declAccessor("Event", "Message", jen.Id("Message"), jen.Id("Message").Call(ev("Message"))))
		f.Add(declAccessor("Event", "FailedSend", jen.Id("Event"), jen.Id("Event").Call(ev("FailedSend"))))
	}
	if len(m.Timers()) > 0 {
		f.Add(declAccessor("Event", "Timer", jen.Id("Timer"), jen.Id("Timer").Call(ev("Timer"))))
	}
}

func timerMethods(f *jen.File, m *spec.Machine) {
	if len(m.Timers()) == 0 {
		return
	}
	f.Add(declAccessor("Timer", "Duration", jen.Qual("time", "Duration"), decl("Timer", "Duration")))
	f.Add(declAccessor("Timer", "Event", jen.Id("Event"), jen.Id("Event").Call(decl("Timer", "Event"))))
}

func guardSetDecl(f *jen.File, m *spec.Machine) {
	if len(m.Guards) == 0 {
		comment(f, "GuardSet is the set of guards that hold, for Transition (an fsm.GuardSet); this machine "+
			"declares none.")
		f.Type().Id("GuardSet").Qual(fsmPkg, "GuardSet")
		return
	}
	comment(f, "GuardSet is the guards that hold, for Transition (an fsm.GuardSet); With adds g, Has tests it.")
	f.Type().Id("GuardSet").Qual(fsmPkg, "GuardSet")
	f.Func().Params(jen.Id("s").Id("GuardSet")).Id("With").Params(jen.Id("g").Id("Guard")).Id("GuardSet").Add(returns(
		jen.Id("GuardSet").Call(jen.Qual(fsmPkg, "GuardSet").Call(jen.Id("s")).Dot("With").Call(jen.Qual(fsmPkg, "GuardID").Call(jen.Id("g"))))))
	f.Func().Params(jen.Id("s").Id("GuardSet")).Id("Has").Params(jen.Id("g").Id("Guard")).Bool().Add(returns(
		jen.Qual(fsmPkg, "GuardSet").Call(jen.Id("s")).Dot("Has").Call(jen.Qual(fsmPkg, "GuardID").Call(jen.Id("g")))))
}

func stepDecl(f *jen.File, m *spec.Machine) {
	guard := jen.Id("Guard")
	if len(m.Guards) == 0 {
		guard = jen.Qual(fsmPkg, "GuardID")
	}
	comment(f, "Step is what one event did, typed as this package's enums (fsm.StepOf); Effects are shared.")
	f.Type().Id("Step").Op("=").Qual(fsmPkg, "StepOf").Index(jen.List(jen.Id("State"), jen.Id("Event"), guard))
}

func transitionFunc(f *jen.File) {
	comment(f, "Transition is fsm.Table.Transition of Table, typed: pure, and allocation-free for valid "+
		"inputs. A rejection is a *fsm.TransitionError (fsm.ErrRejected) with To() = s.")
	// Two statements, not a helper taking Table.Transition's results: the
	// compiler then inlines Transition into its callers (cost under 80).
	f.Func().Id("Transition").Params(jen.Id("s").Id("State"), jen.Id("e").Id("Event"), jen.Id("held").Id("GuardSet")).Params(jen.Id("Step"), jen.Error()).Block(
		jen.List(jen.Id("st"), jen.Err()).Op(":=").Id("Table").Dot("Transition").Call(
			jen.Qual(fsmPkg, "StateID").Call(jen.Id("s")), jen.Qual(fsmPkg, "EventID").Call(jen.Id("e")), jen.Qual(fsmPkg, "GuardSet").Call(jen.Id("held"))),
		jen.Return(jen.Id("Step").Values(jen.Id("Step").Op(":").Id("st")), jen.Err()),
	)
}

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

	comment(f, "Name is the machine's name in the spec.")
	f.Const().Id("Name").Op("=").Lit(m.Name)
	comment(f, "Initial is the state every new instance starts in.")
	f.Const().Id("Initial").Op("=").Id(stateConst(m.Initial().Name))

	enum(f, "State", "State is a state of the "+m.Name+" machine; its values are the fsm.StateID of Table.",
		stateItems(m))
	stateMethods(f)
	enum(f, "Event", "Event is an input of the "+m.Name+" machine (a wire message, a timer expiry or "+
		"a local happening); its values are the fsm.EventID of Table.", eventItems(m))
	eventMethods(f, m)
	enum(f, "Timer", "Timer is a named timer; its values are the fsm.TimerID of Table. Arming and "+
		"disarming are effects; expiry is the event of the same name.", timerItems(m))
	timerMethods(f, m)
	enum(f, "Guard", "Guard is a predicate a peer evaluates through its hooks; its values are the "+
		"fsm.GuardID of Table.", guardItems(m))
	guardSetDecl(f, m)
	enum(f, "Action", "Action is a local effect a peer performs through its hooks; its values are the "+
		"fsm.ActionID of Table.", actionItems(m))
	enum(f, "Message", "Message is a wire type the machine sends or observes; its values are the "+
		"fsm.MessageID of Table.", messageItems(m))

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
		fmt.Sprintf("Package %s is the generated %s machine.", m.Name, m.Name),
		m.Doc,
		"One instance per " + m.Scope + ".",
		"The table and every hook name come from " + m.Pos.File + "; see docs/machines/" + m.Name +
			".md for the diagram and the state × event matrix. Table is the machine as the engine " +
			"(package fsm) runs it: Transition answers what an event would do, " + constructors(m) +
			", and a driver that keeps many instances steps an fsm.Instance of Table and drains its fsm.Outbox.",
	}
	for i, p := range paras {
		paras[i] = strings.Join(wrapLines(p, docWidth), "\n")
	}
	return strings.Join(paras, "\n\n")
}

// constructors says which peer machines the package builds.
func constructors(m *spec.Machine) string {
	if m.Peers != spec.RoleBoth {
		return "New" + roleName(m.Peers) + " returns a machine that performs " + roleName(m.Peers) +
			"'s effects through its hooks (only " + roleName(m.Peers) + " runs this machine)"
	}
	return "NewCore and NewRuntime return a machine that performs one peer's effects through its hooks"
}

// doc writes a hand-wrapped multi-line comment as // lines; jennifer would
// otherwise render it as a /* */ block.
func doc(f *jen.File, text string) {
	for _, line := range strings.Split(text, "\n") {
		f.Comment(line)
	}
}

// docWidth is how wide a generated doc comment's text is, so that a
// top-level "// " comment ends near column 100.
const docWidth = 96

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

func stateMethods(f *jen.File) {
	comment(f, "Outcome classifies a terminal state; it is fsm.OutcomeNone for the others.")
	f.Add(declAccessor("State", "Outcome", jen.Qual(fsmPkg, "Outcome"), decl("State", "Outcome")))
	comment(f, "Terminal reports whether the lifecycle has settled in v.")
	f.Func().Params(jen.Id("v").Id("State")).Id("Terminal").Params().Bool().Add(returns(
		jen.Id("v").Dot("Outcome").Call().Op("!=").Qual(fsmPkg, "OutcomeNone")))
}

func eventMethods(f *jen.File, m *spec.Machine) {
	ev := func(field string) *jen.Statement { return decl("Event", field) }
	comment(f, "Kind says whether v is a wire message, a timer expiry or a local event.")
	f.Add(declAccessor("Event", "Kind", jen.Qual(fsmPkg, "EventKind"), ev("Kind")))
	comment(f, "Role is the sender of a message event, the owner of a timer or the observer of a local event.")
	f.Add(declAccessor("Event", "Role", jen.Qual(fsmPkg, "Role"), ev("Role")))
	if len(m.Messages()) > 0 {
		comment(f, "Message is the wire type of a message event, or 0. Several events may share one wire "+
			"type (a status frame with different states).")
		f.Add(declAccessor("Event", "Message", jen.Id("Message"), jen.Id("Message").Call(ev("Message"))))
		comment(f, "FailedSend is the local event a sender fires instead of v when its write of v failed "+
			"(the frame is possibly delivered), or 0 for events that are not messages.")
		f.Add(declAccessor("Event", "FailedSend", jen.Id("Event"), jen.Id("Event").Call(ev("FailedSend"))))
	}
	if len(m.Timers()) > 0 {
		comment(f, "Timer is the timer whose expiry v is, or 0.")
		f.Add(declAccessor("Event", "Timer", jen.Id("Timer"), jen.Id("Timer").Call(ev("Timer"))))
	}
}

func timerMethods(f *jen.File, m *spec.Machine) {
	if len(m.Timers()) == 0 {
		return
	}
	comment(f, "Duration is how long the timer runs once armed.")
	f.Add(declAccessor("Timer", "Duration", jen.Qual("time", "Duration"), decl("Timer", "Duration")))
	comment(f, "Event is the event to fire when the timer expires.")
	f.Add(declAccessor("Timer", "Event", jen.Id("Event"), jen.Id("Event").Call(decl("Timer", "Event"))))
}

func guardSetDecl(f *jen.File, m *spec.Machine) {
	comment(f, "GuardSet is the set of guards that hold, for Transition; it has the layout of fsm.GuardSet.")
	f.Type().Id("GuardSet").Qual(fsmPkg, "GuardSet")
	if len(m.Guards) == 0 {
		return
	}
	comment(f, "With returns s with g added.")
	f.Func().Params(jen.Id("s").Id("GuardSet")).Id("With").Params(jen.Id("g").Id("Guard")).Id("GuardSet").Add(returns(
		jen.Id("GuardSet").Call(jen.Qual(fsmPkg, "GuardSet").Call(jen.Id("s")).Dot("With").Call(jen.Qual(fsmPkg, "GuardID").Call(jen.Id("g"))))))
	comment(f, "Has reports whether g is in s.")
	f.Func().Params(jen.Id("s").Id("GuardSet")).Id("Has").Params(jen.Id("g").Id("Guard")).Bool().Add(returns(
		jen.Qual(fsmPkg, "GuardSet").Call(jen.Id("s")).Dot("Has").Call(jen.Qual(fsmPkg, "GuardID").Call(jen.Id("g")))))
}

func stepDecl(f *jen.File, m *spec.Machine) {
	guard := jen.Id("Guard")
	if len(m.Guards) == 0 {
		guard = jen.Qual(fsmPkg, "GuardID")
	}
	comment(f, "Step is what one event did: a read-only view of the table candidate that handled it, "+
		"with From, Event, To and Guard typed as this package's enums (fsm.StepOf) and Disposition, "+
		"Effects, Reason, Rule and Line from fsm.Step. Effects are shared: do not modify them. The zero "+
		"Step, returned for an invalid state or event, reports zero values.")
	f.Type().Id("Step").Op("=").Qual(fsmPkg, "StepOf").Index(jen.List(jen.Id("State"), jen.Id("Event"), guard))
}

func transitionFunc(f *jen.File) {
	comment(f, "Transition is the pure transition function. It selects the candidate of the (s, e) "+
		"cell whose guard is in held (or the fallback) and returns the step with its effects. It changes "+
		"nothing, runs no hook and allocates nothing for valid inputs: the step and the error are shared, "+
		"read-only values of Table.\n\n"+
		"A rejected event returns a *fsm.TransitionError naming the machine, state and event "+
		"(errors.Is(err, fsm.ErrRejected)); Step.To() then equals s. An invalid state or event returns "+
		"the zero Step and a *fsm.InvalidError.")
	// Two statements, not a helper taking Table.Transition's results: the
	// compiler then inlines Transition into its callers (cost under 80).
	f.Func().Id("Transition").Params(jen.Id("s").Id("State"), jen.Id("e").Id("Event"), jen.Id("held").Id("GuardSet")).Params(jen.Id("Step"), jen.Error()).Block(
		jen.List(jen.Id("st"), jen.Err()).Op(":=").Id("Table").Dot("Transition").Call(
			jen.Qual(fsmPkg, "StateID").Call(jen.Id("s")), jen.Qual(fsmPkg, "EventID").Call(jen.Id("e")), jen.Qual(fsmPkg, "GuardSet").Call(jen.Id("held"))),
		jen.Return(jen.Id("Step").Values(jen.Id("Step").Op(":").Id("st")), jen.Err()),
	)
}

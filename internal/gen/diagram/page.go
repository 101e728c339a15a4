package diagram

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/agentwire/agentwire/spec"
)

// Page renders the Markdown reference page of m: its doc and scope, the
// Mermaid diagram (drawn inline by GitHub) with a link to <name>.svg beside
// it, tables of states, events, guards, actions, timers and transitions, the
// full state × event matrix and the reasons of every ignored or rejected
// cell. It starts with Header in an HTML comment, which GitHub hides.
func Page(m *spec.Machine) []byte {
	p := &page{m: m}
	p.line(xmlComment(Header(m.Name)))
	p.line("")
	p.line("# " + m.Name)
	if m.Doc != "" {
		p.line("")
		p.line(mdText(m.Doc))
	}
	if m.Scope != "" {
		p.line("")
		p.line("**Scope:** one instance per " + mdText(m.Scope) + ".")
	}
	p.diagram()
	p.states()
	p.events()
	p.named("Guards", "Guard", guardRows(m))
	p.named("Actions", "Action", actionRows(m))
	p.timers()
	p.transitions()
	p.matrix()
	p.refusals()
	return p.b.Bytes()
}

type page struct {
	m *spec.Machine
	b bytes.Buffer
}

func (p *page) line(s string) { p.b.WriteString(s + "\n") }

// section starts a level-two heading with a blank line on either side.
func (p *page) section(title string) {
	p.line("")
	p.line("## " + title)
	p.line("")
}

// row writes one table row; cells must already be escaped with mdCell.
func (p *page) row(cells ...string) { p.line("| " + strings.Join(cells, " | ") + " |") }

// table writes a header row and its delimiter row.
func (p *page) table(headers ...string) {
	p.row(headers...)
	rule := make([]string, len(headers))
	for i := range rule {
		rule[i] = "---"
	}
	p.row(rule...)
}

// code formats a spec name as a code span. Names are lower_snake_case
// identifiers, so they never hold a backtick or a '|'.
func code(name string) string { return "`" + name + "`" }

func codes(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = code(n)
	}
	return strings.Join(out, ", ")
}

func (p *page) diagram() {
	p.section("Diagram")
	p.line("```mermaid")
	writeMermaid(&p.b, p.m)
	p.line("```")
	p.line("")
	p.line("![" + p.m.Name + " state diagram](" + p.m.Name + ".svg)")
	p.line("")
	p.line("Only transitions are drawn; ignored and rejected events are in the matrix below and under [Refusals](#refusals). " +
		"A box shows the state's name, the timers armed in it (⏱) and its internal transitions (↺: the state stays). " +
		"An arrow or box with more than " + strconv.Itoa(shownTriggers) + " triggers names the first " + strconv.Itoa(shownTriggers-1) +
		" and counts the rest (`+N more`); the matrix and [Transitions](#transitions) list every one.")
}

func (p *page) states() {
	p.section("States")
	p.table("State", "Meaning", "Terminal outcome", "Timers armed")
	for _, s := range p.m.States {
		name := code(s.Name)
		if s.Initial {
			name += " (initial)"
		}
		outcome := ""
		if s.Terminal() {
			outcome = s.Outcome.String()
		}
		p.row(name, mdCell(s.Doc), outcome, codes(timerNames(s)))
	}
}

func (p *page) events() {
	p.section("Events")
	p.table("Event", "Kind", "Wire type, timer or observer", "Meaning")
	for _, e := range p.m.Events {
		var source string
		switch e.Kind {
		case spec.EventMessage:
			source = code(e.Message) + " from " + e.From.String()
		case spec.EventTimer:
			source = duration(e.Duration) + ", owned by " + e.By.String()
		case spec.EventLocal:
			source = "observed by " + e.By.String()
		}
		p.row(code(e.Name), e.Kind.String(), source, mdCell(e.Doc))
	}
}

func guardRows(m *spec.Machine) [][2]string {
	rows := make([][2]string, len(m.Guards))
	for i, g := range m.Guards {
		rows[i] = [2]string{g.Name, g.Doc}
	}
	return rows
}

func actionRows(m *spec.Machine) [][2]string {
	rows := make([][2]string, len(m.Actions))
	for i, a := range m.Actions {
		rows[i] = [2]string{a.Name, a.Doc}
	}
	return rows
}

// named writes a name/meaning table, or says there is none so that every
// page has the same sections in the same order.
func (p *page) named(title, column string, rows [][2]string) {
	p.section(title)
	if len(rows) == 0 {
		p.line("None.")
		return
	}
	p.table(column, "Meaning")
	for _, r := range rows {
		p.row(code(r[0]), mdCell(r[1]))
	}
}

func (p *page) timers() {
	p.section("Timers")
	timers := p.m.Timers()
	if len(timers) == 0 {
		p.line("None.")
		return
	}
	p.table("Timer", "Duration", "Owner", "Armed in")
	for _, t := range timers {
		var armed []string
		for _, s := range p.m.States {
			if s.Armed(t) {
				armed = append(armed, s.Name)
			}
		}
		p.row(code(t.Name), duration(t.Duration), t.By.String(), codes(armed))
	}
}

// transitions lists every goto candidate with its effects, which the matrix
// leaves out to keep its cells short.
func (p *page) transitions() {
	p.section("Transitions")
	p.line("Every candidate that changes state or runs effects, in the order the cells are tried.")
	p.line("")
	p.table("From", "Event", "Guard", "To", "Effects")
	for _, s := range p.m.States {
		for _, e := range p.m.Events {
			cell := p.m.Cell(s, e)
			for _, r := range cell {
				if r.Kind != spec.RuleGoto {
					continue
				}
				guard := ""
				switch {
				case r.Guard != nil:
					guard = code(r.Guard.Name)
				case len(cell) > 1:
					guard = "else"
				}
				to := code(r.To.Name)
				if r.Internal() {
					to = "↺ " + to
				}
				var effects []string
				for _, ef := range r.Effects {
					effects = append(effects, ef.String())
				}
				p.row(code(s.Name), code(e.Name), guard, to, codes(effects))
			}
		}
	}
}

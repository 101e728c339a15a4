package diagram

import (
	"strings"

	"github.com/agentwire/agentwire/spec"
)

// matrix writes the full state × event table, every cell expanded, including
// those a wildcard rule declared: the spec promises one reviewed answer per
// cell, and this is where a reviewer checks it.
func (p *page) matrix() {
	p.section("State × event matrix")
	p.line("Rows are states, columns events. `→ x`: go to x; `↺`: internal transition (the state stays, effects run); " +
		"`ignore`: accepted, nothing happens; `reject`: refused, the state is unchanged. " +
		"Guarded candidates are tried left to right and `else` is the fallback. Effects are under [Transitions](#transitions), reasons under [Refusals](#refusals).")
	p.line("")
	headers := []string{"State"}
	for _, e := range p.m.Events {
		headers = append(headers, code(e.Name))
	}
	p.table(headers...)
	for _, s := range p.m.States {
		cells := []string{code(s.Name)}
		for _, e := range p.m.Events {
			cells = append(cells, matrixCell(p.m.Cell(s, e)))
		}
		p.row(cells...)
	}
}

// matrixCell summarises one cell, e.g. "[newer_revision] → ready; else ignore".
func matrixCell(cands []*spec.Rule) string {
	parts := make([]string, len(cands))
	for i, r := range cands {
		var what string
		switch {
		case r.Internal():
			what = "↺"
		case r.Kind == spec.RuleGoto:
			what = "→ " + r.To.Name
		default:
			what = r.Kind.String()
		}
		switch {
		case r.Guard != nil:
			parts[i] = "[" + r.Guard.Name + "] " + what
		case len(cands) > 1:
			parts[i] = "else " + what
		default:
			parts[i] = what
		}
	}
	return strings.Join(parts, "; ")
}

// refusals lists the reason of every ignored or rejected cell, one row per
// state, outcome and reason, so a reason shared by many events (a wildcard,
// typically) is written once.
func (p *page) refusals() {
	p.section("Refusals")
	type group struct {
		kind   spec.RuleKind
		reason string
		events []string
	}
	p.table("State", "Events", "Outcome", "Reason")
	for _, s := range p.m.States {
		var groups []*group
		for _, e := range p.m.Events {
			for _, r := range p.m.Cell(s, e) {
				if r.Kind == spec.RuleGoto {
					continue
				}
				var g *group
				for _, x := range groups {
					if x.kind == r.Kind && x.reason == r.Reason {
						g = x
						break
					}
				}
				if g == nil {
					g = &group{kind: r.Kind, reason: r.Reason}
					groups = append(groups, g)
				}
				g.events = append(g.events, e.Name)
			}
		}
		for _, g := range groups {
			p.row(code(s.Name), codes(g.events), g.kind.String(), mdCell(g.reason))
		}
	}
}

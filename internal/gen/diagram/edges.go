package diagram

import (
	"strconv"
	"strings"

	"github.com/agentwire/agentwire/spec"
)

// edge is every goto candidate between one pair of states. Parallel rules
// are merged so that a pair of states is joined by one arrow with a
// multi-line label, instead of a fan of overlapping arrows.
type edge struct {
	from, to *spec.State
	arcs     []arc
}

// arc is one goto candidate drawn on an edge.
type arc struct {
	rule *spec.Rule
	// otherwise marks the unguarded fallback of a cell that also has guarded
	// candidates: it is labelled [else] so that readers do not take it for
	// an unconditional transition.
	otherwise bool
}

// edges walks the cell table state by state, event by event, candidate by
// candidate, so the order depends only on declaration order in the spec.
// Walking cells rather than m.Rules puts each state's exits together.
func edges(m *spec.Machine) []*edge {
	type pair struct{ from, to int }
	index := map[pair]*edge{}
	var out []*edge
	for _, s := range m.States {
		for _, e := range m.Events {
			cell := m.Cell(s, e)
			guarded := len(cell) > 1
			for _, r := range cell {
				if r.Kind != spec.RuleGoto {
					continue
				}
				k := pair{r.From.Index, r.To.Index}
				ed := index[k]
				if ed == nil {
					ed = &edge{from: r.From, to: r.To}
					index[k] = ed
					out = append(out, ed)
				}
				ed.arcs = append(ed.arcs, arc{rule: r, otherwise: guarded && r.Guard == nil})
			}
		}
	}
	return out
}

// trigger is the plain-text label of one arc: the event, a timer's duration
// and the guard, e.g. "renew [has_capacity]" or "lease_timeout (1m30s)".
// Callers escape it for their own format.
func (a arc) trigger() string {
	var b strings.Builder
	e := a.rule.Event
	b.WriteString(e.Name)
	if e.Kind == spec.EventTimer {
		b.WriteString(" (" + duration(e.Duration) + ")")
	}
	switch {
	case a.rule.Guard != nil:
		b.WriteString(" [" + a.rule.Guard.Name + "]")
	case a.otherwise:
		b.WriteString(" [else]")
	}
	return b.String()
}

// shownTriggers is the most trigger lines a Mermaid arrow, or the internal
// transitions of a box, carry: a tall label (five stream events on run's
// streaming) spills over the neighbouring states, so past this many the
// label names the first ones and counts the rest. The page's matrix and
// transition table list every trigger.
const shownTriggers = 3

// triggerLines is the label of ed, one line per arc, or, when it has more
// than shownTriggers arcs, the first shownTriggers-1 of them and "+N more".
func (ed *edge) triggerLines() []string {
	n := len(ed.arcs)
	if n > shownTriggers {
		n = shownTriggers - 1
	}
	lines := make([]string, n, n+1)
	for i, a := range ed.arcs[:n] {
		lines[i] = a.trigger()
	}
	if rest := len(ed.arcs) - n; rest > 0 {
		lines = append(lines, "+"+strconv.Itoa(rest)+" more")
	}
	return lines
}

// effectsWidth is the width, in characters, past which an arc's effects
// wrap onto another line. Real transitions carry up to six effects; on one
// line they made edge labels wider than the rest of the picture.
const effectsWidth = 48

// effects lists an arc's effects as the spec writes them, comma-separated,
// in lines of at most effectsWidth characters unless one effect is longer.
func (a arc) effects() []string {
	var lines []string
	var cur string
	for i, ef := range a.rule.Effects {
		part := ef.String()
		if i < len(a.rule.Effects)-1 {
			part += ","
		}
		switch {
		case cur == "":
			cur = part
		case len(cur)+1+len(part) <= effectsWidth:
			cur += " " + part
		default:
			lines = append(lines, cur)
			cur = part
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// timerNames lists the timers armed in s, in declaration order.
func timerNames(s *spec.State) []string {
	names := make([]string, len(s.Timers))
	for i, t := range s.Timers {
		names[i] = t.Name
	}
	return names
}

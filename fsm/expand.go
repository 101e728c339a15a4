package fsm

import (
	"fmt"
	"strconv"
	"strings"
)

// Rule is one rule of a spec file in the compact form a generated package
// writes its table in: names as the spec spells them, so the literal reads
// like the YAML and a change to one rule is a change to one line. Seal
// expands a table's Rules into its Cells once, at start-up; running the
// table never looks at them again.
//
// Rules are placed in order: each explicit rule adds one candidate to every
// (from, on) cell it covers, so a cell tries its candidates in spec order.
// A catch-all (On "*") then fills only the cells of its states that no
// explicit rule declared. A goto whose target is one of its sources (or
// To "same") is an internal transition (Stayed) there and a move
// elsewhere: two candidates, each shared by the cells it covers.
type Rule struct {
	ID      string // the rule's stable name (see Candidate.Rule)
	From    string // state names, comma-separated
	On      string // event names, comma-separated, or "*"
	Guard   string // a guard name, or "" for a fallback
	To      string // a state name or "same": a goto
	Ignore  string // the reason of an ignore rule
	Reject  string // the reason of a reject rule
	Effects string // comma-separated, as Table.EffectString renders each one
}

// expand builds t.Cells from t.Rules (and t.Lines). The names are
// resolved here, once; an unknown one is a *TableError naming the rule.
func (t *Table) expand() error {
	if t.Lines != nil && len(t.Lines) != len(t.Rules) {
		return &TableError{Machine: t.Name, Source: t.Source, Msg: fmt.Sprintf("%d lines for %d rules", len(t.Lines), len(t.Rules))}
	}
	states := map[string]StateID{}
	for i := range t.States {
		states[t.States[i].Name] = StateID(i + 1)
	}
	events := map[string]EventID{}
	for i := range t.Events {
		events[t.Events[i].Name] = EventID(i + 1)
	}
	cells := make([]Cell, len(t.States)*len(t.Events))
	type catchAll struct {
		state StateID
		c     *Candidate
	}
	var rest []catchAll
	// Every candidate lives in one array (a goto is at most two), and
	// every cell's list in one more below, so that the expanded table is
	// as compact in memory as a literal would be.
	pool := make([]Candidate, 0, 2*len(t.Rules))
	alloc := func(c Candidate) *Candidate {
		pool = append(pool, c)
		return &pool[len(pool)-1]
	}
	for i := range t.Rules {
		r := &t.Rules[i]
		line := 0
		if t.Lines != nil {
			line = t.Lines[i]
		}
		bad := func(format string, args ...any) error {
			return &TableError{Machine: t.Name, Source: t.Source, Msg: "rule " + r.ID + " (line " + strconv.Itoa(line) + "): " + fmt.Sprintf(format, args...)}
		}
		var from []StateID
		for _, name := range split(r.From) {
			s, ok := states[name]
			if !ok {
				return bad("unknown state %q", name)
			}
			from = append(from, s)
		}
		base := Candidate{Rule: r.ID, Line: line}
		if r.Guard != "" {
			g, err := t.Parse(DeclGuard, r.Guard)
			if err != nil {
				return bad("unknown guard %q", r.Guard)
			}
			base.Guard = GuardID(g)
		}
		var to StateID
		switch {
		case r.To != "" && r.Ignore == "" && r.Reject == "":
			base.Disp = Moved
			if r.To != "same" {
				if to = states[r.To]; to == 0 {
					return bad("unknown state %q", r.To)
				}
			}
		case r.To == "" && r.Ignore != "" && r.Reject == "":
			base.Disp, base.Reason = Ignored, r.Ignore
		case r.To == "" && r.Ignore == "" && r.Reject != "":
			base.Disp, base.Reason = Rejected, r.Reject
		default:
			return bad("a rule needs exactly one of To, Ignore and Reject")
		}
		for _, text := range split(r.Effects) {
			ef, ok := t.parseEffect(text, events)
			if !ok {
				return bad("cannot read effect %q", text)
			}
			base.Effects = append(base.Effects, ef)
		}
		// A goto is one candidate per disposition: moved from the other
		// sources, stayed in its target.
		var moved, stayed *Candidate
		candidate := func(s StateID) *Candidate {
			if base.Disp != Moved {
				if moved == nil {
					moved = alloc(base)
				}
				return moved
			}
			if to == 0 || to == s {
				if stayed == nil {
					c := base
					c.Disp = Stayed
					stayed = alloc(c)
				}
				return stayed
			}
			if moved == nil {
				c := base
				c.To = to
				moved = alloc(c)
			}
			return moved
		}
		if r.On == "*" {
			for _, s := range from {
				rest = append(rest, catchAll{s, candidate(s)})
			}
			continue
		}
		for _, s := range from {
			for _, name := range split(r.On) {
				e, ok := events[name]
				if !ok {
					return bad("unknown event %q", name)
				}
				cell := &cells[(int(s)-1)*len(t.Events)+int(e)-1]
				cell.Cands = append(cell.Cands, candidate(s))
			}
		}
	}
	for _, ca := range rest {
		row := cells[(int(ca.state)-1)*len(t.Events) : int(ca.state)*len(t.Events)]
		for i := range row {
			if len(row[i].Cands) == 0 {
				row[i].Cands = []*Candidate{ca.c}
			}
		}
	}
	n := 0
	for i := range cells {
		n += len(cells[i].Cands)
	}
	backing := make([]*Candidate, 0, n)
	for i := range cells {
		start := len(backing)
		backing = append(backing, cells[i].Cands...)
		cells[i].Cands = backing[start:len(backing):len(backing)]
	}
	t.Cells = cells
	return nil
}

// parseEffect reads one effect as EffectString writes it:
// "[core: |runtime: ]send|start|stop|do|raise NAME".
func (t *Table) parseEffect(text string, events map[string]EventID) (Effect, bool) {
	ef := Effect{Role: RoleBoth}
	if role, rest, ok := strings.Cut(text, ": "); ok {
		switch role {
		case "core":
			ef.Role = RoleCore
		case "runtime":
			ef.Role = RoleRuntime
		default:
			return ef, false
		}
		text = rest
	}
	verb, name, ok := strings.Cut(text, " ")
	if !ok {
		return ef, false
	}
	index := func(names []string) int {
		for i, n := range names {
			if n == name {
				return i + 1
			}
		}
		return 0
	}
	switch verb {
	case "send":
		ef.Kind, ef.Message = EffectSend, MessageID(index(t.Messages))
		return ef, ef.Message != 0
	case "start", "stop":
		ef.Kind = EffectStart
		if verb == "stop" {
			ef.Kind = EffectStop
		}
		for i := range t.Timers {
			if t.Timers[i].Name == name {
				ef.Timer = TimerID(i + 1)
			}
		}
		return ef, ef.Timer != 0
	case "do":
		ef.Kind, ef.Action = EffectDo, ActionID(index(t.Actions))
		return ef, ef.Action != 0
	case "raise":
		ef.Kind, ef.Raise = EffectRaise, events[name]
		return ef, ef.Raise != 0
	}
	return ef, false
}

// split reads a comma-separated list of names ("" is none).
func split(list string) []string {
	if list == "" {
		return nil
	}
	parts := strings.Split(list, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

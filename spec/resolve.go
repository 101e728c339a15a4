package spec

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// resolveRules turns the raw rule nodes into per-cell candidates, reporting
// every unknown name with its line. It first bounds the length of every
// declared name (see MaxNameBytes); a machine with a longer one is not
// resolved further.
//
// It returns the derived rule IDs that clash, to report only when the spec
// has no other error: two rules that derive one ID almost always cover the
// same cell with the same guard, which validation explains better.
func resolveRules(d *decoder, m *Machine, raws []rawRule, states map[string]*State, events map[string]*Event, broken map[string]bool) (clashes []idClash) {
	if !checkNameLengths(d, m) {
		return nil
	}
	sug := &suggester{budget: suggestBudget}
	guards := map[string]*Guard{}
	for _, g := range m.Guards {
		guards[g.Name] = g
	}
	actions := map[string]*Action{}
	for _, a := range m.Actions {
		actions[a.Name] = a
	}
	m.cells = make([][][]*Rule, len(m.States))
	for i := range m.cells {
		m.cells[i] = make([][]*Rule, len(m.Events))
	}
	// wildcard[state] is the catch-all rule for that state, applied after
	// every explicit rule has been placed.
	wildcard := map[*State]*Rule{}
	// ids maps every rule ID to the rule that has it, so two rules never
	// share one.
	ids := map[string]Pos{}

	for _, raw := range raws {
		pos := d.pos(raw.node)
		// bad collects every problem of the rule before it is skipped, so
		// one run reports all of them, effects included.
		bad := false
		var from []*State
		seenFrom := map[string]bool{}
		for _, n := range raw.from {
			if d.tooLong(n, n.Value, "state") {
				bad = true
				continue
			}
			if seenFrom[n.Value] {
				d.errs.add(d.pos(n), "from lists state %q twice", n.Value)
				bad = true
				continue
			}
			seenFrom[n.Value] = true
			s, ok := states[n.Value]
			if !ok {
				d.errs.add(d.pos(n), "rule names unknown state %q%s", n.Value, suggestFrom(sug, "state", n.Value, states))
				bad = true
				continue
			}
			from = append(from, s)
		}
		wild := len(raw.on) == 1 && raw.on[0].Value == "*"
		var on []*Event
		if !wild {
			seenOn := map[string]bool{}
			for _, n := range raw.on {
				switch {
				case d.tooLong(n, n.Value, "event"):
					bad = true
					continue
				case n.Value == "*":
					d.errs.add(d.pos(n), `"*" must be the whole on: value, not a list entry`)
					bad = true
					continue
				case seenOn[n.Value]:
					d.errs.add(d.pos(n), "on lists event %q twice", n.Value)
					bad = true
					continue
				}
				seenOn[n.Value] = true
				e, ok := events[n.Value]
				if !ok {
					if !broken[n.Value] {
						d.errs.add(d.pos(n), "rule names unknown event %q%s", n.Value, suggestFrom(sug, "event", n.Value, events))
					}
					bad = true
					continue
				}
				on = append(on, e)
			}
		}
		tmpl := Rule{Pos: pos, Wildcard: wild}
		if id, ok := ruleID(d, raw, wild); !ok {
			bad = true
		} else if prev, dup := ids[id]; dup && raw.id != nil {
			d.errs.add(pos, "rule id %q is already the id of the rule at %s", id, prev)
			bad = true
		} else if dup {
			clashes = append(clashes, idClash{pos, prev, id})
			tmpl.ID = id
		} else {
			ids[id] = pos
			tmpl.ID = id
		}
		outcomes := 0
		if raw.to != nil {
			outcomes++
			tmpl.Kind = RuleGoto
		}
		if raw.ign != nil {
			outcomes++
			tmpl.Kind = RuleIgnore
			tmpl.Reason, _ = d.str(raw.ign, "ignore reason")
		}
		if raw.rej != nil {
			outcomes++
			tmpl.Kind = RuleReject
			tmpl.Reason, _ = d.str(raw.rej, "reject reason")
		}
		if outcomes != 1 {
			d.errs.add(pos, "a rule needs exactly one of to, ignore or reject")
			bad = true
		}
		if outcomes == 1 && tmpl.Kind != RuleGoto && strings.TrimSpace(tmpl.Reason) == "" {
			d.errs.add(pos, "%s rule needs a reason", article(tmpl.Kind))
			bad = true
		}
		if raw.guard != nil {
			name, _ := d.str(raw.guard, "guard")
			if g, ok := guards[name]; ok {
				tmpl.Guard = g
			} else if !d.tooLong(raw.guard, name, "guard") {
				d.errs.add(d.pos(raw.guard), "rule names unknown guard %q%s", name, suggestFrom(sug, "guard", name, guards))
				bad = true
			} else {
				bad = true
			}
		}
		if wild && (tmpl.Kind == RuleGoto || raw.guard != nil) {
			d.errs.add(pos, `on: "*" is only allowed on unguarded ignore or reject rules`)
			bad = true
		}
		var to *State
		same := false
		if outcomes == 1 && tmpl.Kind == RuleGoto {
			name, _ := d.str(raw.to, "to")
			if name == "same" {
				same = true
			} else if s, ok := states[name]; ok {
				to = s
			} else if !d.tooLong(raw.to, name, "state") {
				d.errs.add(d.pos(raw.to), "rule goes to unknown state %q%s", name, suggestFrom(sug, "state", name, states))
				bad = true
			} else {
				bad = true
			}
		} else if outcomes == 1 && len(raw.effects) > 0 {
			d.errs.add(pos, "%s rule cannot have effects", article(tmpl.Kind))
			bad = true
		}
		for _, en := range raw.effects {
			if ef := d.effect(en, events, actions, broken, sug); ef != nil {
				tmpl.Effects = append(tmpl.Effects, ef)
			} else {
				bad = true
			}
		}
		if bad {
			continue
		}
		for _, s := range from {
			if wild {
				r := tmpl
				r.From = s
				if prev, dup := wildcard[s]; dup {
					d.errs.add(pos, "state %q already has a catch-all rule at %s", s.Name, prev.Pos)
					continue
				}
				wildcard[s] = &r
				continue
			}
			for _, e := range on {
				r := tmpl
				r.From, r.Event, r.To = s, e, to
				if same {
					r.To = s
				}
				rule := &r
				m.Rules = append(m.Rules, rule)
				m.cells[s.Index][e.Index] = append(m.cells[s.Index][e.Index], rule)
			}
		}
	}
	// Catch-alls fill only the cells nothing else declared, in event order.
	for _, s := range m.States {
		w := wildcard[s]
		if w == nil {
			continue
		}
		for _, e := range m.Events {
			if len(m.cells[s.Index][e.Index]) != 0 {
				continue
			}
			r := *w
			r.Event = e
			rule := &r
			m.Rules = append(m.Rules, rule)
			m.cells[s.Index][e.Index] = []*Rule{rule}
		}
	}
	return clashes
}

// idClash is a rule whose derived ID another rule already has.
type idClash struct {
	pos, prev Pos
	id        string
}

func (c idClash) report(errs *errorList) {
	errs.add(c.pos, "rule id %q, derived from the rule's first state, event and guard, is already the id of the rule at %s; give this rule its own id:", c.id, c.prev)
}

func (d *decoder) effect(n *yaml.Node, events map[string]*Event, actions map[string]*Action, broken map[string]bool, sug *suggester) *Effect {
	if n.Kind == yaml.MappingNode {
		d.errs.add(d.pos(n), `an effect must be a string; one with a role prefix needs quotes, e.g. "runtime: send preparation_status"`)
		return nil
	}
	text, ok := d.str(n, "effect")
	if !ok {
		return nil
	}
	ef := &Effect{Role: RoleBoth} // both peers unless the spec narrows it
	body := strings.TrimSpace(text)
	roleSet := false
	if i := strings.Index(body, ":"); i >= 0 {
		switch strings.TrimSpace(body[:i]) {
		case "core":
			ef.Role = RoleCore
		case "runtime":
			ef.Role = RoleRuntime
		default:
			d.errs.add(d.pos(n), "effect %q: the prefix before ':' must be core or runtime", text)
			return nil
		}
		roleSet = true
		body = strings.TrimSpace(body[i+1:])
	}
	verb, arg, _ := strings.Cut(body, " ")
	arg = strings.TrimSpace(arg)
	if d.tooLong(n, arg, "effect argument") {
		return nil
	}
	if arg == "" || strings.ContainsAny(arg, " \t") {
		d.errs.add(d.pos(n), "effect %q must be <verb> <name>, e.g. \"send preparation_status\" or \"start admission_expiry\"", text)
		return nil
	}
	switch verb {
	case "send":
		if !identRE.MatchString(arg) {
			d.errs.add(d.pos(n), "effect %q: wire type %q must be lower_snake_case", text, arg)
			return nil
		}
		ef.Kind, ef.Message = EffectSend, arg
	case "start", "stop":
		e, ok := events[arg]
		if !ok && broken[arg] {
			return nil // reported where the timer is declared
		}
		if !ok || e.Kind != EventTimer {
			d.errs.add(d.pos(n), "effect %q: %q is not a declared timer", text, arg)
			return nil
		}
		ef.Kind, ef.Timer = EffectStart, e
		if verb == "stop" {
			ef.Kind = EffectStop
		}
		// A timer's effects belong to its owner unless the spec narrows it.
		if !roleSet {
			ef.Role = e.By
		} else if e.By != RoleBoth && ef.Role != e.By {
			d.errs.add(d.pos(n), "effect %q: timer %q is owned by %s", text, arg, e.By)
			return nil
		}
	case "do":
		a, ok := actions[arg]
		if !ok {
			d.errs.add(d.pos(n), "effect %q: %q is not a declared action%s", text, arg, suggestFrom(sug, "action", arg, actions))
			return nil
		}
		ef.Kind, ef.Action = EffectDo, a
	case "raise":
		e, ok := events[arg]
		if !ok || e.Kind == EventTimer {
			d.errs.add(d.pos(n), "effect %q: %q is not a declared message or local event", text, arg)
			return nil
		}
		ef.Kind, ef.Raise = EffectRaise, e
	default:
		d.errs.add(d.pos(n), "effect %q: unknown verb %q (send, start, stop, do or raise)", text, verb)
		return nil
	}
	return ef
}

// article names a rule kind with its article, for messages.
func article(k RuleKind) string {
	switch k {
	case RuleIgnore:
		return "an ignore"
	case RuleReject:
		return "a reject"
	}
	return "a goto"
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]bool) []string { return keys(m) }

// MaxNameBytes bounds every name of a machine: its own, its states',
// events', guards' and actions', and every reference to one. Names are
// short identifiers that become Go identifiers and diagram labels; the
// bound also keeps every message that quotes a name, and the "did you
// mean" search over names, small.
const MaxNameBytes = 64

// checkNameLengths reports every declared name over MaxNameBytes at its
// line, and whether there was none.
func checkNameLengths(d *decoder, m *Machine) bool {
	ok := true
	check := func(pos Pos, what, name string) {
		if len(name) > MaxNameBytes {
			d.errs.add(pos, "%s name %s is %d bytes long; names are at most %d bytes", what, shortName(name), len(name), MaxNameBytes)
			ok = false
		}
	}
	check(m.Pos, "machine", m.Name)
	for _, s := range m.States {
		check(s.Pos, "state", s.Name)
	}
	for _, e := range m.Events {
		check(e.Pos, "event", e.Name)
	}
	for _, g := range m.Guards {
		check(g.Pos, "guard", g.Name)
	}
	for _, a := range m.Actions {
		check(a.Pos, "action", a.Name)
	}
	return ok
}

// tooLong reports a reference over MaxNameBytes at n's line: no declared
// name is that long, so it names nothing, and it is not quoted in full.
func (d *decoder) tooLong(n *yaml.Node, name, what string) bool {
	if len(name) <= MaxNameBytes {
		return false
	}
	d.errs.add(d.pos(n), "%s name %s is %d bytes long; names are at most %d bytes", what, shortName(name), len(name), MaxNameBytes)
	return true
}

// shortName quotes the start of an over-long name.
func shortName(name string) string {
	const keep = 24
	if len(name) <= keep {
		return fmt.Sprintf("%q", name)
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", name[:cut])
}

// suggestBudget bounds the edit-distance work (table cells) that the
// suggestions of one machine may cost; past it, unknown names are reported
// without a suggestion.
const suggestBudget = 1 << 22

// suggester makes the suggestions of one machine within a shared budget,
// sorting each kind of name once rather than once per unknown reference.
type suggester struct {
	budget int
	sorted map[string][]string // by kind
}

// suggestFrom is suggest over the names of m, a map of one kind of name.
func suggestFrom[V any](s *suggester, kind, name string, m map[string]V) string {
	if s.sorted == nil {
		s.sorted = map[string][]string{}
	}
	names, ok := s.sorted[kind]
	if !ok {
		names = keys(m)
		s.sorted[kind] = names
	}
	return suggestWithin(name, names, &s.budget)
}

// suggest names the closest known name when a reference is a likely typo.
func suggest(name string, known []string) string {
	budget := suggestBudget
	return suggestWithin(name, known, &budget)
}

// suggestWithin is suggest drawing its work from *budget. Only names
// within MaxNameBytes are compared, a candidate whose length alone puts it
// out of reach is skipped, and each distance is computed in a band around
// the diagonal: a comparison costs at most (MaxNameBytes+1) × 5 cells.
func suggestWithin(name string, known []string, budget *int) string {
	if len(name) > MaxNameBytes {
		return ""
	}
	best, bestDist := "", 3
	for _, k := range known {
		if len(k) > MaxNameBytes || abs(len(k)-len(name)) >= bestDist {
			continue
		}
		cost := (len(name) + 1) * (2*(bestDist-1) + 1)
		if *budget < cost {
			break
		}
		*budget -= cost
		if dist := editDistance(name, k, bestDist-1); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// editDistance is the Levenshtein distance of a and b when it is at most
// limit, and limit+1 otherwise. Only cells within limit of the diagonal
// can hold a distance within limit, so only those are computed.
func editDistance(a, b string, limit int) int {
	if abs(len(a)-len(b)) > limit {
		return limit + 1
	}
	over := limit + 1
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = min(j, over)
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-limit), min(len(b), i+limit)
		cur[0] = min(i, over)
		if lo > 1 {
			cur[lo-1] = over
		}
		rowMin := cur[0]
		if lo > 1 {
			rowMin = over
		}
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost, over)
			rowMin = min(rowMin, cur[j])
		}
		if hi < len(b) {
			cur[hi+1] = over
		}
		if rowMin >= over {
			return over
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], over)
}

// ruleID is the stable name of a rule: its id: when the spec gives one,
// otherwise <first from>_<first on>, with "any" for on: "*" and
// _if_<guard> for a guarded rule (running_restart_if_cancel_journaled). It
// depends on nothing but the rule itself, so inserting, moving or deleting
// another rule never renames it; two rules that would derive the same name
// (which two valid rules cannot, unless names run into each other) need an
// id: on one of them.
func ruleID(d *decoder, raw rawRule, wild bool) (string, bool) {
	if raw.id != nil {
		return d.ident(raw.id, "rule id")
	}
	if len(raw.from) == 0 || len(raw.on) == 0 {
		return "", false
	}
	on := raw.on[0].Value
	if wild {
		on = "any"
	}
	id := raw.from[0].Value + "_" + on
	if raw.guard != nil {
		id += "_if_" + raw.guard.Value
	}
	return id, true
}

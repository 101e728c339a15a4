package spec

import (
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// resolveRules turns the raw rule nodes into per-cell candidates, reporting
// every unknown name with its line.
func resolveRules(d *decoder, m *Machine, raws []rawRule, states map[string]*State, events map[string]*Event, broken map[string]bool) {
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

	for _, raw := range raws {
		pos := d.pos(raw.node)
		// bad collects every problem of the rule before it is skipped, so
		// one run reports all of them, effects included.
		bad := false
		var from []*State
		seenFrom := map[string]bool{}
		for _, n := range raw.from {
			if seenFrom[n.Value] {
				d.errs.add(d.pos(n), "from lists state %q twice", n.Value)
				bad = true
				continue
			}
			seenFrom[n.Value] = true
			s, ok := states[n.Value]
			if !ok {
				d.errs.add(d.pos(n), "rule names unknown state %q%s", n.Value, suggest(n.Value, keys(states)))
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
						d.errs.add(d.pos(n), "rule names unknown event %q%s", n.Value, suggest(n.Value, keys(events)))
					}
					bad = true
					continue
				}
				on = append(on, e)
			}
		}
		tmpl := Rule{Pos: pos, Wildcard: wild}
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
			} else {
				d.errs.add(d.pos(raw.guard), "rule names unknown guard %q%s", name, suggest(name, keys(guards)))
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
			} else {
				d.errs.add(d.pos(raw.to), "rule goes to unknown state %q%s", name, suggest(name, keys(states)))
				bad = true
			}
		} else if outcomes == 1 && len(raw.effects) > 0 {
			d.errs.add(pos, "%s rule cannot have effects", article(tmpl.Kind))
			bad = true
		}
		for _, en := range raw.effects {
			if ef := d.effect(en, events, actions, broken); ef != nil {
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
}

func (d *decoder) effect(n *yaml.Node, events map[string]*Event, actions map[string]*Action, broken map[string]bool) *Effect {
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
			d.errs.add(d.pos(n), "effect %q: %q is not a declared action%s", text, arg, suggest(arg, keys(actions)))
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

// suggest names the closest known name when a reference is a likely typo.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if dist := editDistance(name, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

package spec

import (
	"slices"
	"strings"
)

// validate checks the structural rules of a resolved machine (see
// spec/README.md). Every violation is recorded; nothing stops at the first.
func validate(m *Machine, errs *errorList) {
	var initial []*State
	for _, s := range m.States {
		if s.Initial {
			initial = append(initial, s)
			if s.Terminal() {
				errs.add(s.Pos, "initial state %q cannot be terminal", s.Name)
			}
			if len(s.Timers) > 0 {
				var names []string
				for _, t := range s.Timers {
					names = append(names, t.Name)
				}
				errs.add(s.Pos, "initial state %q cannot list %s: a new instance starts with no timer armed", s.Name, listNames("timer", names))
			}
		}
	}
	switch len(initial) {
	case 0:
		errs.add(m.Pos, "machine %q has no initial state (mark one with initial: true)", m.Name)
	case 1:
	default:
		for _, s := range initial[1:] {
			errs.add(s.Pos, "state %q is a second initial state; %q is already initial", s.Name, initial[0].Name)
		}
	}
	if len(m.States) == 0 || len(m.Events) == 0 {
		errs.add(m.Pos, "machine %q needs at least one state and one event", m.Name)
		return
	}

	checkCells(m, errs)
	checkGraph(m, initial, errs)
	checkTimers(m, errs)
	checkUse(m, errs)
	checkProtocol(m, errs)
}

func checkCells(m *Machine, errs *errorList) {
	for _, s := range m.States {
		var missing []string
		for _, e := range m.Events {
			cands := m.Cell(s, e)
			if len(cands) == 0 {
				missing = append(missing, e.Name)
				continue
			}
			var fallback *Rule
			seen := map[*Guard]*Rule{}
			for _, r := range cands {
				if fallback != nil {
					errs.add(r.Pos, "rule for (%s, %s) can never be selected: the unguarded rule at %s already handles that cell", s.Name, e.Name, fallback.Pos)
					continue
				}
				if r.Guard == nil {
					fallback = r
					continue
				}
				if prev, dup := seen[r.Guard]; dup {
					errs.add(r.Pos, "duplicate rule for (%s, %s) with guard %q: the rule at %s has the same guard", s.Name, e.Name, r.Guard.Name, prev.Pos)
					continue
				}
				seen[r.Guard] = r
			}
			if fallback == nil {
				errs.add(cands[len(cands)-1].Pos, "cell (%s, %s) has only guarded rules: add an unguarded fallback (to, ignore or reject) after them", s.Name, e.Name)
			}
			if s.Terminal() {
				for _, r := range cands {
					if r.Kind == RuleGoto {
						errs.add(r.Pos, "terminal state %q has an outgoing transition on %q: a terminal state may only ignore or reject", s.Name, e.Name)
					}
				}
			}
		}
		if len(missing) > 0 {
			errs.add(s.Pos, "state %q does not declare %s: add a rule, an ignore or a reject", s.Name, listNames("event", missing))
		}
	}
}

func listNames(what string, names []string) string {
	if len(names) == 1 {
		return what + " " + names[0]
	}
	return what + "s " + strings.Join(names, ", ")
}

func checkGraph(m *Machine, initial []*State, errs *errorList) {
	if len(initial) == 0 {
		return
	}
	reached := make([]bool, len(m.States))
	queue := []*State{initial[0]}
	reached[initial[0].Index] = true
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				if r.Kind == RuleGoto && !reached[r.To.Index] {
					reached[r.To.Index] = true
					queue = append(queue, r.To)
				}
			}
		}
	}
	for _, s := range m.States {
		if !reached[s.Index] {
			errs.add(s.Pos, "state %q is unreachable from the initial state %q", s.Name, initial[0].Name)
		}
		if s.Terminal() {
			continue
		}
		exit := false
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				if r.Kind == RuleGoto && r.To != s {
					exit = true
				}
			}
		}
		if !exit {
			errs.add(s.Pos, "state %q is not terminal but no rule leaves it: add a transition or mark it terminal", s.Name)
		}
	}
}

// checkTimers makes each state's armed set follow from the effects of every
// transition into it, so that Restore can re-arm exactly the right timers.
//
// Armed sets are bit sets over the machine's timers, built once per state,
// so each rule costs one copy and one comparison of a few words plus its
// effects: the check is linear in the size of the table, and it allocates
// only the sets and the messages of the rules that break it.
func checkTimers(m *Machine, errs *errorList) {
	timers := make([]*Event, 0, len(m.Events))
	for _, e := range m.Events {
		if e.Kind == EventTimer {
			timers = append(timers, e)
		}
	}
	if len(timers) == 0 {
		return
	}
	bit := make([]int, len(m.Events)) // by event index: the timer's bit, or -1
	for i := range bit {
		bit[i] = -1
	}
	for i, t := range timers {
		bit[t.Index] = i
	}
	bitOf := func(e *Event) (int, bool) {
		if e == nil || e.Index < 0 || e.Index >= len(bit) || m.Events[e.Index] != e || bit[e.Index] < 0 {
			return 0, false
		}
		return bit[e.Index], true
	}
	words := (len(timers) + 63) / 64
	sets := make([]uint64, (len(m.States)+1)*words) // one per state, then the scratch set
	setOf := func(s *State) []uint64 { return sets[s.Index*words : (s.Index+1)*words] }
	for _, s := range m.States {
		for _, t := range s.Timers {
			i, _ := bitOf(t)
			setOf(s)[i/64] |= 1 << (i % 64)
		}
	}
	armed := sets[len(m.States)*words:]
	has := func(set []uint64, t *Event) bool {
		i, ok := bitOf(t)
		return ok && set[i/64]&(1<<(i%64)) != 0
	}
	for _, r := range m.Rules {
		if r.Kind != RuleGoto {
			continue
		}
		from := setOf(r.From)
		if r.Event.Kind == EventTimer && !has(from, r.Event) {
			errs.add(r.Pos, "timer %q cannot expire in state %q, where it is not armed: ignore or reject it there", r.Event.Name, r.From.Name)
			continue
		}
		copy(armed, from)
		if i, ok := bitOf(r.Event); ok {
			armed[i/64] &^= 1 << (i % 64) // a timer that fired is no longer armed
		}
		for _, ef := range r.Effects {
			i, ok := bitOf(ef.Timer)
			switch {
			case !ok:
			case ef.Kind == EffectStop:
				armed[i/64] &^= 1 << (i % 64)
			case ef.Kind == EffectStart:
				armed[i/64] |= 1 << (i % 64)
			}
		}
		to := setOf(r.To)
		if slices.Equal(armed, to) {
			continue
		}
		var extra, lacking []string
		for _, t := range timers {
			switch a, want := has(armed, t), has(to, t); {
			case a && !want:
				extra = append(extra, t.Name)
			case !a && want:
				lacking = append(lacking, t.Name)
			}
		}
		if len(extra) > 0 {
			errs.add(r.Pos, "(%s, %s) -> %s leaves %s armed, but %q does not list it in timers: stop it or arm it in the state", r.From.Name, r.Event.Name, r.To.Name, listNames("timer", extra), r.To.Name)
		}
		if len(lacking) > 0 {
			errs.add(r.Pos, "(%s, %s) -> %s does not arm %s, which %q lists in timers: start it in this rule", r.From.Name, r.Event.Name, r.To.Name, listNames("timer", lacking), r.To.Name)
		}
	}
}

func checkUse(m *Machine, errs *errorList) {
	usedGuard := map[*Guard]bool{}
	usedAction := map[*Action]bool{}
	firing := map[*Event]bool{}
	armed := map[*Event]bool{}
	for _, s := range m.States {
		for _, t := range s.Timers {
			armed[t] = true
		}
	}
	for _, r := range m.Rules {
		if r.Guard != nil {
			usedGuard[r.Guard] = true
		}
		if r.Kind == RuleGoto {
			firing[r.Event] = true
		}
		for _, ef := range r.Effects {
			if ef.Kind == EffectDo {
				usedAction[ef.Action] = true
			}
		}
	}
	for _, g := range m.Guards {
		if !usedGuard[g] {
			errs.add(g.Pos, "guard %q is declared but no rule uses it", g.Name)
		}
	}
	for _, a := range m.Actions {
		if !usedAction[a] {
			errs.add(a.Pos, "action %q is declared but no effect performs it", a.Name)
		}
	}
	for _, e := range m.Events {
		if !firing[e] {
			errs.add(e.Pos, "event %q never causes a transition: every cell ignores or rejects it", e.Name)
		}
		if e.Kind == EventTimer && !armed[e] {
			errs.add(e.Pos, "timer %q is never armed: no state lists it in timers", e.Name)
		}
	}
}

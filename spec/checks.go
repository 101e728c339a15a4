package spec

import (
	"sort"
	"strings"
)

// The protocol checks: rules a table must keep beyond the structure of
// validate.go, each one a class of mistake a protocol review found (issue 6).
// They read the declarations of declare.go and check only what is declared;
// checkWireObligations (catalog.go) makes the declarations themselves
// required of a protocol spec.

func checkProtocol(m *Machine, errs *errorList) {
	checkOwnPeer(m, errs)
	checkFailedSends(m, errs)
	checkDispatch(m, errs)
	checkResources(m, errs)
	checkBudgets(m, errs)
	checkPeerExits(m, errs)
}

// checkOwnPeer: a machine one peer runs alone (peers: core) is that peer's
// own lifecycle. No frame drives it and nothing of it reaches the other
// peer, so each event is a local event or timer of that peer and each
// effect is that peer's (an untagged effect is).
func checkOwnPeer(m *Machine, errs *errorList) {
	if m.Peers == RoleBoth {
		return
	}
	for _, e := range m.Events {
		switch {
		case e.Kind == EventMessage:
			errs.add(e.Pos, "event %q is a wire message, but %s is run by %s alone (peers: %s): no frame drives it; make it local: %s", e.Name, m.Name, m.Peers, m.Peers, m.Peers)
		case e.By != m.Peers:
			errs.add(e.Pos, "event %q is fired by %s, but %s is run by %s alone (peers: %s)", e.Name, e.By, m.Name, m.Peers, m.Peers)
		}
	}
	for _, r := range m.Rules {
		for _, ef := range r.Effects {
			switch {
			case ef.Kind == EffectSend:
				errs.add(r.Pos, "effect %q sends a frame, but %s is run by %s alone (peers: %s); a peer's own machine sends nothing", ef.String(), m.Name, m.Peers, m.Peers)
			case ef.Role != RoleBoth && ef.Role != m.Peers:
				errs.add(r.Pos, "effect %q is %s's, but %s is run by %s alone (peers: %s)", ef.String(), ef.Role, m.Name, m.Peers, m.Peers)
			}
		}
	}
}

// checkFailedSends: a sender fires a message event only once its write
// returned, and the event's failed_send instead when the write failed, from
// the state it was in before the send. So wherever the message event can
// move the machine, its failed send can happen too and must be handled (a
// transition or a deliberate ignore), never refused as impossible.
func checkFailedSends(m *Machine, errs *errorList) {
	for _, e := range m.Events {
		if e.FailedSend == nil {
			continue
		}
		for _, s := range m.States {
			if !moves(m, s, e) {
				continue
			}
			for _, r := range m.Cell(s, e.FailedSend) {
				if r.Kind == RuleReject {
					errs.add(r.Pos, "(%s, %s) rejects a failed send, but %s can be sent in %q (it moves the machine there): a failed write of %s may have delivered it, so handle it or ignore it with a reason", s.Name, e.FailedSend.Name, e.Name, s.Name, e.Message)
				}
			}
		}
	}
}

// moves reports whether event e has a goto candidate in state s.
func moves(m *Machine, s *State, e *Event) bool {
	for _, r := range m.Cell(s, e) {
		if r.Kind == RuleGoto {
			return true
		}
	}
	return false
}

// reachableWithout returns the states reachable from the initial state by
// goto rules that do not fire any event of sent, nor the failed send of one
// of them from a state where that event moves (an attempted send counts as
// a send: the frame may have left).
func reachableWithout(m *Machine, sent map[*Event]bool) []bool {
	reached := make([]bool, len(m.States))
	init := m.Initial()
	if init == nil {
		return reached
	}
	reached[init.Index] = true
	queue := []*State{init}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				if r.Kind != RuleGoto || reached[r.To.Index] || crosses(m, r, sent) {
					continue
				}
				reached[r.To.Index] = true
				queue = append(queue, r.To)
			}
		}
	}
	return reached
}

// crosses reports whether rule r fires one of sent or its failed send.
func crosses(m *Machine, r *Rule, sent map[*Event]bool) bool {
	if sent[r.Event] {
		return true
	}
	for e := range sent {
		if e.FailedSend == r.Event && moves(m, r.From, e) {
			return true
		}
	}
	return false
}

// checkDispatch: an unknown terminal means the effect of a dispatched
// request is unknown (daemon-protocol.txt:158). It can only be entered once
// the effect may have happened: every path to it fires a dispatch event or
// that event's failed send. A machine that declares no dispatch event is not
// checked here; checkWireObligations requires one of a protocol machine
// with an unknown terminal.
func checkDispatch(m *Machine, errs *errorList) {
	sent := map[*Event]bool{}
	var names []string
	for _, e := range m.Events {
		if e.Dispatch {
			sent[e] = true
			names = append(names, e.Name)
		}
	}
	if len(sent) == 0 {
		return
	}
	before := reachableWithout(m, sent)
	for _, r := range m.Rules {
		if r.Kind != RuleGoto || r.To.Outcome != OutcomeUnknown || !before[r.From.Index] || crosses(m, r, sent) {
			continue
		}
		errs.add(r.Pos, "(%s, %s) -> %s ends unknown, but %q is reachable before any dispatch (%s) was sent or attempted, so the effect cannot have happened yet: end it as a failure, or let it happen only after a dispatch",
			r.From.Name, r.Event.Name, r.To.Name, r.From.Name, listNames("event", names))
	}
}

// observes reports whether role (core or runtime) fires event e: both peers
// fire message events; a timer fires at its owner and a local event at its
// observer.
func observes(role Role, e *Event) bool {
	if e.Kind == EventMessage {
		return true
	}
	return e.By == RoleBoth || e.By == role
}

// performs reports whether role performs effect ef.
func performs(role Role, ef *Effect) bool { return ef.Role == RoleBoth || ef.Role == role }

// checkResources: every owner, slot or reservation a peer acquires is
// released on every path to a terminal state, unless that terminal is
// unknown and the resource is deliberately kept there (kept_when_unknown:
// an ambiguous outcome keeps the owner, daemon-protocol.txt:185). Each peer
// is checked on the paths it can take: the events it fires and the effects
// it performs. An action that acquires what is held, or releases what is
// not, is an error too.
func checkResources(m *Machine, errs *errorList) {
	if len(m.Resources) == 0 {
		return
	}
	before := len(errs.errs)
	for _, res := range m.Resources {
		var acq, rel bool
		for _, a := range m.Actions {
			acq = acq || a.Acquires == res
			rel = rel || a.Releases == res
		}
		if !acq || !rel {
			errs.add(res.Pos, "resource %q needs an action that acquires it and one that releases it", res.Name)
		}
	}
	for _, a := range m.Actions {
		for _, r := range []*Resource{a.Acquires, a.Releases} {
			if r == nil {
				continue
			}
			for _, rule := range m.Rules {
				for _, ef := range rule.Effects {
					if ef.Kind == EffectDo && ef.Action == a && r.HeldBy != RoleBoth && ef.Role != r.HeldBy {
						errs.add(rule.Pos, "effect %q: %s is held by %s, so only %s performs %s (prefix it %s:)", ef.String(), r.Name, r.HeldBy, r.HeldBy, a.Name, r.HeldBy)
					}
				}
			}
		}
	}
	if len(errs.errs) > before {
		return
	}
	for _, role := range m.Roles() {
		checkResourcePaths(m, role, errs)
	}
}

type heldState struct {
	s    *State
	held uint64 // bit i: m.Resources[i] is held by role
}

func checkResourcePaths(m *Machine, role Role, errs *errorList) {
	mine := func(r *Resource) bool { return r != nil && (r.HeldBy == RoleBoth || r.HeldBy == role) }
	init := m.Initial()
	if init == nil || len(m.Resources) > 64 {
		return
	}
	seen := map[heldState]bool{{init, 0}: true}
	queue := []heldState{{init, 0}}
	// One rule is reached on many paths; the error list reports each
	// message once per place.
	report := errs.add
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, e := range m.Events {
			if !observes(role, e) {
				continue
			}
			for _, r := range m.Cell(cur.s, e) {
				if r.Kind != RuleGoto {
					continue
				}
				held := cur.held
				for _, ef := range r.Effects {
					if ef.Kind != EffectDo || !performs(role, ef) {
						continue
					}
					if res := ef.Action.Acquires; mine(res) {
						if held&(1<<res.Index) != 0 {
							report(r.Pos, "(%s, %s): %s acquires %s on a path where %s already holds it", r.From.Name, r.Event.Name, ef.Action.Name, res.Name, role)
						}
						held |= 1 << res.Index
					}
					if res := ef.Action.Releases; mine(res) {
						if held&(1<<res.Index) == 0 {
							report(r.Pos, "(%s, %s): %s releases %s on a path where %s does not hold it", r.From.Name, r.Event.Name, ef.Action.Name, res.Name, role)
						}
						held &^= 1 << res.Index
					}
				}
				if r.To.Terminal() {
					for _, res := range m.Resources {
						if held&(1<<res.Index) == 0 || (r.To.Outcome == OutcomeUnknown && res.KeptWhenUnknown) {
							continue
						}
						report(r.Pos, "(%s, %s) -> %s ends the lifecycle with %s still held by %s: release it on this path%s", r.From.Name, r.Event.Name, r.To.Name, res.Name, role, keepHint(r.To, res))
					}
					continue
				}
				next := heldState{r.To, held}
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
	}
}

func keepHint(t *State, r *Resource) string {
	if t.Outcome == OutcomeUnknown {
		return ", or declare kept_when_unknown on " + r.Name + " if an unknown outcome keeps it"
	}
	return ""
}

// checkBudgets: a budget timer (timer: a + b) bounds one whole wait, made of
// the waits its parts bound. Its duration is the sum of theirs, stated only
// there. So while it runs, or when it expires, none of its parts may be
// started (that would wait past the budget), and it is never restarted
// while it runs (that would extend it).
func checkBudgets(m *Machine, errs *errorList) {
	for _, b := range m.Timers() {
		if b.Budget == nil {
			continue
		}
		for _, r := range m.Rules {
			if r.Kind != RuleGoto || (!r.From.Armed(b) && r.Event != b) {
				continue
			}
			var started []string
			restarted := false
			for _, ef := range r.Effects {
				if ef.Kind != EffectStart {
					continue
				}
				if ef.Timer == b && r.From.Armed(b) && r.Event != b {
					restarted = true
				}
				for _, p := range b.Budget {
					if ef.Timer == p {
						started = append(started, p.Name)
					}
				}
			}
			when := "while budget " + b.Name + " runs"
			if r.Event == b {
				when = "when budget " + b.Name + " expires"
			}
			if len(started) > 0 {
				sort.Strings(started)
				errs.add(r.Pos, "(%s, %s) starts %s %s, which the budget already counts (%s = %s): the wait would exceed %s", r.From.Name, r.Event.Name, listNames("timer", started), when, b.Name, budgetText(b), b.Duration)
			}
			if restarted {
				errs.add(r.Pos, "(%s, %s) restarts budget %s while it runs, which extends the wait it bounds past %s", r.From.Name, r.Event.Name, b.Name, b.Duration)
			}
		}
	}
}

func budgetText(b *Event) string {
	var parts []string
	for _, p := range b.Budget {
		parts = append(parts, p.Name+" "+p.Duration.String())
	}
	return strings.Join(parts, " + ")
}

// checkPeerExits: each peer fires only the events it observes, so each
// peer's copy of the machine must be able to settle on its own: from every
// state a peer can reach, it can reach a terminal state through events it
// fires itself. A state whose only ways out are the other peer's local
// events or timers strands that peer's copy forever.
func checkPeerExits(m *Machine, errs *errorList) {
	init := m.Initial()
	if init == nil {
		return
	}
	for _, role := range m.Roles() {
		step := func(s *State, visit func(*Rule)) {
			for _, e := range m.Events {
				if !observes(role, e) {
					continue
				}
				for _, r := range m.Cell(s, e) {
					if r.Kind == RuleGoto {
						visit(r)
					}
				}
			}
		}
		reached := map[*State]bool{init: true}
		queue := []*State{init}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			step(s, func(r *Rule) {
				if !reached[r.To] {
					reached[r.To] = true
					queue = append(queue, r.To)
				}
			})
		}
		// settles[s]: role can get from s to a terminal state by itself.
		settles := map[*State]bool{}
		for changed := true; changed; {
			changed = false
			for _, s := range m.States {
				if settles[s] {
					continue
				}
				ok := s.Terminal()
				step(s, func(r *Rule) { ok = ok || settles[r.To] })
				if ok {
					settles[s], changed = true, true
				}
			}
		}
		for _, s := range m.States {
			if !reached[s] || settles[s] {
				continue
			}
			var others []string
			for _, e := range m.Events {
				if observes(role, e) {
					continue
				}
				for _, r := range m.Cell(s, e) {
					if r.Kind == RuleGoto && r.To != s {
						others = append(others, e.Name)
						break
					}
				}
			}
			errs.add(s.Pos, "%s can reach state %q but never settle from it: every way out is an event only the other peer fires (%s); give %s a way out (a message, a timer or a local event it observes)", role, s.Name, strings.Join(others, ", "), role)
		}
	}
}

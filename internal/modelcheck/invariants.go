package modelcheck

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/spec"
	"github.com/agentwire/agentwire/wire"
)

func (w *world) violate(inv *spec.Invariant, format string, args ...any) {
	if w.viol != nil {
		return
	}
	w.viol = &Violation{Invariant: inv.Name, Kind: inv.Kind, Pos: inv.Pos, Msg: fmt.Sprintf(format, args...)}
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkStep runs the invariants that judge one step as it is taken.
func (w *world) checkStep(s *side, ev *peer.Event, st fsm.Step) {
	if st.Disposition() != fsm.Moved {
		return
	}
	t := ev.Inst.Table()
	out := t.State(st.To()).Outcome
	if out != fsm.OutcomeSuccess && out != fsm.OutcomeFailure {
		return
	}
	e := t.Event(st.Event())
	for _, inv := range w.m.invs {
		if inv.Kind != spec.KindEvidence || inv.Role != s.role || !has(inv.Machines, t.Name) {
			continue
		}
		if e.Kind == fsm.EventMessage && !ev.Sent {
			continue // a frame the peer sent is the evidence
		}
		if allowed(inv.Allow, t.Name+"."+e.Name, t.StateName(st.From())) {
			continue
		}
		how := "its own " + e.Kind.String() + " event"
		if e.Kind == fsm.EventMessage {
			how = "its own send of " + t.MessageName(e.Message)
		}
		w.violate(inv, "%s's %s settled %s (%s) on %s %s, with no frame from the %s proving it",
			s.role, ev.Key, t.StateName(st.To()), out, how, e.Name, other(s.role))
	}
}

// allowed matches "machine.event" and "machine.event from s1, s2" entries.
func allowed(allow []string, event, from string) bool {
	for _, a := range allow {
		ev, states, scoped := strings.Cut(a, " from ")
		if strings.TrimSpace(ev) != event {
			continue
		}
		if !scoped {
			return true
		}
		for _, st := range strings.Split(states, ",") {
			if strings.TrimSpace(st) == from {
				return true
			}
		}
	}
	return false
}

// checkEffect runs the invariants about when an action may be performed.
func (w *world) checkEffect(s *side, f *fsm.Firing[*peer.Event], action string) {
	t := f.Table
	name := t.Name + "." + action
	on := t.Name + "." + t.EventName(f.Event)
	for _, inv := range w.m.invs {
		if inv.Role != s.role || inv.Action != name {
			continue
		}
		switch inv.Kind {
		case spec.KindEffectOnlyOn:
			if !has(inv.Events, on) {
				w.violate(inv, "%s performed %s for %s on %s, which is not one of %s",
					s.role, action, f.Arg.Key, t.EventName(f.Event), strings.Join(inv.Events, ", "))
			}
		case spec.KindEffectRequires:
			if inv.On != on || f.Arg.Msg == nil {
				continue
			}
			k := peer.Key{Machine: inv.Requires.Machine, ID: f.Arg.Msg.ID}
			state := "(no instance)"
			if i, ok := s.d.Lookup(k); ok {
				state = i.StateName()
			}
			if !has(inv.Requires.States, state) {
				w.violate(inv, "%s performed %s for %s on %s while %s was %s (want %s)",
					s.role, action, f.Arg.Key, t.EventName(f.Event), k, state, strings.Join(inv.Requires.States, " or "))
			}
		}
	}
}

// checkReplay records what Core dispatches on which connection, and fails
// no_replay when a frame carries an identity an earlier connection
// already dispatched.
func (w *world) checkReplay(s *side, msg *wire.Message) {
	if s.role != fsm.RoleCore {
		return
	}
	targets, err := w.m.router.Route(msg, s.d, nil)
	if err != nil {
		return
	}
	for _, tg := range targets {
		prev, ok := w.dispatched[tg.Key]
		if prev < 0 {
			prev = -prev
		}
		if ok && prev < w.conn {
			for _, inv := range w.m.invs {
				if inv.Kind == spec.KindNoReplay && has(inv.Types, msg.Type) {
					w.violate(inv, "Core sends %s for %s on connection %d; it was dispatched on connection %d",
						msg.Type, tg.Key, w.conn, prev)
				}
			}
		}
		w.dispatched[tg.Key] = w.conn
		delete(w.retry, tg.Key)
	}
}

// holds reports whether an instance of machine other than except, on
// this connection or an earlier one, holds the named resource for role.
func (w *world) holds(role fsm.Role, machine, resource string, except peer.Key) bool {
	for i, n := range w.m.resNames[machine] {
		if n == resource {
			return w.holder(role, machine, i, except) != ""
		}
	}
	return false
}

func (w *world) holder(role fsm.Role, machine string, idx int, except peer.Key) string {
	s := w.sideOf(role)
	keys := make([]peer.Key, 0, len(s.recs))
	for k := range s.recs {
		keys = append(keys, k)
	}
	sortKeys(keys)
	for _, k := range keys {
		if k.Machine == machine && k != except && s.recs[k].held&(1<<idx) != 0 {
			return k.String() + " on this connection"
		}
	}
	for _, p := range w.past {
		if p.role == role && p.key.Machine == machine && p.held&(1<<idx) != 0 {
			return p.key.String() + " of an earlier connection"
		}
	}
	return ""
}

// checkExclusive fails resources when a peer takes a resource another
// instance still holds: an owner kept by an unknown outcome must keep
// blocking its successors, across connections too.
func (w *world) checkExclusive(s *side, machine string, idx int, k peer.Key) {
	inv := w.m.inv(spec.KindResources)
	if inv == nil || !w.m.kept[machine][idx] {
		// Only a resource an unknown outcome may keep (a durable owner, the
		// connection's transfer slot) is exclusive by declaration.
		return
	}
	if h := w.holder(s.role, machine, idx, k); h != "" {
		w.violate(inv, "%s's %s takes %s while %s still holds it", s.role, k, w.m.resNames[machine][idx], h)
	}
}

// checkPast runs the resource invariant over the instances a dropped
// connection leaves behind.
func (w *world) checkPast() {
	inv := w.m.inv(spec.KindResources)
	if inv == nil {
		return
	}
	for _, p := range w.past {
		if msg := w.m.leak(p.key.Machine, p.state, p.outcome, p.held); msg != "" {
			w.violate(inv, "%s's %s ended %s after the connection dropped %s", p.role, p.key, p.state, msg)
		}
	}
}

// leak says which resources a settled instance still holds that it should
// not, or "".
func (m *model) leak(machine, state string, out fsm.Outcome, held uint32) string {
	if held == 0 || out == fsm.OutcomeNone {
		return ""
	}
	var names []string
	for i, name := range m.resNames[machine] {
		if held&(1<<i) == 0 {
			continue
		}
		if out == fsm.OutcomeUnknown && m.kept[machine][i] {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return ""
	}
	return "still holding " + strings.Join(names, ", ")
}

// checkState runs the invariants over the state an action left.
func (w *world) checkState() *Violation {
	if w.viol != nil {
		return w.viol
	}
	for _, inv := range w.m.invs {
		switch inv.Kind {
		case spec.KindResources:
			for _, s := range w.sides {
				for _, i := range s.d.Instances() {
					r := s.recs[i.Key]
					if r == nil {
						continue
					}
					if msg := w.m.leak(i.Key.Machine, i.StateName(), i.Outcome(), r.held); msg != "" {
						w.violate(inv, "%s's %s settled %s %s", s.role, i.Key, i.StateName(), msg)
					}
				}
			}
		case spec.KindProjection:
			w.checkProjection(inv)
		}
	}
	w.checkTurns()
	return w.viol
}

// checkProjection compares both copies of each instance of the machine
// while the connection is up, nothing is in flight and neither copy has a
// timer armed (nothing is about to move them apart or together).
func (w *world) checkProjection(inv *spec.Invariant) {
	if w.broken || len(w.ch[0]) > 0 || len(w.ch[1]) > 0 || len(w.runtime().replies) > 0 {
		return // a frame in flight, or a refusal's answer still owed, can still bring the copies together
	}
	core, rt := w.core().d, w.runtime().d
	for _, ci := range core.Instances() {
		if ci.Key.Machine != inv.Machine {
			continue
		}
		ri, ok := rt.Lookup(ci.Key)
		if !ok || armed(ci) || armed(ri) || w.owes(ci.Key) {
			continue
		}
		cs, rs := ci.StateName(), ri.StateName()
		if has(inv.Alone[fsm.RoleCore], cs) || has(inv.Alone[fsm.RoleRuntime], rs) {
			continue
		}
		if cs != rs && !agree(inv, cs, rs) {
			w.violate(inv, "quiescent, yet Core's %s is %s and the Runtime's is %s", ci.Key, cs, rs)
		}
	}
}

// owes reports whether either side still owes a frame for k.
func (w *world) owes(k peer.Key) bool {
	for _, s := range w.sides {
		if r := s.recs[k]; r != nil && r.owes {
			return true
		}
	}
	return false
}

func agree(inv *spec.Invariant, core, runtime string) bool {
	for _, p := range inv.Agree {
		if p[0] == core && p[1] == runtime {
			return true
		}
	}
	return false
}

func armed(i *peer.Instance) bool {
	for n := range i.Table().Timers {
		if _, ok := i.Deadline(fsm.TimerID(n + 1)); ok {
			return true
		}
	}
	return false
}

// settled reports whether every lifecycle is over: each instance terminal,
// in its initial state, or in a state the settles invariant declares
// settled (a live connection); past ones terminal.
func (w *world) settled() bool { return w.unsettled() == "" }

// unsettled describes what is not settled, or "".
func (w *world) unsettled() string {
	inv := w.m.inv(spec.KindSettles)
	var open []string
	for _, s := range w.sides {
		for _, i := range s.d.Instances() {
			if i.Terminal() || i.State() == i.Table().Initial {
				continue
			}
			if inv != nil && has(inv.Settled[i.Key.Machine], i.StateName()) {
				continue
			}
			open = append(open, fmt.Sprintf("%s's %s is %s", s.role, i.Key, i.StateName()))
		}
	}
	for _, p := range w.past {
		if p.outcome == fsm.OutcomeNone && p.state != w.m.byName[p.key.Machine].StateName(w.m.byName[p.key.Machine].Initial) {
			open = append(open, fmt.Sprintf("%s's %s stayed %s after its connection dropped", p.role, p.key, p.state))
		}
	}
	sort.Strings(open)
	return strings.Join(open, "; ")
}

package modelcheck

import (
	"errors"
	"strconv"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	fsmturn "github.com/agentwire/agentwire/fsm/turn"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/spec"
)

// Core's turn machine in the composition (machines ...,turn): one Turn per
// preparation Core begins (prepare-n), whose state Core keeps beside its
// store, so it outlives connections. It is fired as the gateway fires it:
// claim with the execution_prepare, start and start_sent with
// execution_start, requeue by the preparation's leave_turn_unclaimed, the
// Run's and the preparation's ends through core/turn's RunEnd and
// PreparationEnd, and the API's cancel (a Core choice while the Turn is
// claimed, and with every prompt_cancel). With it Core behaves as the
// gateway's worker does: it starts a claimed Turn only, and releases an
// admission only once its Turn was cancelled.
//
// The follows invariant holds when the turn table accepts every event the
// composition fires, in every order it fires them, and a Turn whose
// preparation (and Run) settled at Core is settled too, or queued again.

// turnMachine is the name of Core's own machine in the composition.
const turnMachine = "turn"

// turnOn reports whether the composition includes Core's turn machine.
func (m *model) turnOn() bool { return m.turn != nil }

// turnKey is the Turn of a preparation or Run instance ("prepare-2",
// "run-2" → "2").
func turnKey(id string) string { return num(id) }

// turnState is the Turn's state, queued before its first event.
func (w *world) turnState(n string) fsmturn.State {
	if s, ok := w.turns[n]; ok {
		return s
	}
	return fsmturn.StateQueued
}

// fireTurn steps Turn n with e; a refusal by the table is a violation.
func (w *world) fireTurn(n string, e turn.Event) {
	from := w.turnState(n)
	st, err := turn.Fire(turn.Ref{ID: n, State: store.TurnState(from.String())}, e, turn.Args{})
	if err != nil {
		if errors.Is(err, turn.ErrRejected) {
			w.violate(w.m.turn, "Core's turn %s got %s in %s, which the turn table refuses: %v", n, e, from, err)
		}
		return
	}
	if st.Moved() {
		to, _ := fsmturn.ParseState(string(st.Move.To))
		if w.turns == nil {
			w.turns = map[string]fsmturn.State{}
		}
		w.turns[n] = to
	}
	w.log(fsm.RoleCore, "turn "+n+": "+e.String()+" → "+w.turnState(n).String())
}

// turnStepped follows Core's preparation steps (app.Stepped).
func (w *world) turnStepped(s *side, ev *peer.Event, st fsm.Step) {
	if !w.m.turnOn() || s.role != fsm.RoleCore || ev.Key.Machine != "preparation" || st.Disposition() != fsm.Moved || s.rec(ev.Key).readOnly {
		return
	}
	t := ev.Inst.Table()
	n := turnKey(ev.Key.ID)
	switch t.EventName(st.Event()) {
	case "execution_prepare", "prepare_send_failed":
		if st.From() == t.Initial {
			w.fireTurn(n, turn.Claim)
		}
	case "execution_start", "start_send_failed":
		// A failed write is possibly delivered: the Turn runs.
		w.fireTurn(n, turn.Start)
		w.fireTurn(n, turn.StartSent)
	case "execution_release", "release_send_failed":
		w.fireTurn(n, turn.Released)
	}
	// The worker hears how the admission ended only until it is ready;
	// after the start the Run owns the Turn's outcome.
	if out := t.State(st.To()).Outcome; out != fsm.OutcomeNone {
		if ts := w.turnState(n); ts == fsmturn.StateClaimed || ts == fsmturn.StateCancelling {
			if e, ok := turn.PreparationEnd(out, guard.CapacityRefusal(ev.Payload())); ok {
				w.fireTurn(n, e)
			}
		}
	}
}

// turnPerformed follows Core's actions of the preparation and run
// machines (binding.Perform).
func (w *world) turnPerformed(s *side, f *fsm.Firing[*peer.Event], action string) {
	if !w.m.turnOn() || s.role != fsm.RoleCore {
		return
	}
	n := turnKey(f.Arg.Key.ID)
	switch f.Table.Name {
	case "preparation":
		if action == "leave_turn_unclaimed" && !s.rec(f.Arg.Key).readOnly {
			w.fireTurn(n, turn.Requeue)
		}
	case "run":
		if e, ok := turn.RunEnd(action, f.Table.State(f.To).Outcome); ok {
			w.fireTurn(n, e)
		}
	}
}

// turnSent follows Core's prompt_cancel: the API cancelled a running Turn.
func (w *world) turnSent(a *Action) {
	if w.m.turnOn() && a.Role == fsm.RoleCore && a.Type == "prompt_cancel" {
		w.fireTurn(turnKey(a.ID), turn.Cancel)
	}
}

// turnAllows filters Core's sends as the gateway's worker decides them:
// execution_start only for a claimed Turn, execution_release only for one
// the API cancelled.
func (w *world) turnAllows(a *Action) bool {
	if !w.m.turnOn() || a.Role != fsm.RoleCore {
		return true
	}
	switch a.Type {
	case "execution_start":
		return w.turnState(turnKey(a.ID)) == fsmturn.StateClaimed
	case "execution_release":
		return w.turnState(turnKey(a.ID)) == fsmturn.StateCancelling
	}
	return true
}

// turnCancels lists the API's cancellations of claimed Turns.
func (w *world) turnCancels() []Action {
	if !w.m.turnOn() {
		return nil
	}
	var out []Action
	for n := 1; n <= w.runs; n++ {
		k := strconv.Itoa(n)
		if w.turnState(k) == fsmturn.StateClaimed {
			out = append(out, Action{Kind: ActLocal, Role: fsm.RoleCore, Machine: turnMachine, Inst: k, Event: "cancel"})
		}
	}
	return out
}

// checkTurns: a Turn whose preparation settled at Core, and whose Run
// (when it started one) settled too, is settled or queued again.
func (w *world) checkTurns() {
	if !w.m.turnOn() {
		return
	}
	c := w.core()
	for n, st := range w.turns {
		if st.Terminal() || st == fsmturn.StateQueued {
			continue
		}
		pi, ok := c.d.Lookup(peer.Key{Machine: "preparation", ID: "prepare-" + n})
		if !ok || !pi.Terminal() {
			continue
		}
		if ri, ok := c.d.Lookup(peer.Key{Machine: "run", ID: "run-" + n}); ok && !ri.Terminal() {
			continue
		}
		if ok := pi.StateName() == "started"; ok {
			if _, ran := c.d.Lookup(peer.Key{Machine: "run", ID: "run-" + n}); !ran {
				continue // the Run's first frame is still on its way
			}
		}
		w.violate(w.m.turn, "Core's turn %s is %s after its preparation ended %s and its Run settled", n, st, pi.StateName())
	}
}

// turnInvariant finds the follows invariant of the turn machine.
func turnInvariant(invs []*spec.Invariant) *spec.Invariant {
	for _, inv := range invs {
		if inv.Kind == spec.KindFollows && inv.Machine == turnMachine {
			return inv
		}
	}
	return nil
}

package diagram

import "strings"

// The element IDs the diagrams carry, so that a page showing a live
// instance (the console's machine view) can light the current state and
// the transitions taken without knowing anything about the layout.
//
// Spec names are lower-case letters, digits and underscores (spec.Load
// refuses anything else), so "-" separates the parts without ambiguity:
// state-<state>, tr-<from>-<to> for the one arrow that joins a pair of
// states (parallel rules are merged into it), entry-<initial> for the
// arrow from the start point. Each arrow also carries the class
// ev-<event> for every event that drives it.

// StartID is the ID of the start point.
const StartID = "start"

// StateID is the ID of a state's node.
func StateID(state string) string { return "state-" + state }

// TransitionID is the ID of the arrow from one state to another.
func TransitionID(from, to string) string { return "tr-" + from + "-" + to }

// EntryID is the ID of the arrow from the start point to the initial state.
func EntryID(initial string) string { return "entry-" + initial }

// EventClass is the class an arrow carries for each event that drives it.
func EventClass(event string) string { return "ev-" + event }

// edgeClass lists ed's events as classes, once each, in arc order.
func edgeClass(ed *edge) string {
	seen := map[string]bool{}
	var cls []string
	for _, a := range ed.arcs {
		if n := a.rule.Event.Name; !seen[n] {
			seen[n] = true
			cls = append(cls, EventClass(n))
		}
	}
	return strings.Join(cls, " ")
}

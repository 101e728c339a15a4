// Package spec loads the protocol lifecycle tables in spec/*.yaml into a
// validated, resolved model. The generator (package gen) and the diagram
// renderers only ever see a Model that passed every check in validate.go, so
// they never have to handle a dangling name or an undeclared cell.
package spec

import (
	"fmt"
	"time"

	"github.com/agentwire/agentwire/fsm"
)

// Model is every machine declared in one spec directory, sorted by name.
type Model struct {
	Machines []*Machine
	// Catalog and Capabilities are nil when the directory has no
	// catalog.yaml or capabilities.yaml (a spec of machines only).
	Catalog      *Catalog
	Capabilities []*Capability
	// Invariants are the model checker's properties (invariants.yaml), nil
	// when the directory has none.
	Invariants []*Invariant
}

// Machine finds a machine by name.
func (m *Model) Machine(name string) (*Machine, bool) {
	for _, mc := range m.Machines {
		if mc.Name == name {
			return mc, true
		}
	}
	return nil, false
}

// Pos is a place in a spec file, used in every error the loader reports.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Role is the peer that sends a message, owns a timer or performs an
// effect. The loader sets every role explicitly (an untagged effect is
// RoleBoth), so the zero Role never appears in a loaded model.
type Role = fsm.Role

const (
	RoleCore    = fsm.RoleCore
	RoleRuntime = fsm.RoleRuntime
	RoleBoth    = fsm.RoleBoth
)

// Outcome classifies a terminal state; diagrams draw each class distinctly.
type Outcome = fsm.Outcome

const (
	OutcomeNone    = fsm.OutcomeNone    // not terminal
	OutcomeSuccess = fsm.OutcomeSuccess // the lifecycle settled as intended
	OutcomeFailure = fsm.OutcomeFailure // the lifecycle settled with a confirmed failure
	OutcomeUnknown = fsm.OutcomeUnknown // the effect is unknown: no receipt proves either way
)

// Machine is one lifecycle: its states, events and complete cell table.
type Machine struct {
	Name string
	Doc  string
	// Instance is the identity that keys one instance: a catalog identity
	// (run, preparation_request, …), connection for the connection's one
	// instance, or a payload identity the drives name (input, interaction,
	// suspension). Scope says the same in prose, for pages.
	Instance    string
	InstancePos Pos
	Scope       string
	Pos         Pos
	// Peers is who runs the machine: RoleBoth for a protocol lifecycle
	// both peers observe on the wire, or one role for a peer's own
	// lifecycle (peers: core), which no frame drives and whose every
	// event and effect is that peer's.
	Peers    Role
	PeersPos Pos

	States    []*State
	Events    []*Event
	Guards    []*Guard
	Actions   []*Action
	Resources []*Resource
	Rules     []*Rule // in declaration order

	// cells[state][event] holds the candidates of one cell in the order
	// they are tried: guarded ones first, the unguarded fallback last.
	cells [][][]*Rule
}

// Roles lists the peers that run the machine, Core first.
func (m *Machine) Roles() []Role {
	if m.Peers == RoleBoth {
		return []Role{RoleCore, RoleRuntime}
	}
	return []Role{m.Peers}
}

// Cell returns the candidates for event e in state s, fallback last.
func (m *Machine) Cell(s *State, e *Event) []*Rule { return m.cells[s.Index][e.Index] }

// Initial is the one state a new instance starts in.
func (m *Machine) Initial() *State {
	for _, s := range m.States {
		if s.Initial {
			return s
		}
	}
	return nil
}

// Timers lists the events that are timers, in declaration order.
func (m *Machine) Timers() []*Event {
	var ts []*Event
	for _, e := range m.Events {
		if e.Kind == EventTimer {
			ts = append(ts, e)
		}
	}
	return ts
}

// Messages lists the distinct wire types a machine sends as effects or
// observes as events, sorted.
func (m *Machine) Messages() []string {
	seen := map[string]bool{}
	for _, e := range m.Events {
		if e.Kind == EventMessage {
			seen[e.Message] = true
		}
	}
	for _, r := range m.Rules {
		for _, ef := range r.Effects {
			if ef.Kind == EffectSend {
				seen[ef.Message] = true
			}
		}
	}
	return sortedKeys(seen)
}

// SentMessages lists the distinct wire types named by send effects, sorted.
func (m *Machine) SentMessages() []string {
	seen := map[string]bool{}
	for _, r := range m.Rules {
		for _, ef := range r.Effects {
			if ef.Kind == EffectSend {
				seen[ef.Message] = true
			}
		}
	}
	return sortedKeys(seen)
}

// State is one node of a machine.
type State struct {
	Name    string
	Doc     string
	Initial bool
	Outcome Outcome  // OutcomeNone unless terminal
	Timers  []*Event // armed while in this state, in declaration order
	Index   int
	Pos     Pos
}

// Terminal reports whether the lifecycle has settled in s.
func (s *State) Terminal() bool { return s.Outcome != OutcomeNone }

// Armed reports whether timer t runs while the machine is in s.
func (s *State) Armed(t *Event) bool {
	for _, x := range s.Timers {
		if x == t {
			return true
		}
	}
	return false
}

// EventKind says where an event comes from.
type EventKind = fsm.EventKind

const (
	EventMessage = fsm.EventMessage // a wire frame, sent or received
	EventTimer   = fsm.EventTimer   // a named timer expired
	EventLocal   = fsm.EventLocal   // something a peer observed locally
)

// Event is one input of a machine.
type Event struct {
	Name     string
	Doc      string
	Kind     EventKind
	Message  string        // EventMessage: the wire type
	From     Role          // EventMessage: the sender
	Duration time.Duration // EventTimer; for a budget, the sum of its parts
	By       Role          // EventTimer: the owner; EventLocal: the observer
	// FailedSend (EventMessage) is the local event the sender fires instead
	// of this one when its write of the frame returned an error, from the
	// state it was in before the send; nil when the spec declares none.
	FailedSend *Event
	// Dispatch (EventMessage) marks the request whose effect the machine
	// tracks: once it was sent, or its send failed, the effect may have
	// happened, which is what an unknown outcome means.
	Dispatch bool
	// Budget (EventTimer) lists the timers whose durations this timer's
	// duration is the sum of, in declaration order; nil for a plain timer.
	Budget []*Event
	// Policy (EventTimer) marks a duration the protocol text leaves to the
	// peers: a named local policy with a default that an embedding peer may
	// override. Every other timer is fixed by the protocol.
	Policy bool
	Index  int
	Pos    Pos
}

// Guard is a named predicate the peer evaluates when a cell has guarded
// candidates.
type Guard struct {
	Name  string
	Doc   string
	Index int
	Pos   Pos
}

// Action is a named local effect.
type Action struct {
	Name string
	Doc  string
	// Acquires and Releases name the resource the action takes or gives
	// back, or are nil.
	Acquires *Resource
	Releases *Resource
	Index    int
	Pos      Pos
}

// Resource is an owner, slot or reservation a peer holds between an
// acquiring and a releasing action (see checkResources).
type Resource struct {
	Name   string
	Doc    string
	HeldBy Role // core, runtime or both (each peer holds its own)
	// KeptWhenUnknown allows an unknown terminal to end the lifecycle with
	// the resource still held, deliberately.
	KeptWhenUnknown bool
	Index           int
	Pos             Pos
}

// RuleKind is what a candidate does when it is selected.
type RuleKind uint8

const (
	RuleGoto   RuleKind = iota + 1 // change state (or stay, for an internal transition) and run effects
	RuleIgnore                     // accept the event and do nothing
	RuleReject                     // refuse the event with a reason; the state is unchanged
)

func (k RuleKind) String() string {
	switch k {
	case RuleGoto:
		return "goto"
	case RuleIgnore:
		return "ignore"
	case RuleReject:
		return "reject"
	default:
		return "invalid"
	}
}

// Rule is one candidate of one cell. A YAML rule with several states or
// events expands into one Rule per (state, event).
type Rule struct {
	// ID is the rule's stable name: its id: in the spec, or one derived
	// from what it covers (see ruleID), so that a rule inserted or removed
	// elsewhere in the file renames nothing. Every cell a YAML rule covers
	// carries the same ID.
	ID      string
	From    *State
	Event   *Event
	Guard   *Guard // nil for the fallback
	Kind    RuleKind
	To      *State // RuleGoto only
	Reason  string // RuleIgnore and RuleReject
	Effects []*Effect
	// Wildcard is set on ignore/reject rules that came from on: "*".
	Wildcard bool
	Pos      Pos
}

// Internal reports a goto that stays in its state.
func (r *Rule) Internal() bool { return r.Kind == RuleGoto && r.To == r.From }

// EffectKind is what an effect does.
type EffectKind = fsm.EffectKind

const (
	EffectSend  = fsm.EffectSend  // send a wire message
	EffectStart = fsm.EffectStart // arm a timer
	EffectStop  = fsm.EffectStop  // disarm a timer
	EffectDo    = fsm.EffectDo    // perform a named action
	EffectRaise = fsm.EffectRaise // run a follow-up event after this one
)

// Effect is one step a transition asks a peer to perform.
type Effect struct {
	Kind    EffectKind
	Role    Role
	Message string  // EffectSend
	Timer   *Event  // EffectStart, EffectStop
	Action  *Action // EffectDo
	Raise   *Event  // EffectRaise
}

// String renders the effect as it is written in the spec.
func (e *Effect) String() string {
	prefix := ""
	if e.Role != RoleBoth {
		prefix = e.Role.String() + ": "
	}
	switch e.Kind {
	case EffectSend:
		return prefix + "send " + e.Message
	case EffectStart:
		return prefix + "start " + e.Timer.Name
	case EffectStop:
		return prefix + "stop " + e.Timer.Name
	case EffectDo:
		return prefix + "do " + e.Action.Name
	case EffectRaise:
		return prefix + "raise " + e.Raise.Name
	}
	return prefix + "invalid"
}

// Select is the reference interpreter of one cell: it returns the candidate
// that handles event e in state s when exactly the guards for which held
// reports true hold. Generated code is tested against it.
func (m *Machine) Select(s *State, e *Event, held func(*Guard) bool) *Rule {
	for _, r := range m.Cell(s, e) {
		if r.Guard == nil || held(r.Guard) {
			return r
		}
	}
	return nil
}

// Paths returns, for every reachable state, a shortest sequence of goto rules
// from the initial state to it (the initial state maps to an empty path).
func (m *Machine) Paths() map[*State][]*Rule {
	init := m.Initial()
	paths := map[*State][]*Rule{init: nil}
	queue := []*State{init}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				if r.Kind != RuleGoto {
					continue
				}
				if _, seen := paths[r.To]; seen {
					continue
				}
				p := append(append([]*Rule(nil), paths[s]...), r)
				paths[r.To] = p
				queue = append(queue, r.To)
			}
		}
	}
	return paths
}

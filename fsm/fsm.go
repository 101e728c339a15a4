// Package fsm is the engine every protocol machine runs on, written once: a
// Table (states, events, and each (state, event) cell's candidates, one per
// spec rule), an Instance that steps a table for one role and collects the
// effects it asks for in an Outbox without performing them, and a Machine
// that performs them through a Binding for callers without a driver. It also
// holds the roles, event and effect kinds, dispositions and typed errors.
//
// The tables come from spec/*.yaml: one generated sub-package per lifecycle
// (fsm/preparation, fsm/run, …) holds its Table as a literal with typed
// enums and per-role hooks, and spec.Machine.Table builds the same Table
// from a spec loaded at run time. The engine does no I/O, starts no
// goroutine and reads no clock: timers are effects, and their expiry comes
// back as an ordinary event, so the peer driver (package peer) and tests
// control time.
package fsm

import "strconv"

// Role is a peer of the protocol. A machine instance runs for exactly one
// role (RoleCore or RoleRuntime); effects and events are tagged with the
// role that performs or causes them, RoleBoth when both do. The zero Role is
// invalid, so a machine built without choosing a role is an error rather
// than a machine that quietly performs both peers' effects.
type Role uint8

const (
	RoleCore    Role = 1 << iota // Core: durable Sessions, Turns, inputs, scheduling
	RoleRuntime                  // the Runtime daemon: native Executors, active Turns
	RoleBoth    = RoleCore | RoleRuntime
)

func (r Role) String() string {
	switch r {
	case RoleBoth:
		return "both"
	case RoleCore:
		return "core"
	case RoleRuntime:
		return "runtime"
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is RoleCore, RoleRuntime or RoleBoth.
func (r Role) Valid() bool { return r >= RoleCore && r <= RoleBoth }

// Peer reports whether r is one peer (RoleCore or RoleRuntime), the only
// roles a machine instance can run for.
func (r Role) Peer() bool { return r == RoleCore || r == RoleRuntime }

// Performs reports whether a peer in role r performs (or causes) something
// tagged t.
func (r Role) Performs(t Role) bool { return t&r != 0 }

// EventKind says where an event comes from.
type EventKind uint8

const (
	EventMessage EventKind = 1 + iota // a wire frame, sent or received
	EventTimer                        // a named timer expired
	EventLocal                        // a peer observed something locally
)

func (k EventKind) String() string {
	switch k {
	case EventMessage:
		return "message"
	case EventTimer:
		return "timer"
	case EventLocal:
		return "local"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Outcome classifies a terminal state.
type Outcome uint8

const (
	OutcomeNone    Outcome = iota // the state is not terminal
	OutcomeSuccess                // settled as intended
	OutcomeFailure                // settled with a confirmed failure
	OutcomeUnknown                // settled without proof either way
)

func (o Outcome) String() string {
	switch o {
	case OutcomeNone:
		return "none"
	case OutcomeSuccess:
		return "success"
	case OutcomeFailure:
		return "failure"
	case OutcomeUnknown:
		return "unknown"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// EffectKind is what one effect asks the peer to do.
type EffectKind uint8

const (
	EffectSend  EffectKind = 1 + iota // send a wire message
	EffectStart                       // arm a timer for its declared duration
	EffectStop                        // disarm a timer
	EffectDo                          // perform a named local action
	EffectRaise                       // fire a follow-up event once this one completes
)

func (k EffectKind) String() string {
	switch k {
	case EffectSend:
		return "send"
	case EffectStart:
		return "start"
	case EffectStop:
		return "stop"
	case EffectDo:
		return "do"
	case EffectRaise:
		return "raise"
	}
	return "EffectKind(" + strconv.Itoa(int(k)) + ")"
}

// Disposition is what a step did with its event.
type Disposition uint8

const (
	Moved    Disposition = 1 + iota // the state changed
	Stayed                          // an internal transition: same state, effects ran
	Ignored                         // the spec declares the event a no-op here
	Rejected                        // the spec refuses the event here; the state is unchanged
)

func (d Disposition) String() string {
	switch d {
	case Moved:
		return "moved"
	case Stayed:
		return "stayed"
	case Ignored:
		return "ignored"
	case Rejected:
		return "rejected"
	}
	return "Disposition(" + strconv.Itoa(int(d)) + ")"
}

// QueueCapacity bounds the follow-up events one Fire may queue. A spec
// whose raise effects loop forever fails with ErrQueueFull instead of
// spinning.
const QueueCapacity = 16

// maxQuoted bounds how much of a caller-supplied name an error repeats, so a
// peer cannot make our logs carry its payload.
const maxQuoted = 64

// Quote renders a caller-supplied name for an error message: quoted, and cut
// to a bounded length.
func Quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "…"
	}
	return strconv.Quote(s)
}

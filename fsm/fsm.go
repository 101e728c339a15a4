// Package fsm holds what every generated protocol machine shares: roles,
// effect kinds, dispositions and the typed errors a machine returns.
//
// The machines themselves live in one generated sub-package per lifecycle
// (fsm/preparation, fsm/run, …), produced from spec/*.yaml by
// `agentwire generate`. A machine does no I/O, starts no goroutine and reads
// no clock: a peer feeds it events through Fire (or the pure Transition
// function), evaluates its named guards, and performs the effects it asks
// for — sends, timers and local actions — in the order the spec lists them.
// Timer expiry comes back in as an ordinary event, so tests control time.
package fsm

import "strconv"

// Role is the peer a machine instance runs for. Effects tagged with the
// other role are skipped by Fire; untagged effects run for both.
type Role uint8

const (
	RoleBoth Role = iota // both peers: the tag of untagged effects
	RoleCore
	RoleRuntime
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
	return "Role(" + itoa(int(r)) + ")"
}

// Performs reports whether a peer in role r performs an effect tagged t.
func (r Role) Performs(t Role) bool { return t == RoleBoth || t == r || r == RoleBoth }

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
	return "EventKind(" + itoa(int(k)) + ")"
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
	return "Outcome(" + itoa(int(o)) + ")"
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
	return "EffectKind(" + itoa(int(k)) + ")"
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
	return "Disposition(" + itoa(int(d)) + ")"
}

// QueueCapacity bounds the follow-up events one Fire may queue. A spec
// whose raise effects loop forever fails with ErrQueueFull instead of
// spinning.
const QueueCapacity = 16

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

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

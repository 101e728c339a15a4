package fsm

import "errors"

// Sentinels for errors.Is. Each concrete error below matches exactly one.
var (
	// ErrRejected matches a *TransitionError: the spec refuses the event in
	// the current state. The machine's state is unchanged.
	ErrRejected = errors.New("fsm: event rejected")
	// ErrInvalid matches an *InvalidError: a state or event value, or a
	// saved state name, that the machine does not define.
	ErrInvalid = errors.New("fsm: invalid value")
	// ErrEffect matches an *EffectError: a hook failed while performing an
	// effect. The transition that asked for it has already happened.
	ErrEffect = errors.New("fsm: effect failed")
	// ErrQueueFull matches a *QueueError: more than QueueCapacity follow-up
	// events were raised during one Fire.
	ErrQueueFull = errors.New("fsm: follow-up queue full")
)

// TransitionError is returned when the spec rejects an event. Generated
// machines keep one preallocated TransitionError per rejecting cell, so a
// rejection allocates nothing; treat it as read-only.
type TransitionError struct {
	Machine string // the machine name, e.g. "preparation"
	State   string // the state the event arrived in
	Event   string // the rejected event
	Reason  string // the reason the spec gives for the rejection
}

func (e *TransitionError) Error() string {
	return "fsm: " + e.Machine + ": event " + e.Event + " rejected in state " + e.State + ": " + e.Reason
}

// Is makes errors.Is(err, ErrRejected) true.
func (e *TransitionError) Is(target error) bool { return target == ErrRejected }

// InvalidError reports a value outside a machine's enums.
type InvalidError struct {
	Machine string
	What    string // "state", "event" or "state name"
	Value   string
}

func (e *InvalidError) Error() string {
	return "fsm: " + e.Machine + ": invalid " + e.What + " " + e.Value
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// EffectError reports a hook that failed. State has already moved from From
// to To; the effects after the failed one and any queued follow-up events
// were not run. The peer decides what to fire next (typically the lifecycle's
// own failure or unknown event).
type EffectError struct {
	Machine string
	From    string
	Event   string
	To      string
	Effect  string // the effect as written in the spec, e.g. "send preparation_status"
	Err     error
}

func (e *EffectError) Error() string {
	return "fsm: " + e.Machine + ": " + e.Effect + " after " + e.Event + " (" + e.From + " -> " + e.To + "): " + e.Err.Error()
}

func (e *EffectError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrEffect) true, alongside the wrapped error.
func (e *EffectError) Is(target error) bool { return target == ErrEffect }

// QueueError reports a follow-up event that did not fit in the queue.
type QueueError struct {
	Machine string
	Event   string
}

func (e *QueueError) Error() string {
	return "fsm: " + e.Machine + ": follow-up queue full; dropped " + e.Event
}

// Is makes errors.Is(err, ErrQueueFull) true.
func (e *QueueError) Is(target error) bool { return target == ErrQueueFull }

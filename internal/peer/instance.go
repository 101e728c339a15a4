package peer

import (
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// Key identifies one machine instance on a connection: the machine and the
// wire identity that keys its instances (a Run ID, a preparation request
// ID, an interaction ID, a transfer ID, …). The connection machine has one
// instance per connection, with an empty ID.
type Key struct {
	Machine string
	ID      string
}

func (k Key) String() string {
	if k.ID == "" {
		return k.Machine
	}
	return k.Machine + "/" + boundedID(k.ID)
}

// boundedID keeps log lines and errors short whatever a peer sent as an id.
func boundedID(id string) string {
	const max = 64
	if len(id) > max {
		return id[:max] + "…"
	}
	return id
}

// Event is the argument every guard and hook receives (as Firing.Arg): what
// is being handled, and for which instance. The driver reuses one Event for
// every step, so that a step allocates nothing: do not keep it (or Msg)
// after the hook returns; copy what you need.
type Event struct {
	Key Key
	// Msg is the frame of a message event: received, or sent by this peer
	// (Sent is then true). Nil for timers and local events.
	Msg  *wire.Message
	Sent bool
	// Local is what the peer reported with a local event (native settlement,
	// a failed write, …); nil otherwise.
	Local any
	Inst  *Instance
	d     *Driver

	trace    wire.TraceContext
	hasTrace bool
}

// Trace is the event's W3C trace context: the received (or sent) frame's
// trace, or a local trace minted on first use when the frame carried none
// or an invalid one, or when no frame caused the event
// (daemon-protocol.txt:67). It is diagnostic correlation only: nothing
// routes, owns or decides by it. Minting waits for a caller, so a frame
// nobody traces costs nothing.
func (e *Event) Trace() wire.TraceContext {
	if !e.hasTrace {
		raw := ""
		if e.Msg != nil {
			raw = e.Msg.Trace
		}
		e.trace, e.hasTrace = wire.ParseTrace(raw), true
	}
	return e.trace
}

// Driver is the driver handling the event. Hooks use it to queue a reply
// (Driver.Send) or a follow-up local event (Driver.Local); both run after
// the current delivery, never inside it.
func (e *Event) Driver() *Driver { return e.d }

// Payload is the decoded payload of the event's frame, nil for an event
// without one (a timer, a local event) or a nil event.
func (e *Event) Payload() wire.Payload {
	if e == nil || e.Msg == nil {
		return nil
	}
	return e.Msg.Payload
}

// Instance is the driver's record of one machine instance.
type Instance struct {
	Key Key
	// Data belongs to the embedding peer: the records its guards read (the
	// highest revision applied, a fingerprint, an Executor, …).
	Data any

	in        fsm.Instance[*Event]
	deadlines []deadline // indexed by TimerID-1
	created   time.Time
	settled   time.Time // when it reached a terminal state; zero while live
}

// deadline is one armed timer: an absolute time and the generation that
// armed it. Stopping or re-arming bumps the generation, so an expiry that
// was already on its way is recognised as stale and dropped.
type deadline struct {
	at    time.Time
	gen   uint64
	armed bool
}

// Table is the instance's machine.
func (i *Instance) Table() *fsm.Table { return i.in.Table() }

// State is the current state.
func (i *Instance) State() fsm.StateID { return i.in.State() }

// StateName is the current state's spec name.
func (i *Instance) StateName() string { return i.in.Table().StateName(i.in.State()) }

// Terminal reports whether the instance has settled.
func (i *Instance) Terminal() bool { return i.in.Terminal() }

// Outcome is the outcome of the current state (OutcomeNone while live).
func (i *Instance) Outcome() fsm.Outcome { return i.in.Table().State(i.in.State()).Outcome }

// Deadline returns when timer t expires, if it is armed.
func (i *Instance) Deadline(t fsm.TimerID) (time.Time, bool) {
	if t < 1 || int(t) > len(i.deadlines) || !i.deadlines[t-1].armed {
		return time.Time{}, false
	}
	return i.deadlines[t-1].at, true
}

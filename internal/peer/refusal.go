package peer

import (
	"errors"
	"strings"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// RefusalKind says why an inbound frame was not applied.
type RefusalKind uint8

const (
	RefusedDecode      RefusalKind = 1 + iota // the frame failed to decode or validate
	RefusedRoute                              // it addresses no machine instance, or the registry is full
	RefusedMachine                            // a machine's table refused the event
	RefusedShutdown                           // the connection was already lost
	RefusedRequirement                        // a cross-machine requirement of its type does not hold
)

func (k RefusalKind) String() string {
	switch k {
	case RefusedDecode:
		return "decode"
	case RefusedRoute:
		return "route"
	case RefusedMachine:
		return "machine"
	case RefusedShutdown:
		return "shutdown"
	case RefusedRequirement:
		return "requirement"
	}
	return "unknown"
}

// Refusal describes one inbound frame that was not applied.
type Refusal struct {
	Kind RefusalKind
	// Msg is the frame as far as it decoded: for RefusedDecode its Entry is
	// nil when the type was unknown, and its Payload nil when the payload
	// failed; the id is whatever the envelope carried.
	Msg *wire.Message
	// Key is the instance that refused (RefusedMachine) or could not be
	// found (RefusedRoute), when known.
	Key Key
	Err error
	// Trace is the frame's trace context, or a local one minted for it
	// when it carried none or an invalid one (daemon-protocol.txt:67): the
	// refusal is logged under it.
	Trace wire.TraceContext
}

// Type is the frame's type, or "" when the envelope did not decode.
func (r *Refusal) Type() string { return r.Msg.Type }

func (d *Driver) refuse(r *Refusal) {
	d.stats.Refused[r.Kind]++
	typ, id, trace := "", "", ""
	if r.Msg != nil {
		typ, id, trace = r.Msg.Type, boundedID(r.Msg.ID), r.Msg.Trace
	}
	r.Trace = wire.ParseTrace(trace)
	if suppressed, ok := d.refusalLog.take(d.cfg.Clock.Now()); ok {
		d.cfg.Logger.Warn("frame refused",
			"conn", d.cfg.Label, "kind", r.Kind.String(), "type", boundedID(typ), "id", id,
			"instance", r.Key.String(), "trace_id", r.Trace.TraceIDString(), "local_trace", r.Trace.Local, "err", r.Err,
			"not_logged_before", suppressed)
	}
	d.cfg.App.Refused(r)
}

// Refusal log lines are bounded per connection: a peer that floods
// refused frames must not flood the log (60k refused frames once wrote
// 16 MB in a second). Every refusal is still counted (Stats) and handed
// to the App; a line that follows dropped ones says how many.
const (
	refusalLogBurst  = 20
	refusalLogWindow = time.Second
)

// refusalLimiter lets refusalLogBurst lines through per window.
type refusalLimiter struct {
	start      time.Time
	n          int
	suppressed int
}

// take reports whether a line may be written now, and how many were
// dropped since the last one written.
func (l *refusalLimiter) take(now time.Time) (int, bool) {
	if now.Sub(l.start) >= refusalLogWindow || now.Before(l.start) {
		l.start, l.n = now, 0
	}
	l.n++
	if l.n > refusalLogBurst {
		l.suppressed++
		return 0, false
	}
	s := l.suppressed
	l.suppressed = 0
	return s, true
}

// SendError is returned to the sender of a frame that was not written: a
// machine refused the send, the frame failed to encode, or the queue was
// full. Nothing left this peer.
type SendError struct {
	Type string
	Key  Key
	Err  error
}

func (e *SendError) Error() string {
	where := ""
	if e.Key.Machine != "" {
		where = " (" + e.Key.String() + ")"
	}
	return "peer: send " + e.Type + where + " refused: " + e.Err.Error()
}

func (e *SendError) Unwrap() error { return e.Err }

// WriteError is returned to the sender of a frame whose write failed: the
// frame may have left (the write can fail after the bytes reached the
// kernel), so its receiver may act on it. The machines fired their
// failed-send events.
type WriteError struct {
	Type string
	Err  error
}

func (e *WriteError) Error() string {
	return "peer: write " + e.Type + " failed (possibly delivered): " + e.Err.Error()
}

func (e *WriteError) Unwrap() error { return e.Err }

var (
	// ErrConnectionLost is the error of sends queued when the connection
	// went away, and of deliveries after it.
	ErrConnectionLost = errors.New("peer: connection lost")
	// ErrSendQueueFull is the error of a send beyond Limits.MaxPendingSends.
	ErrSendQueueFull = errors.New("peer: send queue full")
)

// ReasonCode is the wire code a refusal's table reason starts with
// ("start_conflict: …"), when it is one of codes (a receipt family's
// closed list); fallback otherwise, and for an error that is no refused
// transition.
func ReasonCode(err error, fallback string, codes []string) string {
	var te *fsm.TransitionError
	if err == nil || !errors.As(err, &te) {
		return fallback
	}
	code, _, ok := strings.Cut(te.Reason, ":")
	if !ok {
		return fallback
	}
	for _, c := range codes {
		if c == code {
			return code
		}
	}
	return fallback
}

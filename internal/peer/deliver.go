package peer

import (
	"errors"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// Deliver decodes one received frame, routes it and steps every addressed
// instance in route order, performing the effects of each step. A frame
// that fails to decode, addresses no instance or is refused by a machine is
// reported to the app (App.Refused), logged and counted, and returned as an
// error; it is never dropped silently and never panics the driver.
func (d *Driver) Deliver(frame []byte) error {
	msg, err := wire.Decode(frame, d.dir)
	return d.DeliverDecoded(&msg, err)
}

// Receives is the direction of the frames this driver receives, for a
// caller that decodes them itself (off the driver's goroutine) and hands
// the result to DeliverDecoded.
func (d *Driver) Receives() wire.Direction { return d.dir }

// DeliverDecoded is Deliver for a frame the caller already passed through
// wire.Decode(frame, d.Receives()): msg and decodeErr are what Decode
// returned. Conn decodes on its reader goroutine, so that decoding one frame
// overlaps with stepping the one before.
func (d *Driver) DeliverDecoded(msg *wire.Message, decodeErr error) error {
	defer d.enter()()
	d.replyTrace = replyTrace(msg)
	d.stats.Frames++
	if d.closing {
		d.refuse(&Refusal{Kind: RefusedShutdown, Msg: msg, Err: ErrConnectionLost})
		return ErrConnectionLost
	}
	if decodeErr != nil {
		d.refuse(&Refusal{Kind: RefusedDecode, Msg: msg, Err: decodeErr})
		return decodeErr
	}
	return d.fire(msg, false)
}

// DeliverMessage is Deliver for a frame that is already decoded and
// validated (by wire.Decode, in this driver's receiving direction): a model
// checker or a test feeding typed messages skips the JSON.
func (d *Driver) DeliverMessage(msg *wire.Message) error {
	defer d.enter()()
	d.replyTrace = replyTrace(msg)
	if d.closing {
		d.refuse(&Refusal{Kind: RefusedShutdown, Msg: msg, Err: ErrConnectionLost})
		return ErrConnectionLost
	}
	if msg.Entry == nil || msg.Entry.Direction != d.dir {
		err := &wire.RouteError{Type: msg.Type, Direction: d.dir, Unknown: msg.Entry == nil}
		d.refuse(&Refusal{Kind: RefusedDecode, Msg: msg, Err: err})
		return err
	}
	d.stats.Frames++
	return d.fire(msg, false)
}

// fire steps every target of msg in order; the first refusal gates the rest.
func (d *Driver) fire(msg *wire.Message, sent bool) error {
	targets, err := d.cfg.Router.Route(msg, d, d.targets[:0])
	d.targets = targets[:0]
	if err == nil && len(targets) == 0 {
		err = errors.New("the frame routes to no machine")
	}
	if err != nil {
		d.refuse(&Refusal{Kind: RefusedRoute, Msg: msg, Err: err})
		return err
	}
	if err := d.checkRequirements(msg, targets); err != nil {
		if !sent {
			d.refuse(&Refusal{Kind: RefusedRequirement, Msg: msg, Err: err})
		}
		return err
	}
	return d.fireTargets(msg, sent, targets)
}

// fireTargets steps each target in order; the first refusal gates the rest.
func (d *Driver) fireTargets(msg *wire.Message, sent bool, targets []Target) error {
	var firstErr error
	for _, tg := range targets {
		i, err := d.instance(tg.Key, true)
		if err != nil {
			d.refuse(&Refusal{Kind: RefusedRoute, Msg: msg, Key: tg.Key, Err: err})
			return err
		}
		err = d.step(i, tg.Event, d.event(msg, sent, nil))
		d.dropIfPristine(i)
		if isRejection(err) {
			if !sent {
				d.refuse(&Refusal{Kind: RefusedMachine, Msg: msg, Key: tg.Key, Err: err})
			}
			return err
		}
		if _, live := d.instances[i.Key]; live && len(tg.Registers) > 0 {
			d.register(i.Key, tg.Registers, msg)
		}
		if err != nil && firstErr == nil {
			// An effect failed: the step is applied, the next machine still
			// gets its event.
			firstErr = err
		}
	}
	return firstErr
}

// Local fires a local event (native settlement, shutdown, a policy
// decision) on an existing instance. Unknown instances are an error: local
// events never create instances.
//
// Called from a hook (while the driver is handling something else), the
// event is deferred until that completes, and its error is logged instead
// of returned.
func (d *Driver) Local(k Key, e fsm.EventID, arg any) error {
	if d.busy {
		d.deferred = append(d.deferred, deferredLocal{k, e, arg})
		return nil
	}
	defer d.enter()()
	return d.local(k, e, arg)
}

func (d *Driver) local(k Key, e fsm.EventID, arg any) error {
	i, err := d.instance(k, false)
	if err != nil {
		return &SendError{Type: "local event", Key: k, Err: err}
	}
	return d.step(i, e, d.event(nil, false, arg))
}

// Open creates the instance k in its machine's initial state without
// firing anything, for lifecycles that begin with local events (the
// connection's own instance, opened when the peer starts dialling). Opening
// an instance that exists is a no-op.
func (d *Driver) Open(k Key) (*Instance, error) {
	i, err := d.instance(k, true)
	if err != nil {
		return nil, &SendError{Type: "open", Key: k, Err: err}
	}
	return i, nil
}

// ConnectionLost fires connection_lost on every unsettled instance whose
// machine declares it, in key order, and fails every queued send. The
// driver accepts no frame afterwards: a reconnection gets a new driver
// (each physical connection has fresh routing and state, line 19).
func (d *Driver) ConnectionLost() {
	defer d.enter()()
	if d.closing {
		return
	}
	d.closing = true
	for _, w := range d.sends {
		w.finish(ErrConnectionLost)
	}
	d.sends = nil
	for _, i := range d.Instances() {
		e, ok := d.lost[i.Table()]
		if !ok || i.Terminal() {
			continue
		}
		_ = d.step(i, e, d.event(nil, false, ErrConnectionLost))
	}
}

// Closed reports whether ConnectionLost has run.
func (d *Driver) Closed() bool { return d.closing }

// replyTrace is the trace context a reply to msg carries: the frame's own,
// when it is a valid traceparent (daemon-protocol.txt:67: trace data is
// diagnostic correlation, so the requester can find its request's answers
// under its own trace).
//
// decision: a frame with no trace, or an invalid one, gets replies with
// none. The local trace minted for it correlates this side's log lines;
// the peer never asked for a trace, and an invalid value is never echoed
// (oversized trace metadata is omitted from replies, daemon-protocol.txt:181).
func replyTrace(msg *wire.Message) string {
	if msg == nil || msg.Trace == "" {
		return ""
	}
	if !wire.ParseTrace(msg.Trace).Local {
		return msg.Trace // valid, so already the canonical lowercase form
	}
	return ""
}

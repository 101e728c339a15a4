package peer

import (
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// Outbound is a frame this peer wants to send.
type Outbound struct {
	ID      string
	Payload wire.Payload
	Trace   string
	// Refusal marks the typed answer to a frame the driver refused (a
	// preparation_status rejected, an interaction_decision_ack with
	// run_inactive, a result with invalid_request): it is validated and
	// written like any frame, but it is not a step of any lifecycle, so no
	// machine is consulted or fired. Send it only from App.Refused.
	Refusal bool
	// Encoded, when set, is the frame already encoded without a trace:
	// exactly what wire.Encode(ID, Payload, "") returns (a writer of large
	// frames builds it off the loop, in a buffer of its own, with
	// wire.AppendWriteChunk). The trace is added when the frame is
	// prepared, in place when its capacity allows; the routing, the
	// requirements and the machines still see Payload. The driver keeps
	// none of it once done was called.
	Encoded []byte
}

// Write is a frame ready to be written, handed out by NextWrite. The caller
// writes Frame and reports the result with Written before it delivers
// anything else, so that the machines see the send exactly where it
// happened.
type Write struct {
	Frame []byte
	Type  string
	ID    string

	out     Outbound
	msg     wire.Message
	targets []Target
	done    func(error)
}

func (w *Write) finish(err error) {
	if w.done != nil {
		w.done(err)
		w.done = nil
	}
}

// Send queues a frame. It is checked and encoded when NextWrite hands it
// out, against the instances as they are then, and done (which may be nil)
// is called once with the outcome: nil when the frame was written and its
// events fired, a *SendError when it was refused before anything left, a
// *WriteError when the write failed (possibly delivered), or
// ErrConnectionLost. Hooks call it to reply; it never blocks.
//
// A frame sent while a received frame is delivered (a hook's reply, the
// answer to a refusal) carries that frame's trace context unless it names
// its own (replyTrace).
func (d *Driver) Send(o Outbound, done func(error)) {
	if o.Trace == "" {
		o.Trace = d.replyTrace
	}
	w := &Write{out: o, done: done}
	switch {
	case d.closing:
		w.finish(ErrConnectionLost)
	case o.Payload == nil:
		w.finish(&SendError{Type: "(no payload)", Err: errNoPayload})
	case len(d.sends) >= d.cfg.Limits.MaxPendingSends:
		w.finish(&SendError{Type: o.Payload.MessageType(), Err: ErrSendQueueFull})
	default:
		d.sends = append(d.sends, w)
	}
}

var errNoPayload = &wire.FieldError{Field: "payload", Rule: wire.RuleRequired, Detail: "a frame needs a payload"}

// Pending reports whether sends are queued.
func (d *Driver) Pending() bool { return len(d.sends) > 0 }

// NextWrite returns the next queued frame that every machine it addresses
// accepts, encoded. Refused frames are completed with their *SendError and
// skipped. It returns false when nothing is queued.
func (d *Driver) NextWrite() (*Write, bool) {
	for len(d.sends) > 0 {
		w := d.sends[0]
		d.sends[0] = nil
		d.sends = d.sends[1:]
		if err := d.prepare(w); err != nil {
			w.finish(err)
			continue
		}
		return w, true
	}
	return nil, false
}

func (d *Driver) prepare(w *Write) error {
	typ := w.out.Payload.MessageType()
	var frame []byte
	var err error
	if w.out.Encoded != nil {
		frame, err = wire.WithTrace(w.out.Encoded, typ, w.out.Trace)
	} else {
		frame, err = wire.Encode(w.out.ID, w.out.Payload, w.out.Trace)
	}
	if err != nil {
		return &SendError{Type: typ, Err: err}
	}
	entry, _ := wire.Lookup(typ)
	w.msg = wire.Message{
		Envelope: wire.Envelope{Type: typ, ID: w.out.ID, Trace: w.out.Trace},
		Entry:    entry,
		Payload:  w.out.Payload,
	}
	if entry.Direction == d.dir {
		return &SendError{Type: typ, Err: errWrongDirection}
	}
	if w.out.Refusal {
		w.Frame, w.Type, w.ID = frame, typ, w.out.ID
		return nil
	}
	targets, err := d.cfg.Router.Route(&w.msg, d, nil)
	if err != nil {
		return &SendError{Type: typ, Err: err}
	}
	if err := d.checkRequirements(&w.msg, targets); err != nil {
		return &SendError{Type: typ, Err: err}
	}
	for _, tg := range targets {
		if err := d.peek(tg, &w.msg); err != nil {
			return &SendError{Type: typ, Key: tg.Key, Err: err}
		}
	}
	w.Frame, w.Type, w.ID, w.targets = frame, typ, w.out.ID, targets
	return nil
}

var errWrongDirection = &wire.FieldError{Field: "type", Rule: wire.RuleEnum, Detail: "this peer does not send frames of this type"}

// peek asks the target instance (or a fresh one, when it does not exist
// yet) whether it accepts the send event now.
func (d *Driver) peek(tg Target, msg *wire.Message) error {
	ev := &Event{Key: tg.Key, Msg: msg, Sent: true, d: d}
	if i, ok := d.instances[tg.Key]; ok {
		ev.Inst = i
		_, err := i.in.Peek(tg.Event, ev, d.binding(tg.Key.Machine))
		return err
	}
	t, ok := d.tables[tg.Key.Machine]
	if !ok {
		return errUnknownInstance
	}
	if d.perTable[tg.Key.Machine] >= d.limit(tg.Key.Machine) && !d.hasSettled(tg.Key.Machine) {
		return errInstanceLimit
	}
	var fresh fsm.Instance[*Event]
	if err := fresh.Init(t, d.cfg.Role); err != nil {
		return err
	}
	ev.Inst = &Instance{Key: tg.Key, deadlines: make([]deadline, len(t.Timers))}
	_, err := fresh.Peek(tg.Event, ev, d.binding(tg.Key.Machine))
	return err
}

// Written reports the result of writing w. On success the send events fire
// in route order; on failure each addressed machine fires its declared
// failed-send event (the frame is possibly delivered), and the sender gets
// a *WriteError. The failure of the transport itself is the caller's to
// report with ConnectionLost.
func (d *Driver) Written(w *Write, werr error) {
	defer d.enter()()
	if werr != nil {
		d.stats.FailedWrites++
		d.cfg.Logger.Warn("write failed", "conn", d.cfg.Label, "type", w.Type, "id", boundedID(w.ID), "err", werr)
		for _, tg := range w.targets {
			i, err := d.instance(tg.Key, true)
			if err != nil {
				continue
			}
			if failed := i.Table().Event(tg.Event).FailedSend; failed != 0 {
				_ = d.step(i, failed, d.event(&w.msg, true, werr))
			}
			d.dropIfPristine(i)
		}
		w.finish(&WriteError{Type: w.Type, Err: werr})
		return
	}
	d.stats.Writes++
	if w.out.Refusal {
		w.finish(nil)
		return
	}
	// The frame left: the sender learns that, whatever an effect hook of
	// the send event did (effect failures are logged and counted).
	// The targets were routed and checked when the frame was prepared, and
	// nothing has run on this driver since (the write comes in between).
	_ = d.fireTargets(&w.msg, true, w.targets)
	w.finish(nil)
}

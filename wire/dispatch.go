package wire

import (
	"unicode/utf8"
)

// Message is a decoded, validated frame.
type Message struct {
	Envelope
	Entry   *Entry
	Payload Payload
}

// Target is one machine event a message fires.
type Target struct {
	Machine string
	Event   string
}

// Targets lists the machine events the message fires, one per machine the
// catalog routes it to. Where several are listed (an execution_start drives
// its admission and its Run; a receipt settles an interaction or a Run),
// the peer fires the one its id is registered with.
func (m Message) Targets() []Target {
	var out []Target
	for _, d := range m.Entry.Drives {
		if ev := d.EventFor(m.Payload); ev != "" {
			out = append(out, Target{Machine: d.Machine, Event: ev})
		}
	}
	return out
}

// Decode decodes one frame received travelling in direction dir and
// validates all of it: the envelope, the type against the catalog and its
// direction, the id against the type's identity, and the payload strictly.
// A frame type that is not in the catalog is an error (*RouteError), never
// silently dropped.
func Decode(frame []byte, dir Direction) (Message, error) {
	env, err := DecodeEnvelope(frame)
	if err != nil {
		return Message{Envelope: env}, err
	}
	e, ok := Lookup(env.Type)
	if !ok {
		return Message{Envelope: env}, &RouteError{Type: env.Type, Direction: dir, Unknown: true}
	}
	if e.Direction != dir {
		return Message{Envelope: env, Entry: e}, &RouteError{Type: env.Type, Direction: dir}
	}
	if err := CheckID(e, env.ID); err != nil {
		return Message{Envelope: env, Entry: e}, err
	}
	p, err := e.decode(env.Payload)
	if err != nil {
		return Message{Envelope: env, Entry: e}, err
	}
	if err := checkBinding(e.Type, env.ID, p); err != nil {
		return Message{Envelope: env, Entry: e}, err
	}
	return Message{Envelope: env, Entry: e, Payload: p}, nil
}

// CheckID checks an Envelope.id against the identity of e's type: absent
// for heartbeats and device frames, a canonical non-nil UUID for transfer
// and mutation IDs, otherwise 1..MaxIDBytes of UTF-8. An oversized id is
// reported without being repeated.
func CheckID(e *Entry, id string) error {
	c := newChecker(e.Type)
	switch e.Identity {
	case IdentityNone, IdentityDevice:
		c.forbidden("id", id != "", e.Type+" frames carry no id")
	default:
		if e.Identity.UUID() {
			c.uuid("id", id)
		} else {
			c.id("id", id, MaxIDBytes)
		}
	}
	return c.err()
}

// Encode builds a frame of payload p with the given id, validating both
// first so that a peer never sends what the other side would reject, nor
// anything encoding/json would alter on the way (a string that is not
// UTF-8).
func Encode(id string, p Payload, trace string) ([]byte, error) {
	e, ok := Lookup(p.MessageType())
	if !ok {
		return nil, &RouteError{Type: p.MessageType(), Unknown: true}
	}
	if err := CheckID(e, id); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, prefixed(e.Type, "payload", err)
	}
	if err := checkBinding(e.Type, id, p); err != nil {
		return nil, err
	}
	if path, bad := payloadInvalidUTF8(p); bad { // delta_encode.go
		return nil, fieldErr(e.Type, join("payload", path), RuleFormat, "not valid UTF-8 (it would be sent altered)")
	}
	if !utf8.ValidString(trace) {
		return nil, fieldErr(e.Type, "trace", RuleFormat, "not valid UTF-8 (it would be sent altered)")
	}
	if b, ok := appendSelfEncoded(id, p, trace); ok { // delta_encode.go
		return b, nil
	}
	return marshalEnvelope(id, p, trace)
}

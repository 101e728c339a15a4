package wire

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Direction is the way a frame travels.
type Direction uint8

const (
	CoreToRuntime Direction = 1 + iota // downstream: requests and decisions
	RuntimeToCore                      // upstream: statuses, events and receipts
)

func (d Direction) String() string {
	switch d {
	case CoreToRuntime:
		return "core to runtime"
	case RuntimeToCore:
		return "runtime to core"
	}
	return "unknown direction"
}

// Envelope is one data frame: a JSON object with the message type, the
// type-dependent correlation ID, the typed payload and optional W3C trace
// context. Trace is diagnostic only: it never changes routing or ownership
// and is never used as a request ID.
type Envelope struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Trace   string          `json:"trace,omitempty"`
}

// DecodeEnvelope decodes one frame strictly: unknown members, a repeated
// member, a missing or empty type, non-string type/id/trace, a non-object
// payload and trailing data are rejected, and a frame over MaxFrameBytes is
// refused before it is parsed. Payload aliases frame and is not parsed
// here: until the payload's own decoder (Decode) checks it, it may even be
// invalid JSON. Use Decode unless you dispatch payloads yourself.
func DecodeEnvelope(frame []byte) (Envelope, error) {
	var env Envelope
	if len(frame) > MaxFrameBytes {
		return env, fieldErr("", "frame", RuleTooLarge, "frame exceeds "+itoa(MaxFrameBytes)+" bytes")
	}
	// A strict walk of the top-level members only: the payload is checked
	// and parsed once, by its own decoder, and never scanned twice.
	syntax := func() (Envelope, error) {
		var probe any
		if err := json.Unmarshal(frame, &probe); err != nil {
			return env, jsonError("", "", err)
		}
		return env, fieldErr("", "(frame)", RuleSyntax, "invalid JSON")
	}
	i := skipSpace(frame, 0)
	if i == len(frame) || frame[i] != '{' {
		if i < len(frame) && (frame[i] == '[' || frame[i] == '"' || frame[i] == 't' || frame[i] == 'f' || frame[i] == 'n' || frame[i] == '-' || (frame[i] >= '0' && frame[i] <= '9')) && json.Valid(frame) {
			return env, fieldErr("", "(frame)", RuleType, "a frame must be a JSON object")
		}
		return syntax()
	}
	var seen [4]bool
	i = skipSpace(frame, i+1)
	closed := i < len(frame) && frame[i] == '}'
	for !closed {
		if i >= len(frame) || frame[i] != '"' {
			return syntax()
		}
		end, esc := scanString(frame, i)
		if end > len(frame) || end-1 <= i || frame[end-1] != '"' {
			return syntax()
		}
		raw := frame[i+1 : end-1]
		var name string
		if esc {
			if err := json.Unmarshal(frame[i:end], &name); err != nil {
				return syntax()
			}
		}
		slot := -1
		key := string(raw) // not kept: a switch on a conversion does not allocate
		if esc {
			key = name
		}
		switch key {
		case "type":
			slot = 0
		case "id":
			slot = 1
		case "payload":
			slot = 2
		case "trace":
			slot = 3
		}
		i = skipSpace(frame, end)
		if i >= len(frame) || frame[i] != ':' {
			return syntax()
		}
		vs := skipSpace(frame, i+1)
		if vs >= len(frame) {
			return syntax()
		}
		ve, _ := scanValue(frame, vs, nil)
		if ve > len(frame) || ve <= vs {
			return syntax()
		}
		value := frame[vs:ve]
		if slot < 0 {
			if !json.Valid(frame) {
				return syntax()
			}
			return env, fieldErr("", cutName(string(raw)), RuleUnknownField, "unknown envelope member")
		}
		if seen[slot] {
			return env, fieldErr("", key, RuleConflict, "member given twice")
		}
		seen[slot] = true
		if slot == 2 {
			if value[0] != '{' && string(value) != "null" {
				if !json.Valid(value) {
					return syntax()
				}
				return env, fieldErr("", "payload", RuleType, "payload must be a JSON object")
			}
			if value[0] == '{' {
				env.Payload = value // checked by the payload's own decoder
			}
		} else {
			dst := [...]*string{&env.Type, &env.ID, nil, &env.Trace}[slot]
			if value[0] != '"' {
				if !json.Valid(value) {
					return syntax()
				}
				return env, fieldErr("", key, RuleType, "must be a JSON string")
			}
			if err := unquote(value, dst); err != nil {
				return syntax()
			}
			if !utf8.ValidString(*dst) {
				if slot == 3 {
					// Trace data never causes a rejection: an unreadable
					// trace is dropped and the receiver mints a local one.
					env.Trace = ""
				} else {
					return env, fieldErr("", key, RuleFormat, "not valid UTF-8")
				}
			}
		}
		i = skipSpace(frame, ve)
		switch {
		case i < len(frame) && frame[i] == ',':
			i = skipSpace(frame, i+1)
		case i < len(frame) && frame[i] == '}':
			closed = true
		default:
			return syntax()
		}
	}
	if skipSpace(frame, i+1) != len(frame) {
		return syntax()
	}
	if env.Type == "" {
		return env, fieldErr("", "type", RuleRequired, "missing message type")
	}
	return env, nil
}

// unquote decodes a JSON string; the common case (no escape, no control
// character) is a copy.
func unquote(b []byte, dst *string) error {
	if len(b) < 2 || b[len(b)-1] != '"' {
		return errInvalidString
	}
	plain := true
	for _, c := range b[1 : len(b)-1] {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		*dst = string(b[1 : len(b)-1])
		return nil
	}
	return json.Unmarshal(b, dst)
}

var errInvalidString = errors.New("invalid JSON string")

// marshalEnvelope encodes an envelope carrying p; Encode validates first.
func marshalEnvelope(id string, p Payload, trace string) ([]byte, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fieldErr(p.MessageType(), "payload", RuleType, "cannot encode: "+err.Error())
	}
	return json.Marshal(Envelope{Type: p.MessageType(), ID: id, Payload: raw, Trace: trace})
}

// Payload is implemented by every payload type of the catalog.
type Payload interface {
	// MessageType is the wire type the payload travels under.
	MessageType() string
	// Validate checks every rule of the type; it returns a *FieldError
	// naming the first field that breaks one, in declaration order.
	Validate() error
}

func itoa(n int) string {
	b := make([]byte, 0, 12)
	return string(appendInt(b, n))
}

func appendInt(b []byte, n int) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

package wire

import (
	"encoding/json"
	"strconv"
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
// member, a missing or empty type, a non-string type or id, a string that
// is not UTF-8, a non-object payload, nesting deeper than MaxJSONDepth and
// trailing data are rejected, and a frame over MaxFrameBytes is refused
// before it is parsed. A trace that is not a readable string (a number,
// null, an object, invalid UTF-8) is dropped, never a reason to reject:
// the receiver mints a local trace (see ParseTrace).
//
// Payload aliases frame and is not parsed here: until the payload's own
// decoder (Decode) checks it, it may even be invalid JSON. Use Decode unless
// you dispatch payloads yourself.
//
// The walk is iterative and stops at the first problem; its work is linear
// in the frame's length whatever the frame holds.
func DecodeEnvelope(frame []byte) (Envelope, error) {
	var env Envelope
	if len(frame) > MaxFrameBytes {
		return env, fieldErr("", "frame", RuleTooLarge, "frame exceeds "+strconv.Itoa(MaxFrameBytes)+" bytes")
	}
	// syntax names the first problem of a frame the walk could not read.
	syntax := func() (Envelope, error) {
		if fe := checkFrame(frame); fe != nil {
			return env, fe.under("", "")
		}
		return env, fieldErr("", "(frame)", RuleSyntax, "invalid JSON")
	}
	i := skipSpace(frame, 0)
	if i == len(frame) || frame[i] != '{' {
		if checkFrame(frame) == nil {
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
		end, esc, bad := scanJSONString(frame, i)
		if bad != strOK {
			return syntax()
		}
		raw := frame[i+1 : end-1]
		var name string
		if esc {
			name = string(appendUnescaped(nil, frame[i:end]))
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
		ve, res := skipValue(frame, vs)
		switch res {
		case skipTooDeep:
			return env, fieldErr("", cutName(key), RuleTooLarge, "nested deeper than "+strconv.Itoa(MaxJSONDepth)+" levels")
		case skipBad:
			return syntax()
		}
		value := frame[vs:ve]
		if slot < 0 {
			return env, fieldErr("", cutName(key), RuleUnknownField, "unknown envelope member")
		}
		if seen[slot] {
			return env, fieldErr("", key, RuleConflict, "member given twice")
		}
		seen[slot] = true
		switch {
		case slot == 2:
			if value[0] != '{' && string(value) != "null" {
				if fe := checkJSON(value, nil); fe != nil {
					return env, fe.under("", "payload")
				}
				return env, fieldErr("", "payload", RuleType, "payload must be a JSON object")
			}
			if value[0] == '{' {
				env.Payload = value // checked by the payload's own decoder
			}
		case value[0] != '"':
			// Only the syntax of a value that is refused or dropped matters
			// (its nesting is bounded already): the frame must be JSON.
			if !json.Valid(value) {
				return syntax()
			}
			if slot != 3 {
				return env, fieldErr("", key, RuleType, "must be a JSON string")
			}
			// decision: a trace that is not a string (null, a number, an
			// object) is invalid trace data, which creates a local trace and
			// never rejects the frame (daemon-protocol.txt:67); its content
			// is not read.
		default:
			v, bad := unquoteJSON(value)
			switch {
			case bad == strOK:
				*[...]*string{&env.Type, &env.ID, nil, &env.Trace}[slot] = v
			case bad.rule() == RuleSyntax:
				return syntax()
			case slot != 3:
				return env, fieldErr("", key, bad.rule(), bad.String())
			}
			// An unreadable trace string is dropped like any invalid trace.
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

// marshalEnvelope encodes an envelope carrying p; Encode validates first.
func marshalEnvelope(id string, p Payload, trace string) ([]byte, error) {
	if a, ok := p.(payloadAppender); ok { // bulk data, written once (payload_append.go)
		if b, ok := appendEnvelope(id, p, a, trace); ok {
			return b, nil
		}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fieldErr(p.MessageType(), "payload", RuleType, "cannot encode: "+err.Error())
	}
	typ := p.MessageType()
	if !utf8.ValidString(id) || !utf8.ValidString(trace) {
		// encoding/json repairs what this cannot write verbatim.
		return json.Marshal(Envelope{Type: typ, ID: id, Payload: raw, Trace: trace})
	}
	// The envelope is written directly: marshalling it through encoding/json
	// would compact the payload a second time, a third of Encode's cost.
	b := make([]byte, 0, len(raw)+len(typ)+len(id)+len(trace)+48)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, typ)
	if id != "" {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, id)
	}
	b = append(b, `,"payload":`...)
	b = append(b, raw...)
	if trace != "" {
		b = append(b, `,"trace":`...)
		b = appendJSONString(b, trace)
	}
	return append(b, '}'), nil
}

// appendJSONString appends s, which must be valid UTF-8, as a JSON string,
// escaped as encoding/json escapes it: the quote, the backslash, control
// characters, <, > and &, and U+2028 and U+2029.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xa8 {
			// U+2028 or U+2029 (E2 80 A8, E2 80 A9). An earlier version
			// looked for them only after the last escaped byte.
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[s[i+2]&0xf])
			i += 2
			start = i + 1
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Payload is implemented by every payload type of the catalog.
type Payload interface {
	// MessageType is the wire type the payload travels under.
	MessageType() string
	// Validate checks every rule of the type; it returns a *FieldError
	// naming the first field that breaks one, in declaration order.
	Validate() error
}

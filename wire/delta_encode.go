package wire

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The Runtime's most frequent frame is a delta: one small text fragment
// of a Turn's output (issue 25). Encode checked its strings by walking the
// payload with reflect and encoded it with encoding/json, together about a
// microsecond of the few a delta costs the daemon. A payload that
// implements selfEncoder checks and appends itself instead, producing the
// same bytes encoding/json would (TestSelfEncodersMatchEncodingJSON).

// selfEncoder is a payload that knows its own strings and JSON.
type selfEncoder interface {
	// invalidUTF8Member names the first string member that is not valid
	// UTF-8 (its JSON path under the payload), or reports false.
	invalidUTF8Member() (string, bool)
	// appendJSON appends the payload as encoding/json would marshal it;
	// its strings are valid UTF-8. false leaves the payload to
	// encoding/json.
	appendJSON(b []byte) ([]byte, bool)
}

// lineSeparators reports whether s holds U+2028 or U+2029, which
// encoding/json escapes.
//
// decision: a string holding either goes to encoding/json, so these bytes
// never depend on how appendJSONString places their escapes; the other
// side of the line is one two-byte search, and model output rarely holds
// them.
func lineSeparators(s string) bool {
	for {
		i := strings.Index(s, "\xe2\x80")
		if i < 0 || i+2 >= len(s) {
			return false
		}
		if c := s[i+2]; c == 0xa8 || c == 0xa9 {
			return true
		}
		s = s[i+2:]
	}
}

// payloadInvalidUTF8 is invalidUTF8 over a payload.
func payloadInvalidUTF8(p Payload) (string, bool) {
	if se, ok := p.(selfEncoder); ok {
		return se.invalidUTF8Member()
	}
	return invalidUTF8(reflect.ValueOf(p), "")
}

// appendSelfEncoded writes the envelope of a self-encoding payload in one
// buffer, as marshalEnvelope does for the others; false when p is not one
// or id or trace would need encoding/json's repair.
func appendSelfEncoded(id string, p Payload, trace string) ([]byte, bool) {
	se, ok := p.(selfEncoder)
	if !ok || !utf8.ValidString(id) || !utf8.ValidString(trace) {
		return nil, false
	}
	typ := p.MessageType()
	b := make([]byte, 0, len(typ)+len(id)+len(trace)+96)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, typ)
	if id != "" {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, id)
	}
	b = append(b, `,"payload":`...)
	if b, ok = se.appendJSON(b); !ok {
		return nil, false
	}
	if trace != "" {
		b = append(b, `,"trace":`...)
		b = appendJSONString(b, trace)
	}
	return append(b, '}'), true
}

func (p Delta) invalidUTF8Member() (string, bool) {
	switch {
	case !utf8.ValidString(p.ItemID):
		return "item_id", true
	case !utf8.ValidString(p.Delta):
		return "delta", true
	}
	return "", false
}

func (p Delta) appendJSON(b []byte) ([]byte, bool) {
	if lineSeparators(p.Delta) || lineSeparators(p.ItemID) {
		return b, false
	}
	b = append(b, '{')
	if p.ItemID != "" {
		b = append(b, `"item_id":`...)
		b = appendJSONString(b, p.ItemID)
		b = append(b, ',')
	}
	b = append(b, `"delta":`...)
	b = appendJSONString(b, p.Delta)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, p.Sequence, 10)
	return append(b, '}'), true
}

package wire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// eachMember walks the members of a JSON object in order, handing each
// name and raw value to fn. Anything but an object is rejected, naming what
// was found instead; fn's error stops the walk.
//
// It walks the bytes directly, checking the object's punctuation itself,
// and leaves each value's own syntax to fn (every caller decodes values
// strictly). checkJSON and encoding/json have already validated a document
// (UTF-8, duplicates and nesting included) before they call an
// UnmarshalJSON method, so validating again here would scan every
// heartbeat several times.
func eachMember(data []byte, fn func(name string, value []byte) error) error {
	bad := fieldErr("", "", RuleSyntax, "invalid JSON")
	i := skipSpace(data, 0)
	switch {
	case i == len(data):
		return bad
	case bytes.HasPrefix(data[i:], []byte("null")) && skipSpace(data, i+4) == len(data):
		return fieldErr("", "", RuleRequired, "an object is required, found null")
	case data[i] != '{':
		return fieldErr("", "", RuleType, "must be a JSON object")
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			if i >= len(data) || data[i] != '"' {
				return bad
			}
			end, esc, problem := scanJSONString(data, i)
			if problem != strOK {
				return bad
			}
			var name string
			if esc {
				name = string(appendUnescaped(nil, data[i:end]))
			} else {
				name = string(data[i+1 : end-1])
			}
			i = skipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return bad
			}
			vs := skipSpace(data, i+1)
			ve, res := skipValue(data, vs)
			if res != skipOK {
				return bad
			}
			if err := fn(name, data[vs:ve]); err != nil {
				return err
			}
			i = skipSpace(data, ve)
			if i < len(data) && data[i] == ',' {
				i = skipSpace(data, i+1)
				continue
			}
			if i >= len(data) || data[i] != '}' {
				return bad
			}
			i++
			break
		}
	}
	if skipSpace(data, i) != len(data) {
		return bad
	}
	return nil
}

// relabel sets the field of a relative *FieldError raised for one member.
func relabel(err error, field string) error {
	if fe, ok := err.(*FieldError); ok {
		return fe.under(fe.Type, field)
	}
	return err
}

// appendSupport appends a decided capability as a JSON boolean.
func appendSupport(b []byte, s CapabilitySupport) []byte {
	if s == Supported {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// base64Data is the data member of the transfer, read and export payloads:
// raw binary data, base64 in JSON exactly like a []byte, and assignable to
// and from []byte. It exists so that bad base64 is reported as a format
// error on its member rather than as an anonymous syntax error of the whole
// payload, and so that empty data decodes as nil (which is what an omitted
// member re-decodes to). Every member of this type is named "data" at the
// root of its payload; the error says so.
type base64Data []byte

// UnmarshalJSON accepts a canonical base64 string or null.
//
// decision: only the canonical encoding is accepted: standard alphabet,
// padded, no line breaks or other whitespace, and zero padding bits (what
// encoding/base64 and every other encoder write). The decoder of
// encoding/base64 skips line breaks and, unless strict, ignores padding
// bits, so several strings would otherwise decode to the same bytes, and
// a frame could be logged or fingerprinted differently from what it
// installs (daemon-protocol.txt:104 and :185 verify transfers by digest).
func (b *base64Data) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		*b = nil
		return nil
	}
	if inner, ok := plainBase64String(raw); ok {
		// The common case, a string of base64 characters only, needs no
		// unquoting: decode it in place (one pass instead of four over a
		// 64 KiB chunk's 87 KiB of text).
		d := make([]byte, stdBase64.DecodedLen(len(inner)))
		n, err := stdBase64Strict.Decode(d, inner)
		if err != nil {
			return fieldErr("", "data", RuleFormat, "not valid canonical base64 (standard alphabet, padded, zero padding bits)")
		}
		if n == 0 {
			d = nil
		}
		*b = d[:n:n]
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fieldErr("", "data", RuleType, "expected a base64 string")
	}
	if strings.ContainsAny(s, "\r\n") {
		return fieldErr("", "data", RuleFormat, "not canonical base64: line breaks are not allowed")
	}
	d, err := decodeBase64([]byte(s))
	if err != nil {
		return fieldErr("", "data", RuleFormat, "not valid canonical base64 (standard alphabet, padded, zero padding bits)")
	}
	if len(d) == 0 {
		d = nil
	}
	*b = d
	return nil
}

// plainBase64String returns the inside of the JSON string raw when it
// needs no unquoting and holds no line break (which encoding/base64 would
// skip): its text is then what the slow path would decode, and the strict
// decoder refuses every other character of it just the same.
func plainBase64String(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 || bytes.IndexByte(inner, '\n') >= 0 || bytes.IndexByte(inner, '\r') >= 0 {
		return nil, false
	}
	return inner, true
}

package wire

import (
	"bytes"
	"reflect"
	"unicode/utf8"
)

// The decoder of workspace_read_result for a byte read (issue 25). A read
// result carries up to 1 MiB of data, about 1.4 MB of base64 text
// (daemon-protocol.txt:181). Through encoding/json it was read four times
// after checkJSON: encoding/json's own validity scan, its value scan, the
// string's unquoting, then base64; that was most of Core's time for a
// 1 MiB read. A flat result of plain members is decoded here in one pass
// after checkJSON, and base64 straight from the frame; anything else (a
// directory listing, an escaped string) goes through encoding/json exactly
// as before, which also words every error.

func (*WorkspaceReadResult) decodesStrictly() {}

// UnmarshalJSON decodes strictly, as decodeStrict would.
func (r *WorkspaceReadResult) UnmarshalJSON(data []byte) error {
	type plain WorkspaceReadResult
	if v, ok := decodeReadResultDirect(data); ok {
		*r = v
		return nil
	}
	if checkJSON(data, schemaFor(reflect.TypeFor[plain]())) == nil {
		if v, ok := decodeReadResult(data); ok {
			*r = v
			return nil
		}
	}
	return decodeRelative(data, (*plain)(r))
}

// decodeReadResult decodes a result that checkJSON already accepted
// against the schema (valid, known members only, none twice, each of its
// JSON kind) when every member is plain: strings without escapes,
// booleans, data of plain base64, no directory. It reports false for
// anything else.
func decodeReadResult(data []byte) (WorkspaceReadResult, bool) {
	var r WorkspaceReadResult
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return r, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return r, true
	}
	for i < len(data) {
		kEnd, esc, closed := scanString(data, i)
		if esc || !closed {
			return r, false
		}
		key := data[i+1 : kEnd-1]
		i = skipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return r, false
		}
		vs := skipSpace(data, i+1)
		ve, res := skipValue(data, vs)
		if res != skipOK {
			return r, false
		}
		v := data[vs:ve]
		str := func(dst *string) bool {
			if len(v) < 2 || v[0] != '"' {
				return false
			}
			if _, e, _ := scanString(v, 0); e {
				return false
			}
			*dst = string(v[1 : len(v)-1])
			return true
		}
		boolean := func(dst *bool) bool {
			switch string(v) {
			case "true":
				*dst = true
			case "false":
				*dst = false
			default:
				return false
			}
			return true
		}
		ok := false
		switch string(key) {
		case "outcome":
			ok = str(&r.Outcome)
		case "error_code":
			ok = str(&r.ErrorCode)
		case "truncated":
			ok = boolean(&r.Truncated)
		case "close_acknowledged":
			ok = boolean(&r.CloseAcknowledged)
		case "data":
			ok = v[0] == '"' && r.Data.UnmarshalJSON(v) == nil
		}
		if !ok {
			return r, false
		}
		i = skipSpace(data, ve)
		if i < len(data) && data[i] == '}' {
			return r, skipSpace(data, i+1) == len(data)
		}
		if i >= len(data) || data[i] != ',' {
			return r, false
		}
		i = skipSpace(data, i+1)
	}
	return r, false
}

// decodeReadResultDirect decodes the common result without checkJSON:
// a flat object of known members, each once, whose strings hold no
// escape, no control character and only UTF-8, whose booleans are
// literals, and whose data is canonical base64, which the strict decoder
// checks byte by byte (its alphabet needs no JSON escaping, so a string
// it accepts is a valid JSON string, and its closing quote is the first
// quote). That saves the two scans of the 1.4 MB string before base64
// (checkJSON's and skipValue's). It reports false, and decodes nothing,
// for anything else, which the generic path then decodes or refuses with
// its own error: it never accepts what checkJSON refuses.
func decodeReadResultDirect(data []byte) (WorkspaceReadResult, bool) {
	var r WorkspaceReadResult
	var seen uint8
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return r, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return r, skipSpace(data, i+1) == len(data)
	}
	// plain returns the contents of the plain string at data[i] and the
	// index after it.
	plain := func(i int) ([]byte, int, bool) {
		if i >= len(data) || data[i] != '"' {
			return nil, i, false
		}
		q := bytes.IndexByte(data[i+1:], '"')
		if q < 0 {
			return nil, i, false
		}
		return data[i+1 : i+1+q], i + 2 + q, true
	}
	for {
		key, next, ok := plain(i)
		if !ok {
			return r, false
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return r, false
		}
		i = skipSpace(data, i+1)
		var bit uint8
		switch string(key) { // a key with an escape matches none
		case "outcome":
			bit = 1
		case "data":
			bit = 2
		case "truncated":
			bit = 4
		case "close_acknowledged":
			bit = 8
		case "error_code":
			bit = 16
		default:
			return r, false
		}
		if seen&bit != 0 {
			return r, false
		}
		seen |= bit
		switch bit {
		case 1, 16:
			v, next, ok := plain(i)
			if !ok || !plainText(v) {
				return r, false
			}
			if bit == 1 {
				r.Outcome = string(v)
			} else {
				r.ErrorCode = string(v)
			}
			i = next
		case 4, 8:
			var b bool
			switch {
			case bytes.HasPrefix(data[i:], []byte("true")):
				b, i = true, i+4
			case bytes.HasPrefix(data[i:], []byte("false")):
				i += 5
			default:
				return r, false
			}
			if bit == 4 {
				r.Truncated = b
			} else {
				r.CloseAcknowledged = b
			}
		case 2:
			v, next, ok := plain(i)
			// encoding/base64 skips line breaks even when strict; canonical
			// data has none.
			if !ok || bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
				return r, false
			}
			d := make([]byte, stdBase64.DecodedLen(len(v)))
			n, err := stdBase64Strict.Decode(d, v)
			if err != nil {
				return r, false
			}
			if n > 0 {
				r.Data = d[:n:n]
			}
			i = next
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return r, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return r, skipSpace(data, i+1) == len(data)
		default:
			return r, false
		}
	}
}

// plainText reports whether s can stand verbatim in a JSON string as the
// same text: valid UTF-8 without a backslash or a control character.
func plainText(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return utf8.Valid(s)
}

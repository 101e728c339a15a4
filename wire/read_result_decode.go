package wire

import "reflect"

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

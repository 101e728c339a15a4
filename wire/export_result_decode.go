package wire

import (
	"bytes"
	"strconv"
)

// The direct decoder of workspace_export_result (issue 25). An export
// moves the archive as 64 KiB chunks that Core asks for one at a time;
// each answer is an 87 KiB frame that decodeBounded read with checkJSON,
// then encoding/json (its validity scan, its value scan, the unquoting),
// then base64. A flat result of plain members is decoded here in one pass,
// as decodeReadResultDirect decodes a read's result; anything else takes
// decodeBounded, which words every error.

// decodeExportResultDirect decodes a flat object of known members, each
// once: outcome and error_code as plain strings, offset as a JSON integer
// (no null here), data as canonical base64 checked byte by byte by the
// strict decoder. It reports false, and decodes nothing, for anything
// else: it never accepts what decodeBounded refuses.
func decodeExportResultDirect(data []byte) (WorkspaceExportResult, bool) {
	var r WorkspaceExportResult
	var seen uint8
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return r, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return r, skipSpace(data, i+1) == len(data)
	}
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
		switch string(key) {
		case "outcome":
			bit = 1
		case "offset":
			bit = 2
		case "data":
			bit = 4
		case "error_code":
			bit = 8
		default:
			return r, false
		}
		if seen&bit != 0 {
			return r, false
		}
		seen |= bit
		switch bit {
		case 1, 8:
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
		case 2:
			end := jsonIntegerEnd(data, i)
			if end < 0 {
				return r, false
			}
			n, err := strconv.ParseInt(string(data[i:end]), 10, 64)
			if err != nil {
				return r, false
			}
			r.Offset, i = &n, end
		case 4:
			v, next, ok := plain(i)
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

// jsonIntegerEnd returns the index after the JSON integer at data[i]
// (-?(0|[1-9][0-9]*), no fraction or exponent), or -1.
func jsonIntegerEnd(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data) || data[i] < '0' || data[i] > '9':
		return -1
	case data[i] == '0':
		i++
	default:
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == '.' || data[i] == 'e' || data[i] == 'E' || data[i] >= '0' && data[i] <= '9') {
		return -1
	}
	return i
}

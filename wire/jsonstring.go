package wire

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON strings, read strictly. encoding/json turns invalid UTF-8 and
// unpaired UTF-16 surrogates ("\ud800") into U+FFFD without a word, so two
// different ids can decode to the same string and no validator could ever
// see the bad bytes. Every string of a frame (names and values, in the
// envelope and at any depth of a payload) is read here first instead.
//
// decision: every string on the wire must be valid UTF-8 without unpaired
// surrogates, free text included. RFC 8259 §8.1 requires JSON text
// exchanged between systems to be UTF-8, and the protocol's own limits are
// stated for UTF-8 text (daemon-protocol.txt:179); a string that cannot be
// read as Unicode is refused, never repaired.

// strProblem is what is wrong with a JSON string literal.
type strProblem uint8

const (
	strOK        strProblem = iota
	strUnclosed             // no closing quote before the end of the input
	strControl              // a raw control character (U+0000..U+001F)
	strEscape               // an unknown escape or a malformed \u escape
	strUTF8                 // bytes that are not UTF-8 (over-long forms and encoded surrogates included)
	strSurrogate            // a \u escape of an unpaired UTF-16 surrogate
)

func (p strProblem) rule() Rule {
	if p == strUTF8 || p == strSurrogate {
		return RuleFormat
	}
	return RuleSyntax
}

func (p strProblem) String() string {
	switch p {
	case strUnclosed:
		return "unterminated string"
	case strControl:
		return "control character in a string (escape it)"
	case strEscape:
		return "invalid escape in a string"
	case strUTF8:
		return "not valid UTF-8"
	case strSurrogate:
		return "contains an unpaired UTF-16 surrogate escape"
	}
	return "valid string"
}

// scanJSONString checks the string literal starting at b[i] == '"' and
// returns the index after its closing quote and whether it contains an
// escape. On a problem, end is the offset of the offending byte.
//
// A syntax problem wins over an encoding one: after bad UTF-8 or an
// unpaired surrogate the scan goes on to the closing quote, and reports
// the encoding problem only for a string that is otherwise well formed. So
// a caller that tolerates an unreadable string (a dropped trace) never
// accepts text that is not JSON.
func scanJSONString(b []byte, i int) (end int, esc bool, bad strProblem) {
	soft, softAt := strOK, 0
	for i++; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			if soft != strOK {
				return softAt, esc, soft
			}
			return i + 1, esc, strOK
		case c == '\\':
			esc = true
			n, p := scanEscape(b, i)
			switch {
			case p == strSurrogate:
				if soft == strOK {
					soft, softAt = p, i
				}
				n = 6 // the unpaired \uXXXX; what follows is scanned on its own
			case p != strOK:
				return i, esc, p
			}
			i += n
		case c < 0x20:
			return i, esc, strControl
		case c < utf8.RuneSelf:
			i++
			// Runs of plain ASCII (the bulk of a base64 chunk) are
			// skipped eight bytes at a time.
			for i+8 <= len(b) && plainASCII8(binary.LittleEndian.Uint64(b[i:])) {
				i += 8
			}
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 && soft == strOK {
				soft, softAt = strUTF8, i
			}
			i += size
		}
	}
	return i, esc, strUnclosed
}

// scanEscape checks the escape at b[i] == '\\' and returns its length. A
// high surrogate must be followed at once by an escaped low surrogate, and
// a low surrogate must follow a high one.
func scanEscape(b []byte, i int) (int, strProblem) {
	if i+1 >= len(b) {
		return 0, strUnclosed
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, strOK
	case 'u':
	default:
		return 0, strEscape
	}
	r, ok := hex4(b, i+2)
	if !ok {
		return 0, strEscape
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, strSurrogate
	case r < 0xD800 || r > 0xDBFF:
		return 6, strOK
	}
	if i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
		return 0, strSurrogate
	}
	lo, ok := hex4(b, i+8)
	if !ok {
		return 0, strEscape
	}
	if lo < 0xDC00 || lo > 0xDFFF {
		return 0, strSurrogate
	}
	return 12, strOK
}

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendUnescaped appends the content of lit, a string literal that
// scanJSONString accepted (quotes included), to dst with escapes decoded.
func appendUnescaped(dst, lit []byte) []byte {
	body := lit[1 : len(lit)-1]
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch body[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(body, i+2)
			if utf16.IsSurrogate(r) {
				lo, _ := hex4(body, i+8)
				dst = utf8.AppendRune(dst, utf16.DecodeRune(r, lo))
				i += 12
				continue
			}
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, body[i+1])
		}
		i += 2
	}
	return dst
}

// unquoteJSON decodes the string literal lit strictly: the whole of lit
// must be one string that scanJSONString accepts.
func unquoteJSON(lit []byte) (string, strProblem) {
	end, esc, bad := scanJSONString(lit, 0)
	switch {
	case bad != strOK:
		return "", bad
	case end != len(lit):
		return "", strUnclosed
	case !esc:
		return string(lit[1 : end-1]), strOK
	}
	return string(appendUnescaped(make([]byte, 0, len(lit)), lit)), strOK
}

// plainASCII8 reports whether none of the eight bytes of x is a control
// character, a quote, a backslash or a non-ASCII byte: bytes that
// scanJSONString takes one by one with nothing to check.
func plainASCII8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// The classic word-at-a-time tests: hasZero is nonzero when some byte
	// of v is 0, below when some byte of x is under 0x20 (x having no
	// high bit set, which the first term checks).
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	below := (x - ones*0x20) & ^x & highs
	return (x&highs)|below|hasZero(x^(ones*'"'))|hasZero(x^(ones*'\\')) == 0
}

package wire

import (
	"bytes"
	"reflect"
	"sync"
)

// schema is what the strict scan (checkJSON) needs to know about the Go
// type a JSON value decodes into: which member names a struct defines, and
// which JSON kind each position takes. encoding/json's Unmarshal ignores
// unknown members, matches names without regard to case and reports a
// wrong kind without array indices; the scan does all three precisely,
// before Unmarshal runs.
type schema struct {
	kind   valueKind
	bits   int                // the size of a numeric kind
	fields map[string]*schema // struct: members by exact JSON name
	elem   *schema            // slice, array or map: the element
}

// valueKind is the JSON kind a Go type takes. JSON null is accepted at
// every position, as encoding/json accepts it for every Go type.
type valueKind uint8

const (
	kindFree   valueKind = iota // decodes itself or takes any JSON: not scanned against a schema
	kindObject                  // a struct or a map
	kindArray
	kindString
	kindBool
	kindInt
	kindUint
	kindFloat
)

func (k valueKind) String() string {
	switch k {
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	case kindString:
		return "a string"
	case kindBool:
		return "a boolean"
	case kindInt, kindUint, kindFloat:
		return "a number"
	}
	return "any JSON value"
}

var schemas sync.Map // reflect.Type → *schema

func schemaFor(t reflect.Type) *schema {
	if s, ok := schemas.Load(t); ok {
		return s.(*schema)
	}
	s := buildSchema(t, map[reflect.Type]*schema{})
	schemas.Store(t, s)
	return s
}

func buildSchema(t reflect.Type, seen map[reflect.Type]*schema) *schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := seen[t]; ok {
		return s // recursive types share their node
	}
	s := &schema{}
	seen[t] = s
	switch k := t.Kind(); {
	case opaque(t):
		s.kind = kindFree
	case k == reflect.Struct:
		s.kind = kindObject
		fields := map[string]reflect.Type{}
		collectFields(t, fields)
		s.fields = make(map[string]*schema, len(fields))
		for name, ft := range fields {
			s.fields[name] = buildSchema(ft, seen)
		}
	case k == reflect.Map:
		s.kind = kindObject
		s.elem = buildSchema(t.Elem(), seen)
	case k == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		s.kind = kindFree // base64 string: Unmarshal checks it
	case k == reflect.Slice, k == reflect.Array:
		s.kind = kindArray
		s.elem = buildSchema(t.Elem(), seen)
	case k == reflect.String:
		s.kind = kindString
	case k == reflect.Bool:
		s.kind = kindBool
	case k >= reflect.Int && k <= reflect.Int64:
		s.kind, s.bits = kindInt, t.Bits()
	case k >= reflect.Uint && k <= reflect.Uint64:
		s.kind, s.bits = kindUint, t.Bits()
	case k == reflect.Float32 || k == reflect.Float64:
		s.kind, s.bits = kindFloat, t.Bits()
	default:
		s.kind = kindFree
	}
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string starting at b[i] == '"',
// whether it contains an escape, and whether it is closed. It checks
// nothing else: it serves walks over bytes that checkJSON validates.
func scanString(b []byte, i int) (end int, esc, closed bool) {
	// Find the next quote, then whether a backslash comes before it
	// (escaping the quote, or anything else): both searches are the
	// runtime's vectorised IndexByte, which a 64 KiB chunk's text needs.
	for i++; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b), esc || bytes.IndexByte(b[i:], '\\') >= 0, false
		}
		k := bytes.IndexByte(b[i:i+q], '\\')
		if k < 0 {
			return i + q + 1, esc, true
		}
		esc = true
		i += k + 2 // the backslash and the byte it escapes
	}
	return len(b), esc, false
}

// skipResult is how skipValue ended.
type skipResult uint8

const (
	skipOK      skipResult = iota
	skipBad                // not a JSON value (checkJSON names the problem)
	skipTooDeep            // nested deeper than MaxJSONDepth
)

// skipValue returns the index after the JSON value starting at b[i]
// without checking it, except for its nesting: it stops at the first
// container opened deeper than MaxJSONDepth. Its work is linear in the
// length of the value and it allocates nothing, whatever the input; the
// value's own decoder validates it afterwards.
func skipValue(b []byte, i int) (int, skipResult) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			end, _, closed := scanString(b, i)
			if !closed {
				return end, skipBad
			}
			i = end
		case '{', '[':
			if depth++; depth > MaxJSONDepth {
				return i, skipTooDeep
			}
			i++
			continue
		case '}', ']':
			if depth--; depth < 0 {
				return i, skipBad
			}
			i++
		default:
			if depth > 0 {
				i++ // punctuation and scalars inside a container
				continue
			}
			start := i
			for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ':' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
				i++
			}
			if i == start {
				return i, skipBad
			}
			return i, skipOK
		}
		if depth == 0 {
			return i, skipOK
		}
	}
	return i, skipBad
}

package wire

import (
	"reflect"
	"sync"
)

// exactKeys reports whether every member name in data, at every position
// where Go type t expects a struct, is exactly one of that struct's JSON
// names. encoding/json's Unmarshal ignores unknown members and matches
// names without regard to case; this pass is what makes decoding strict.
// It walks the bytes once and allocates nothing; data must be valid JSON
// (it runs after a successful Unmarshal). A false answer is followed by
// locate, which finds and names the offending member.
func exactKeys(data []byte, t reflect.Type) bool {
	_, ok := scanValue(data, skipSpace(data, 0), schemaFor(t))
	return ok
}

// schema is what the scan needs to know about a Go type.
type schema struct {
	fields map[string]*schema // struct: members by exact JSON name
	elem   *schema            // slice, array or map: the element
	free   bool               // decodes itself or takes any JSON: not scanned
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
	switch {
	case opaque(t):
		s.free = true
	case t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		collectFields(t, fields)
		s.fields = make(map[string]*schema, len(fields))
		for name, ft := range fields {
			s.fields[name] = buildSchema(ft, seen)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		s.free = true // base64 string
	case t.Kind() == reflect.Slice, t.Kind() == reflect.Array, t.Kind() == reflect.Map:
		s.elem = buildSchema(t.Elem(), seen)
	default:
		s.free = true // scalars: Unmarshal already checked the kind
	}
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string starting at b[i] == '"'
// and whether it contains an escape.
func scanString(b []byte, i int) (int, bool) {
	esc := false
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			esc = true
			i++
		case '"':
			return i + 1, esc
		}
	}
	return i, esc
}

// scanValue checks the value at b[i] against s and returns the index after it.
func scanValue(b []byte, i int, s *schema) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '{':
		return scanObject(b, i, s)
	case '[':
		var elem *schema
		if s != nil && !s.free {
			elem = s.elem
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for i < len(b) {
			var ok bool
			if i, ok = scanValue(b, skipSpace(b, i), elem); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			return i + 1, true // ']'
		}
		return i, false
	case '"':
		end, _ := scanString(b, i)
		return end, true
	default: // number, true, false, null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
			i++
		}
		return i, true
	}
}

func scanObject(b []byte, i int, s *schema) (int, bool) {
	check := s != nil && !s.free && s.fields != nil
	var elem *schema
	if s != nil && !s.free && s.fields == nil {
		elem = s.elem // a map: every value has the element's schema
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for i < len(b) {
		start := i
		end, esc := scanString(b, i)
		child := elem
		if check {
			if esc {
				return start, false // let locate decode the escaped name
			}
			var ok bool
			if child, ok = s.fields[string(b[start+1:end-1])]; !ok {
				return start, false
			}
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // ':'
		var ok bool
		if i, ok = scanValue(b, i, child); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		return i + 1, true // '}'
	}
	return i, false
}

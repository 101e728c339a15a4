package wire

import (
	"bytes"
	"hash/maphash"
	"math"
	"strconv"
	"sync"
)

// checkJSON is the one pass every payload goes through before
// encoding/json sees it. It validates data as exactly one JSON value
// followed only by whitespace, and stops at the first of these problems:
//
//   - a syntax error (RuleSyntax);
//   - nesting deeper than MaxJSONDepth (RuleTooLarge);
//   - a string, member name or value, that is not UTF-8 or holds an
//     unpaired surrogate escape (RuleFormat; see jsonstring.go);
//   - a member name given twice in one object, compared after decoding
//     escapes, so "path" and "\u0070ath" are the same name (RuleConflict);
//   - with a schema: a member the Go struct does not define, names being
//     exact and case-sensitive (RuleUnknownField), or a value of the wrong
//     JSON kind or out of range for its Go number type (RuleType).
//
// Duplicates are refused at every depth, inside opaque values too: a
// reader that keeps the first of two values (a log, an audit, a peer in
// another language) would otherwise act on a different frame from this
// one.
//
// The scan is iterative: its stack is bounded by MaxJSONDepth, its work is
// linear in len(data) and it allocates only to remember member names (and
// a hash table for an object of many members). The error's Field is the
// JSON path of the problem relative to data ("" for data itself).
func checkJSON(data []byte, s *schema) *FieldError {
	return scan(data, s, MaxJSONDepth)
}

// checkFrame is checkJSON over a whole frame, whose envelope object is one
// level above its payload.
func checkFrame(frame []byte) *FieldError {
	return scan(frame, nil, MaxJSONDepth+1)
}

func scan(data []byte, s *schema, depth int) *FieldError {
	sc := scanners.Get().(*scanner)
	sc.depth = depth
	fe := sc.run(data, s)
	sc.release()
	return fe
}

var scanners = sync.Pool{New: func() any { return new(scanner) }}

// scanner is the state of one checkJSON call.
type scanner struct {
	data  []byte
	depth int          // the deepest nesting allowed
	stack []container  // open containers, innermost last
	names []memberName // the names of the members of every open object
	buf   []byte       // names that contain escapes, decoded
	table []int32      // closeObject's hash table, reused
}

type container struct {
	object bool
	schema *schema // nil when the position is not checked against a schema
	first  int     // object: the index in names of its first member
	buf    int     // object: the length of buf when it opened
	cur    int     // object: the index in names of the current member, -1 before the first
	index  int     // array: the index of the current element
}

// memberName is a member name: data[start:end], or buf[-start-1:end] when
// the name contains an escape (start < 0). Eight bytes: an object of many
// members is mostly these.
type memberName struct{ start, end int32 }

// linearDuplicates is the member count up to which each new name is
// compared with the earlier ones at once; a larger object is checked when
// it closes, through a hash table, which keeps the work linear.
const linearDuplicates = 16

// nameSeed keys the hash of member names. It is random per process, so a
// peer cannot choose names that collide and make the table slow.
var nameSeed = maphash.MakeSeed()

// maxRetainedNames bounds the name buffer a pooled scanner keeps.
const maxRetainedNames = 4096

func (s *scanner) release() {
	s.data = nil
	s.stack = s.stack[:0]
	if cap(s.names) > maxRetainedNames {
		s.names = nil
	}
	s.names = s.names[:0]
	if cap(s.buf) > maxRetainedNames {
		s.buf = nil
	}
	s.buf = s.buf[:0]
	if cap(s.table) > maxRetainedNames {
		s.table = nil
	}
	scanners.Put(s)
}

func (s *scanner) run(data []byte, root *schema) *FieldError {
	if len(data) > math.MaxInt32 {
		return fieldErr("", "", RuleTooLarge, "a JSON document of more than 2 GiB")
	}
	s.data = data
	sch := root
	i := skipSpace(data, 0)
	for {
		if sch != nil && sch.kind == kindFree {
			sch = nil
		}
		if i >= len(data) {
			return s.syntax(i, "unexpected end of JSON")
		}
		c := data[i]
		switch {
		case c == '{' || c == '[':
			if fe := s.kind(sch, c); fe != nil {
				return fe
			}
			if len(s.stack) == s.depth {
				return s.fail(RuleTooLarge, "nested deeper than "+strconv.Itoa(MaxJSONDepth)+" levels")
			}
			s.stack = append(s.stack, container{object: c == '{', schema: sch, first: len(s.names), buf: len(s.buf), cur: -1})
			i = skipSpace(data, i+1)
			if c == '{' && i < len(data) && data[i] == '}' || c == '[' && i < len(data) && data[i] == ']' {
				s.stack = s.stack[:len(s.stack)-1]
				i++
				break
			}
			var fe *FieldError
			if c == '{' {
				i, sch, fe = s.member(i)
			} else {
				sch = elemOf(sch)
			}
			if fe != nil {
				return fe
			}
			continue // the first member or element
		case c == '"':
			end, _, bad := scanJSONString(data, i)
			if bad != strOK {
				return s.stringError(end, bad)
			}
			if fe := s.kind(sch, c); fe != nil {
				return fe
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end, ok := scanNumber(data, i)
			if !ok {
				return s.syntax(end, "invalid number")
			}
			if fe := s.number(sch, data[i:end]); fe != nil {
				return fe
			}
			i = end
		case c == 't' || c == 'f' || c == 'n':
			lit := "null"
			if c == 't' {
				lit = "true"
			} else if c == 'f' {
				lit = "false"
			}
			if !bytes.HasPrefix(data[i:], []byte(lit)) {
				return s.syntax(i, "invalid literal")
			}
			if c != 'n' {
				if fe := s.kind(sch, c); fe != nil {
					return fe
				}
			}
			i += len(lit)
		default:
			return s.syntax(i, "a value was expected")
		}
		// A value is complete: go on to the next member or element,
		// closing every container that ends here.
		var done bool
		var fe *FieldError
		if i, sch, done, fe = s.next(i); fe != nil || done {
			return fe
		}
	}
}

// next moves past the value that ended at i: to the next member or element
// (returning its start and schema) or, closing containers, to the end.
func (s *scanner) next(i int) (int, *schema, bool, *FieldError) {
	data := s.data
	for {
		i = skipSpace(data, i)
		if len(s.stack) == 0 {
			if i != len(data) {
				return i, nil, false, s.syntax(i, "data after the JSON value")
			}
			return i, nil, true, nil
		}
		top := &s.stack[len(s.stack)-1]
		if i >= len(data) {
			return i, nil, false, s.syntax(i, "unexpected end of JSON")
		}
		switch c := data[i]; {
		case c == ',':
			i = skipSpace(data, i+1)
			if top.object {
				next, sch, fe := s.member(i)
				return next, sch, false, fe
			}
			top.index++
			return i, elemOf(top.schema), false, nil
		case c == '}' && top.object:
			if fe := s.closeObject(); fe != nil {
				return i, nil, false, fe
			}
			s.names = s.names[:top.first]
			s.buf = s.buf[:top.buf]
		case c == ']' && !top.object:
		default:
			if top.object {
				return i, nil, false, s.syntax(i, "',' or '}' was expected")
			}
			return i, nil, false, s.syntax(i, "',' or ']' was expected")
		}
		s.stack = s.stack[:len(s.stack)-1]
		i++
	}
}

// member reads the member name at i of the innermost object and the colon
// after it, and returns where its value starts and the value's schema.
func (s *scanner) member(i int) (int, *schema, *FieldError) {
	data := s.data
	top := &s.stack[len(s.stack)-1]
	top.cur = -1 // errors in the name belong to the object
	if i >= len(data) || data[i] != '"' {
		return i, nil, s.syntax(i, "a member name was expected")
	}
	end, esc, bad := scanJSONString(data, i)
	if bad != strOK {
		return i, nil, s.stringError(end, bad)
	}
	order := len(s.names) - top.first
	n := memberName{start: int32(i + 1), end: int32(end - 1)}
	if esc {
		start := len(s.buf)
		s.buf = appendUnescaped(s.buf, data[i:end])
		n.start, n.end = int32(-start-1), int32(len(s.buf))
	}
	if len(s.names) == cap(s.names) {
		// Double, where append grows a large slice by a quarter: the names
		// of a wide object would otherwise cost five times their size.
		s.names = append(make([]memberName, 0, max(2*cap(s.names), 64)), s.names...)
	}
	s.names = append(s.names, n)
	top.cur = len(s.names) - 1
	name := s.name(n)
	if order < linearDuplicates {
		for _, prev := range s.names[top.first : len(s.names)-1] {
			if bytes.Equal(s.name(prev), name) {
				return i, nil, s.fail(RuleConflict, "member given twice")
			}
		}
	}
	var child *schema
	if sch := top.schema; sch != nil {
		if sch.fields != nil {
			var ok bool
			if child, ok = sch.fields[string(name)]; !ok {
				return i, nil, s.fail(RuleUnknownField, "unknown member (member names are exact and case-sensitive)")
			}
		} else {
			child = sch.elem
		}
	}
	i = skipSpace(data, end)
	if i >= len(data) || data[i] != ':' {
		return i, nil, s.syntax(i, "':' was expected after a member name")
	}
	return skipSpace(data, i+1), child, nil
}

// closeObject finds a repeated name among the members of the innermost
// object when it has too many for the linear check to have seen them all,
// and reports the first member that repeats an earlier one. It hashes the
// names into an open-addressing table of at least twice their number.
func (s *scanner) closeObject() *FieldError {
	top := &s.stack[len(s.stack)-1]
	names := s.names[top.first:]
	if len(names) <= linearDuplicates {
		return nil
	}
	size := 64
	for size < 2*len(names) {
		size <<= 1
	}
	if cap(s.table) < size {
		s.table = make([]int32, size)
	}
	table := s.table[:size]
	clear(table) // a slot holds a name's index + 1; 0 is free
	mask := uint64(size - 1)
	for k, n := range names {
		name := s.name(n)
		for h := maphash.Bytes(nameSeed, name) & mask; ; h = (h + 1) & mask {
			slot := table[h]
			if slot == 0 {
				table[h] = int32(k + 1)
				break
			}
			if bytes.Equal(s.name(names[slot-1]), name) {
				top.cur = top.first + k
				return s.fail(RuleConflict, "member given twice")
			}
		}
	}
	return nil
}

func (s *scanner) name(n memberName) []byte {
	if n.start < 0 {
		return s.buf[-n.start-1 : n.end]
	}
	return s.data[n.start:n.end]
}

func elemOf(sch *schema) *schema {
	if sch == nil {
		return nil
	}
	return sch.elem
}

// kind checks that the value starting with byte c is of the kind sch takes.
func (s *scanner) kind(sch *schema, c byte) *FieldError {
	if sch == nil {
		return nil
	}
	var found valueKind
	switch c {
	case '{':
		found = kindObject
	case '[':
		found = kindArray
	case '"':
		found = kindString
	case 't', 'f':
		found = kindBool
	default:
		found = kindFloat
	}
	if found == sch.kind || found == kindFloat && (sch.kind == kindInt || sch.kind == kindUint) {
		return nil
	}
	return s.fail(RuleType, "expected "+sch.kind.String()+", found "+found.String())
}

// number checks a number literal against sch: an integer type takes only an
// integer literal within its range, a float type a literal within its
// range, exactly as encoding/json would decide, so that Unmarshal cannot
// fail on it later. The value is never repeated in the error.
func (s *scanner) number(sch *schema, lit []byte) *FieldError {
	if sch == nil {
		return nil
	}
	if fe := s.kind(sch, lit[0]); fe != nil {
		return fe
	}
	ok := true
	switch sch.kind {
	case kindInt:
		ok = fitsInt(lit, sch.bits)
	case kindUint:
		ok = lit[0] != '-' && fitsInt(lit, sch.bits+1) // one more bit: no sign
	case kindFloat:
		_, err := strconv.ParseFloat(string(lit), sch.bits)
		ok = err == nil
	}
	if !ok {
		return s.fail(RuleType, "expected "+numberKind(sch)+", found a number that is not one")
	}
	return nil
}

func numberKind(sch *schema) string {
	switch sch.kind {
	case kindInt:
		return "an integer of " + strconv.Itoa(sch.bits) + " bits"
	case kindUint:
		return "a non-negative integer of " + strconv.Itoa(sch.bits) + " bits"
	}
	return "a finite number"
}

// fitsInt reports whether lit is an integer literal (no fraction, no
// exponent) whose value fits a signed integer of bits bits; an unsigned
// type of n bits passes n+1.
func fitsInt(lit []byte, bits int) bool {
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) > 20 {
		return false // beyond any 64-bit value; not worth parsing
	}
	var v uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return false
		}
		v = v*10 + d
	}
	if bits > 64 { // uint64
		return true
	}
	limit := uint64(1) << (bits - 1)
	if neg {
		return v <= limit
	}
	return v < limit
}

// scanNumber returns the index after the number literal at b[i] and whether
// it follows the JSON grammar.
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

func (s *scanner) stringError(at int, bad strProblem) *FieldError {
	if bad.rule() == RuleSyntax {
		return s.syntax(at, bad.String())
	}
	return s.fail(bad.rule(), bad.String())
}

// syntax reports a syntax error at the root of the document, with the byte
// offset where it was found: there is no member to name in text that is not
// JSON, and the offset is what finds it.
func (s *scanner) syntax(at int, what string) *FieldError {
	return fieldErr("", "", RuleSyntax, "invalid JSON at byte "+strconv.Itoa(at)+": "+what)
}

// fail builds the error for the current position: the path of the value
// being scanned.
func (s *scanner) fail(rule Rule, detail string) *FieldError {
	var b []byte
	for _, c := range s.stack {
		switch {
		case !c.object:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(c.index), 10)
			b = append(b, ']')
		case c.cur >= 0:
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, cutName(string(s.name(s.names[c.cur])))...)
		}
		if len(b) > maxFieldBytes {
			break
		}
	}
	return fieldErr("", string(b), rule, detail)
}

package wire

import (
	"errors"
	"strconv"
)

// Sentinels for errors.Is.
var (
	// ErrInvalid matches every *FieldError: a payload or envelope that
	// breaks a rule of the schema. The frame is rejected; the connection
	// stays usable.
	ErrInvalid = errors.New("wire: invalid message")
	// ErrUnknownType matches a frame whose type is not in the catalog.
	ErrUnknownType = errors.New("wire: unknown message type")
	// ErrDirection matches a known type received from the wrong peer.
	ErrDirection = errors.New("wire: message sent in the wrong direction")
	// ErrTooLarge matches a payload or identity over its size limit.
	ErrTooLarge = errors.New("wire: over limit")
)

// Rule names what a field broke. Rules are stable identifiers, suitable
// for metrics and for tests; Detail says the same for a person.
type Rule string

const (
	RuleRequired     Rule = "required"      // missing, null or empty where a value is required
	RuleUnknownField Rule = "unknown_field" // a member the schema does not define
	RuleType         Rule = "type"          // the JSON type is wrong (a string where a number goes, …)
	RuleSyntax       Rule = "syntax"        // not valid JSON, or trailing data after the value
	RuleEnum         Rule = "enum"          // not one of the allowed values
	RuleFormat       Rule = "format"        // a UUID, digest, path or name of the wrong shape
	RuleRange        Rule = "range"         // a number outside its bounds
	RuleTooLarge     Rule = "too_large"     // over a byte or count limit
	RuleForbidden    Rule = "forbidden"     // present where the rules exclude it
	RuleConflict     Rule = "conflict"      // fields that cannot go together, or a repeat that must be unique
	RuleUnsupported  Rule = "unsupported"   // valid, but not supported by the declared capabilities
)

// FieldError is the error of every decoder and validator in this package.
// Field is a JSON path from the envelope, e.g. "payload.input[0].content[1].image_url",
// or "id" / "type" / "trace" for the envelope members.
//
// Messages never repeat a peer's value at length: Detail quotes at most a
// short, escaped prefix of it.
type FieldError struct {
	Type   string // the message type, or "" when the envelope itself is bad
	Field  string
	Rule   Rule
	Detail string
}

func (e *FieldError) Error() string {
	prefix := "wire: "
	if e.Type != "" {
		prefix += e.Type + ": "
	}
	field := e.Field
	if field == "" {
		field = "(value)"
	}
	return prefix + field + ": " + e.Detail + " (" + string(e.Rule) + ")"
}

// Is matches ErrInvalid, and ErrTooLarge for RuleTooLarge.
func (e *FieldError) Is(target error) bool {
	return target == ErrInvalid || (target == ErrTooLarge && e.Rule == RuleTooLarge)
}

// RouteError reports a frame type that cannot be dispatched: unknown to the
// catalog, or known but sent by the wrong peer. Type is quoted and cut.
type RouteError struct {
	Type      string
	Direction Direction // the direction the frame travelled
	Unknown   bool
}

func (e *RouteError) Error() string {
	if e.Unknown {
		return "wire: unknown message type " + quote(e.Type)
	}
	return "wire: message type " + quote(e.Type) + " is not sent " + e.Direction.String()
}

// Is matches ErrUnknownType or ErrDirection.
func (e *RouteError) Is(target error) bool {
	if e.Unknown {
		return target == ErrUnknownType
	}
	return target == ErrDirection
}

// maxQuoted bounds how much of a peer's value an error repeats.
const maxQuoted = 32

// Bounds of the two parts of a FieldError built from peer input: a path is
// made of bounded names but can be up to MaxJSONDepth of them deep, and a
// detail may quote a value. Every error text of this package is therefore
// at most about maxFieldBytes + maxDetailBytes plus the message type and
// the rule, whatever the input (see MaxErrorBytes).
const (
	maxFieldBytes  = 192
	maxDetailBytes = 192
)

// MaxErrorBytes bounds the Error() text of every *FieldError and
// *RouteError this package returns, whatever the frame: a receiver may log
// or echo it without cutting it first.
const MaxErrorBytes = 512

// quote renders a peer-supplied value for an error: quoted, escaped, cut.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(cutUTF8(s, maxQuoted)) + "…"
	}
	return strconv.Quote(s)
}

// cutName bounds a peer-supplied member name used as a field in an error.
// A name that would blur the path (a dot, a bracket, a quote, a control or
// non-ASCII character) is quoted and escaped instead, so a path always
// reads unambiguously and on one line.
func cutName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x21 || c > 0x7e || c == '.' || c == '[' || c == ']' || c == '"' || c == '\\' {
			return quote(name)
		}
	}
	if len(name) > maxQuoted {
		return name[:maxQuoted] + "…"
	}
	return name
}

// cutUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// bounded cuts s to max bytes, marking the cut. A path keeps its start and
// its end, which name the root and the offending member; a detail keeps
// its start.
func bounded(s string, max int, keepEnd bool) string {
	if len(s) <= max {
		return s
	}
	if !keepEnd {
		return cutUTF8(s, max-len("…")) + "…"
	}
	half := (max - len("…")) / 2
	tail := len(s) - half
	for tail < len(s) && s[tail]&0xC0 == 0x80 {
		tail++
	}
	return cutUTF8(s, half) + "…" + s[tail:]
}

// under returns a copy of e stamped with typ and re-rooted under prefix:
// the relative path of a sub-validator or nested decoder becomes prefix's
// child ("input" and "[0].text" give "input[0].text").
func (e *FieldError) under(typ, prefix string) *FieldError {
	out := *e
	out.Type = typ
	out.Field = bounded(join(prefix, e.Field), maxFieldBytes, true)
	return &out
}

// asError returns fe as an error: nil, not an interface holding a nil
// pointer, when there is no error. Validators that build a *FieldError use
// it to implement Validate() error.
func asError(fe *FieldError) error {
	if fe == nil {
		return nil
	}
	return fe
}

// fieldErr builds a FieldError.
func fieldErr(typ, field string, rule Rule, detail string) *FieldError {
	return &FieldError{Type: typ, Field: bounded(field, maxFieldBytes, true), Rule: rule, Detail: bounded(detail, maxDetailBytes, false)}
}

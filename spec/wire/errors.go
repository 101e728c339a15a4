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

// quote renders a peer-supplied value for an error: quoted, escaped, cut.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "…"
	}
	return strconv.Quote(s)
}

// under returns a copy of e stamped with typ and re-rooted under prefix:
// the relative path of a sub-validator or nested decoder becomes prefix's
// child ("input" and "[0].text" give "input[0].text").
func (e *FieldError) under(typ, prefix string) *FieldError {
	out := *e
	out.Type = typ
	out.Field = join(prefix, e.Field)
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
	return &FieldError{Type: typ, Field: field, Rule: rule, Detail: detail}
}

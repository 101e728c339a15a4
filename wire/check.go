package wire

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// checker accumulates the first rule a payload breaks. Validators call its
// methods in field order and return c.err(); after the first failure every
// further check is a no-op, so the error names the first bad field.
type checker struct {
	typ   string
	first *FieldError
}

func newChecker(typ string) *checker { return &checker{typ: typ} }

func (c *checker) err() error { return asError(c.first) }

func (c *checker) ok() bool { return c.first == nil }

// fail records a violation unless one was already recorded.
func (c *checker) fail(field string, rule Rule, detail string) {
	if c.first == nil {
		c.first = fieldErr(c.typ, field, rule, detail)
	}
}

// nested runs a sub-validator that returns *FieldError with a path relative
// to field, and records its error with the absolute path.
//
// A typed nil (*FieldError)(nil) passed as err counts as no error, so
// validators may return *FieldError directly.
func (c *checker) nested(field string, err error) {
	if c.first != nil || err == nil {
		return
	}
	if fe, ok := err.(*FieldError); ok {
		if fe == nil {
			return
		}
		c.first = fe.under(c.typ, field)
		return
	}
	c.first = fieldErr(c.typ, field, RuleFormat, err.Error())
}

func (c *checker) required(field, v string) {
	if strings.TrimSpace(v) == "" {
		c.fail(field, RuleRequired, "required and must not be blank")
	}
}

// notBlankWhenSet rejects an optional string that is present but blank:
// omitempty makes "" mean absent, so a whitespace-only value can only be a
// producer bug.
func (c *checker) notBlankWhenSet(field, v string) {
	if v != "" && strings.TrimSpace(v) == "" {
		c.fail(field, RuleFormat, "must not be blank when present")
	}
}

// requiredBool requires a boolean that is always on the wire. Such members
// are *bool so that a missing or null value is never read as false.
func (c *checker) requiredBool(field string, b *bool) {
	if b == nil {
		c.fail(field, RuleRequired, "must be true or false; missing or null")
	}
}

func (c *checker) maxBytes(field, v string, n int) {
	if len(v) > n {
		c.fail(field, RuleTooLarge, "longer than "+strconv.Itoa(n)+" bytes")
	}
}

// id checks a correlation ID: present, at most max bytes, valid UTF-8
// and free of NUL, which no store or log of an identity should have to
// carry (a C string would end there, and two ids would compare equal).
func (c *checker) id(field, v string, max int) {
	c.required(field, v)
	c.maxBytes(field, v, max)
	switch {
	case !utf8.ValidString(v):
		c.fail(field, RuleFormat, "not valid UTF-8")
	case strings.IndexByte(v, 0) >= 0:
		c.fail(field, RuleFormat, "contains NUL")
	}
}

// uuid checks a canonical, lower-case, non-nil UUID.
func (c *checker) uuid(field, v string) {
	if v == "" {
		c.fail(field, RuleRequired, "required")
		return
	}
	if !IsCanonicalUUID(v) {
		c.fail(field, RuleFormat, "must be a canonical non-nil UUID")
	}
}

func (c *checker) oneOf(field, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	if v == "" {
		c.fail(field, RuleRequired, "required; one of "+strings.Join(allowed, ", "))
		return
	}
	c.fail(field, RuleEnum, quote(v)+" is not one of "+strings.Join(allowed, ", "))
}

func (c *checker) forbidden(field string, present bool, why string) {
	if present {
		c.fail(field, RuleForbidden, why)
	}
}

func (c *checker) rangeInt(field string, v, lo, hi int64) {
	if v < lo || v > hi {
		c.fail(field, RuleRange, "must be between "+strconv.Itoa(int(lo))+" and "+strconv.Itoa(int(hi)))
	}
}

// outcomeCodes gives the closed error-code list of each outcome of a
// result that refuses or fails; every other outcome carries no code.
type outcomeCodes map[string][]string

// errorCode checks a result's error_code against its outcome: one of the
// outcome's closed list where it has one, absent otherwise. what names the
// result in the message ("receipt", "read", …).
func (c *checker) errorCode(outcome, code string, codes outcomeCodes, what string) {
	if allowed, ok := codes[outcome]; ok {
		c.oneOf("error_code", code, allowed...)
		return
	}
	c.forbidden("error_code", code != "", "a "+outcome+" "+what+" carries no error_code")
}

// IsCanonicalUUID reports whether s is a UUID in canonical 8-4-4-4-12
// lower-case hex form and not the nil UUID.
func IsCanonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	nonZero := false
	for i := 0; i < 36; i++ {
		ch := s[i]
		switch i {
		case 8, 13, 18, 23:
			if ch != '-' {
				return false
			}
			continue
		}
		switch {
		case ch >= '0' && ch <= '9':
			nonZero = nonZero || ch != '0'
		case ch >= 'a' && ch <= 'f':
			nonZero = true
		default:
			return false
		}
	}
	return nonZero
}

// IsSHA256Hex reports whether s is 64 lower-case hex digits.
func IsSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

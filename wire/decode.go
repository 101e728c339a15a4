package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// decodeStrict decodes data into v, rejecting unknown members at any depth,
// repeated members, wrong JSON types, invalid UTF-8, excessive nesting and
// anything after the value. typ is the message type and prefix the JSON
// path of data ("payload" for a payload, "" for the envelope); both end up
// in the *FieldError.
//
// checkJSON validates everything first, in one pass that stops at the first
// problem, so encoding/json only ever decodes a document already known to
// be well formed: it can no longer repair strings, keep the last of two
// members or fold the case of a name.
func decodeStrict(typ, prefix string, data []byte, v any) error {
	if sd, ok := v.(selfStrict); ok {
		// It bounds and decodes itself with decodeStrict (decodeBounded):
		// checking and decoding it here first would only read a 96 KiB
		// chunk frame three more times, and encoding/json would hand it
		// the same bytes.
		if err := sd.UnmarshalJSON(data); err != nil {
			return jsonError(typ, prefix, err)
		}
		return nil
	}
	t := reflect.TypeOf(v).Elem()
	if fe := checkJSON(data, schemaFor(t)); fe != nil {
		return fe.under(typ, prefix)
	}
	if err := json.Unmarshal(data, v); err != nil {
		err = jsonError(typ, prefix, err)
		// checkJSON already refused every wrong kind it can see; what is
		// left (inside a type that decodes itself) is named by walking the
		// document again.
		if fe, ok := err.(*FieldError); ok && fe.Rule == RuleType {
			if path, rule, found := locate(data, t); found && rule == fe.Rule {
				fe.Field = bounded(join(prefix, path), maxFieldBytes, true)
			}
		}
		return err
	}
	return nil
}

// jsonError turns an encoding/json error into a *FieldError naming the
// field. Errors raised by our own UnmarshalJSON methods already are
// *FieldError and keep their rule; their path is made absolute.
func jsonError(typ, prefix string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.under(typ, prefix)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// te.Value is the offending literal for a number: never repeat it.
		found, _, _ := strings.Cut(te.Value, " ")
		return fieldErr(typ, join(prefix, te.Field), RuleType, "expected "+jsonKind(te.Type.Kind().String())+", found "+cutName(found))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fieldErr(typ, orRoot(prefix), RuleSyntax, "invalid JSON at byte "+strconv.Itoa(int(se.Offset)))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fieldErr(typ, orRoot(prefix), RuleSyntax, "truncated JSON")
	}
	// encoding/json reports unknown members as `json: unknown field "name"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fieldErr(typ, join(prefix, cutName(strings.Trim(name, `"`))), RuleUnknownField, "unknown member")
	}
	return fieldErr(typ, orRoot(prefix), RuleSyntax, "cannot decode: "+cut(err.Error()))
}

func jsonKind(k string) string {
	switch k {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	}
	return k
}

// join appends a relative path to a prefix: "input" + "[0].text" is
// "input[0].text", "payload" + "run_id" is "payload.run_id".
func join(prefix, field string) string {
	switch {
	case prefix == "":
		return orRoot(field)
	case field == "":
		return prefix
	case field[0] == '[':
		return prefix + field
	}
	return prefix + "." + field
}

func orRoot(p string) string {
	if p == "" {
		return "(frame)"
	}
	return p
}

func cut(s string) string { return bounded(s, 120, false) }

// validator is what every payload type implements, on its value receiver.
type validator interface{ Validate() error }

// decodePayload decodes raw strictly into a T and validates it. Paths in
// the returned *FieldError start at "payload". An absent or null payload
// decodes as an empty object, so bodyless frames still meet their rules. A
// payload over its type's raw bound is refused before it is scanned.
func decodePayload[T validator](typ string, raw []byte) (T, error) {
	var p T
	if err := CheckRawPayloadSize(typ, raw); err != nil {
		return p, err
	}
	if len(bytes.TrimSpace(raw)) == 0 || isNull(raw) {
		raw = []byte("{}")
	}
	if err := decodeStrict(typ, "payload", raw, &p); err != nil {
		return p, err
	}
	if err := p.Validate(); err != nil {
		return p, prefixed(typ, "payload", err)
	}
	return p, nil
}

// prefixed makes a validator's relative path absolute and stamps the type.
func prefixed(typ, prefix string, err error) error {
	fe, ok := err.(*FieldError)
	if !ok {
		return fieldErr(typ, prefix, RuleFormat, cut(err.Error()))
	}
	return fe.under(typ, prefix)
}

// decodeRelative decodes one JSON value strictly, for an UnmarshalJSON
// method: like decodeStrict, with paths relative to that value, which the
// caller's decoder then roots.
func decodeRelative(data []byte, v any) error {
	err := decodeStrict("", "", data, v)
	if fe, ok := err.(*FieldError); ok && fe.Field == orRoot("") {
		fe.Field = ""
	}
	return err
}

// payloadError makes a validator's relative error final for a payload of
// type typ: stamped with the type and rooted at "payload".
func payloadError(typ string, err error) *FieldError {
	if err == nil {
		return nil
	}
	fe, _ := prefixed(typ, "payload", err).(*FieldError)
	return fe
}

// isNull reports whether raw is the JSON literal null, whitespace aside.
func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

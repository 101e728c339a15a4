package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// eachMember walks the members of a JSON object in order, handing each
// name and raw value to fn. Anything but an object is rejected, naming what
// was found instead; fn's error stops the walk.
func eachMember(data []byte, fn func(name string, value []byte) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fieldErr("", "", RuleSyntax, "invalid JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		if tok == nil {
			return fieldErr("", "", RuleRequired, "an object is required, found null")
		}
		return fieldErr("", "", RuleType, "must be a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fieldErr("", "", RuleSyntax, "invalid JSON")
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fieldErr("", cutName(name), RuleSyntax, "invalid JSON value")
		}
		if err := fn(name, value); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fieldErr("", "", RuleSyntax, "invalid JSON")
	}
	return nil
}

// cutName bounds a peer-supplied member name used as a field in an error.
func cutName(name string) string {
	if len(name) > maxQuoted {
		return name[:maxQuoted] + "…"
	}
	return name
}

// relabel sets the field of a relative *FieldError raised for one member.
func relabel(err error, field string) error {
	if fe, ok := err.(*FieldError); ok {
		return fe.under(fe.Type, field)
	}
	return err
}

// appendSupport appends a decided capability as a JSON boolean.
func appendSupport(b []byte, s CapabilitySupport) []byte {
	if s == Supported {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// base64Data is the data member of the transfer, read and export payloads:
// raw binary data, base64 in JSON exactly like a []byte, and assignable to
// and from []byte. It exists so that bad base64 is reported as a format
// error on its member rather than as an anonymous syntax error of the whole
// payload, and so that empty data decodes as nil (which is what an omitted
// member re-decodes to). Every member of this type is named "data" at the
// root of its payload; the error says so.
type base64Data []byte

// UnmarshalJSON accepts a base64 string or null.
func (b *base64Data) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		*b = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fieldErr("", "data", RuleType, "expected a base64 string")
	}
	d, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fieldErr("", "data", RuleFormat, "not valid base64")
	}
	if len(d) == 0 {
		d = nil
	}
	*b = d
	return nil
}

package wire

import (
	"bytes"
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
		out := *fe
		out.Field = join(field, fe.Field)
		return &out
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

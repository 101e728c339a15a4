package wire

import (
	"bytes"
	"encoding/json"
)

// NativeJSON is a JSON value this package passes through without reading
// it: a tool's arguments and result, a permission payload, a function's
// parameter schema, harness_config, an error's classification, and every
// other opaque member of every family. It is the one type for them all.
//
// Like json.RawMessage it holds any JSON value, null included, and nil
// encodes as null. Unlike json.RawMessage it decodes in compact form, so
// two documents that differ only in whitespace decode equal, and a decoded
// value survives encoding and decoding again unchanged (the encoder
// compacts raw values anyway, so the encoding is the same as a
// json.RawMessage's). Because it decodes itself, the strict decoder treats
// it as opaque; which values a member admits is the validator's call, made
// with checker.nativeJSON and a jsonShape.
type NativeJSON []byte

// MarshalJSON writes the value as is; nil is null, as for json.RawMessage.
func (n NativeJSON) MarshalJSON() ([]byte, error) {
	if n == nil {
		return []byte("null"), nil
	}
	return n, nil
}

// UnmarshalJSON keeps a compact copy of the value.
func (n *NativeJSON) UnmarshalJSON(b []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		*n = append(NativeJSON(nil), b...) // not JSON: left for Validate
		return nil
	}
	*n = NativeJSON(buf.Bytes())
	return nil
}

// jsonShape is what an opaque member admits.
type jsonShape uint8

const (
	// anyJSON admits any JSON value, null included, or nothing: metadata
	// that must never be a reason to reject a frame.
	anyJSON jsonShape = iota
	// optionalObject admits a JSON object or nothing. A literal null is
	// refused: an optional member is omitted, not nulled.
	optionalObject
	// requiredObject admits only a JSON object; absent and null are both
	// missing.
	requiredObject
)

// nativeJSON checks the opaque member field against shape and reports
// whether it holds a value of that shape (false when it is absent).
//
// A value decoded from the wire has passed checkJSON already; one built in
// Go may not have, and is held to the same rules here (valid JSON, UTF-8,
// no repeated member, bounded nesting), so that what Validate passes can
// always be sent and is never refused by the peer.
func (c *checker) nativeJSON(field string, v NativeJSON, shape jsonShape) bool {
	switch {
	case len(v) == 0:
		if shape == requiredObject {
			c.fail(field, RuleRequired, "a JSON object is required")
		}
		return false
	case c.first != nil:
		return false
	}
	if fe := checkJSON(v, nil); fe != nil {
		c.nested(field, fe)
		return false
	}
	switch {
	case shape == anyJSON:
	case isNull(v):
		if shape == requiredObject {
			c.fail(field, RuleRequired, "a JSON object is required, found null")
		} else {
			c.fail(field, RuleType, "must be a JSON object; omit the member instead of null")
		}
		return false
	case bytes.TrimSpace(v)[0] != '{':
		c.fail(field, RuleType, "must be a JSON object")
		return false
	}
	return c.ok()
}

// Package wire is the one payload schema of the agent-daemon protocol: the
// envelope, every message family's payload type, the capability
// declaration, the admission and opt-in rules, the validators and the
// limits. Core and the Runtime both import it; there is no second schema.
//
// Decoding is strict in both directions: unknown members at any depth,
// repeated members (whatever the escape spelling of their names), missing
// required members, wrong JSON types, strings that are not UTF-8 (unpaired
// surrogates included), nesting deeper than MaxJSONDepth and trailing data
// are rejected, in one pass that stops at the first problem and whose work
// is linear in the frame's size. Nothing is repaired: encoding/json only
// decodes what that pass accepted. Every payload type has a Validate method
// returning a *FieldError that names the message type, the JSON path of
// the offending field and the rule it broke; no validator returns a bare
// bool, and no error text exceeds MaxErrorBytes.
//
// The message catalog (which types exist, their direction, family, the
// identity carried in Envelope.id, their payload type and the machine event
// each one drives) and the capability field list are declared in
// spec/catalog.yaml and spec/capabilities.yaml and generated into
// catalog_gen.go and capabilities_gen.go.
package wire

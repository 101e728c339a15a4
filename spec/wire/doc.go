// Package wire is the one payload schema of the agent-daemon protocol: the
// envelope, every message family's payload type, the capability
// declaration, the admission and opt-in rules, the validators and the
// limits. Core and the Runtime both import it; there is no second schema.
//
// Decoding is strict in both directions: unknown members at any depth,
// missing required members, wrong JSON types and trailing data are
// rejected. Every payload type has a Validate method returning a
// *FieldError that names the message type, the JSON path of the offending
// field and the rule it broke; no validator returns a bare bool.
//
// The message catalog (which types exist, their direction, family, the
// identity carried in Envelope.id, their payload type and the machine event
// each one drives) and the capability field list are declared in
// spec/catalog.yaml and spec/capabilities.yaml and generated into
// catalog_gen.go and capabilities_gen.go.
package wire

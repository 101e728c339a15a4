package wire

// CapabilitySupport says whether a composed Runtime and Harness can perform
// one operation. The zero value is unspecified and invalid: a declaration
// must decide every field explicitly, even for an unavailable Harness.
type CapabilitySupport uint8

const (
	CapabilityUnspecified CapabilitySupport = iota // invalid; never on the wire
	Unsupported
	Supported
)

func (s CapabilitySupport) String() string {
	switch s {
	case Unsupported:
		return "unsupported"
	case Supported:
		return "supported"
	}
	return "unspecified"
}

// Valid reports whether s was decided.
func (s CapabilitySupport) Valid() bool { return s == Supported || s == Unsupported }

// Supports reports whether s is Supported.
func (s CapabilitySupport) Supports() bool { return s == Supported }

// Support converts a bool.
func Support(b bool) CapabilitySupport {
	if b {
		return Supported
	}
	return Unsupported
}

// MarshalJSON writes true or false; an unspecified value cannot be encoded.
func (s CapabilitySupport) MarshalJSON() ([]byte, error) {
	switch s {
	case Supported:
		return []byte("true"), nil
	case Unsupported:
		return []byte("false"), nil
	}
	return nil, fieldErr("", "", RuleRequired, "capability is unspecified")
}

// UnmarshalJSON accepts exactly true or false: null, numbers, strings and
// everything else are rejected without repeating the value.
func (s *CapabilitySupport) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*s = Supported
	case "false":
		*s = Unsupported
	case "null":
		return fieldErr("", "", RuleRequired, "must be true or false, found null")
	default:
		return fieldErr("", "", RuleType, "must be a JSON boolean")
	}
	return nil
}

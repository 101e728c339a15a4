package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// MaxAgentKindBytes bounds an agent kind name in a heartbeat. Kinds are
// short registry identifiers ("claude_code", "codex"); the reference set no
// bound, and agentwire adds one so that a name can be stored and logged
// without truncation surprises.
const MaxAgentKindBytes = 128

// Heartbeat is the Runtime's liveness signal and its capability
// declaration. The daemon sends one as its first frame and then at the
// interval bootstrap returned. It establishes liveness only: it is never
// evidence of execution progress nor a receipt for an earlier frame.
//
// Every heartbeat declares the complete set of supported agent kinds.
// Before the first heartbeat the capabilities of a connection are unknown;
// a kind missing from a heartbeat is not advertised (use AgentKind), and
// neither case permits inferring support. An invalid heartbeat must make
// Core clear the connection's admission snapshot and close its transport.
//
// decision: because an invalid heartbeat is fatal to the connection
// (daemon-protocol.txt:25), a heartbeat is held exactly to what the text
// requires and is otherwise tolerant within bounds. Strict: the capability
// declaration of every kind, complete and exact (:23-25), each kind named
// once with its availability (:14), and the rules of every frame (size,
// UTF-8, no repeated member, bounded nesting). Tolerant: the
// informational members ts, active_requests, daemon_version and version,
// which establish nothing (:15: heartbeats establish liveness only), are
// optional and unchecked beyond their JSON type; and unknown top-level
// members are ignored, so an additive member of a newer reference (E3's
// home_removal, say) does not close the connection. The kind objects and
// capability objects stay closed: they are the declaration.
type Heartbeat struct {
	// TS is the Runtime's clock when it sent the heartbeat. The reference
	// daemon sends Unix seconds, and so does agentwire; the value is
	// informational only (never liveness, ordering or expiry), so any
	// integer is accepted, 0 and absent (read as 0) included.
	TS int64 `json:"ts"`
	// ActiveRequests is the number of executions in flight, as the Runtime
	// reports it: informational only, never evidence of progress. Absent
	// reads as 0.
	ActiveRequests int `json:"active_requests"`
	// DaemonVersion is the Runtime's build version. It is unrelated to the
	// wire Version, which the connection already matched exactly.
	DaemonVersion       string               `json:"daemon_version,omitempty"`
	SupportedAgentKinds []SupportedAgentKind `json:"supported_agent_kinds,omitempty"`
}

// SupportedAgentKind declares one composed Runtime and Harness.
type SupportedAgentKind struct {
	// Kind is the agent kind a prompt request selects; unique per heartbeat.
	Kind string `json:"kind"`
	// Available is false when the adapter exists but cannot run now (its
	// binary is missing, say). Always present on the wire.
	Available *bool `json:"available"`
	// Version is the Harness version, when the adapter knows it.
	Version string `json:"version,omitempty"`
	// Capabilities is what the composition can do, independently of
	// Available. Required and complete, even for an unavailable Harness.
	Capabilities AgentKindCapabilities `json:"capabilities"`
}

// IsAvailable reports whether the kind is declared available.
func (k SupportedAgentKind) IsAvailable() bool { return k.Available != nil && *k.Available }

// AgentKind returns the declaration of kind in this heartbeat. ok is false
// when the heartbeat does not list the kind: such a kind is not advertised,
// and nothing about it may be inferred from other kinds, earlier
// heartbeats or the kind's name. A listed kind may still be unavailable
// (see SupportedAgentKind.IsAvailable).
func (h Heartbeat) AgentKind(kind string) (SupportedAgentKind, bool) {
	for _, k := range h.SupportedAgentKinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return SupportedAgentKind{}, false
}

// Validate checks a heartbeat with paths relative to the payload: the
// first kind that breaks a rule is named by index, down to the capability
// field ("supported_agent_kinds[1].capabilities.streaming").
func (h Heartbeat) Validate() error {
	c := newChecker("")
	seen := make(map[string]bool, len(h.SupportedAgentKinds))
	for i, k := range h.SupportedAgentKinds {
		p := "supported_agent_kinds[" + strconv.Itoa(i) + "]"
		c.id(p+".kind", k.Kind, MaxAgentKindBytes)
		if seen[k.Kind] {
			c.fail(p+".kind", RuleConflict, "kind "+quote(k.Kind)+" is declared twice")
		}
		seen[k.Kind] = true
		c.requiredBool(p+".available", k.Available)
		c.nested(p+".capabilities", k.Capabilities.Validate())
	}
	return c.err()
}

// UnmarshalJSON decodes a heartbeat: the declaration strictly, the rest
// tolerantly (see the type's decision). It is hand-written for two
// reasons. First, required members are told apart from zero values: a kind
// must carry its availability and a capabilities object. Second, errors
// keep their full path: encoding/json hands the
// error of a nested decoder (the capability codec reports "streaming")
// back without the array index or the enclosing members, and decodeStrict's
// locator cannot look inside a type that decodes itself, so each kind is
// decoded here and its errors are re-rooted at
// "supported_agent_kinds[i].capabilities". Paths are relative to the
// payload, like every decoder in this package.
func (h *Heartbeat) UnmarshalJSON(data []byte) error {
	var out Heartbeat
	err := eachMember(data, func(name string, value []byte) error {
		switch name {
		case "ts":
			return heartbeatScalar(name, value, &out.TS, false)
		case "active_requests":
			return heartbeatScalar(name, value, &out.ActiveRequests, false)
		case "daemon_version":
			return heartbeatScalar(name, value, &out.DaemonVersion, false)
		case "supported_agent_kinds":
			kinds, err := heartbeatKinds(value)
			out.SupportedAgentKinds = kinds
			return err
		}
		return nil // an additive member: ignored (see the type's decision)
	})
	if err != nil {
		return err
	}
	*h = out
	return nil
}

// heartbeatKinds decodes the supported_agent_kinds array element by
// element. null means absent, as for any optional array.
func heartbeatKinds(value []byte) ([]SupportedAgentKind, error) {
	const field = "supported_agent_kinds"
	if isNull(value) {
		return nil, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(value, &elems); err != nil {
		return nil, fieldErr("", field, RuleType, "must be a JSON array")
	}
	if len(elems) == 0 {
		return nil, nil // omitempty: an empty list is not written back
	}
	kinds := make([]SupportedAgentKind, 0, len(elems))
	for i, elem := range elems {
		p := field + "[" + strconv.Itoa(i) + "]"
		k, err := heartbeatKind(elem)
		if err != nil {
			return nil, relabel(err, p)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// heartbeatKind decodes one kind with paths relative to it.
func heartbeatKind(data []byte) (SupportedAgentKind, error) {
	var k SupportedAgentKind
	hasCaps := false
	err := eachMember(data, func(name string, value []byte) error {
		switch name {
		case "kind":
			return heartbeatScalar(name, value, &k.Kind, false)
		case "available":
			return heartbeatScalar(name, value, &k.Available, true)
		case "version":
			return heartbeatScalar(name, value, &k.Version, false)
		case "capabilities":
			hasCaps = true
			if err := k.Capabilities.UnmarshalJSON(value); err != nil {
				return relabel(err, name)
			}
			return nil
		}
		return fieldErr("", cutName(name), RuleUnknownField, "unknown member")
	})
	if err != nil {
		return k, err
	}
	if !hasCaps {
		return k, fieldErr("", "capabilities", RuleRequired, "every kind needs a complete capability declaration")
	}
	return k, nil
}

// heartbeatScalar decodes one member into dst, naming field in any error.
// A null is rejected as missing when the member is required and otherwise
// means absent.
func heartbeatScalar(field string, value []byte, dst any, required bool) error {
	if isNull(value) {
		if required {
			return fieldErr("", field, RuleRequired, "required; found null")
		}
		return nil
	}
	return heartbeatValue(field, value, dst)
}

// heartbeatValue decodes one member value into dst with encoding/json's
// semantics, strictly, naming field in any error.
func heartbeatValue(field string, value []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError("", field, err)
	}
	return nil
}

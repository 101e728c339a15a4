package wire

import (
	"errors"
	"strconv"
	"strings"
)

// This file holds Core's admission rules: which capabilities a Harness must
// declare before Core lets it execute a Turn with a given Environment,
// Agent and input. Core evaluates them when it selects a device and again
// at the final check before it claims the Turn, always against the
// declaration the selected device last sent. The rules only say what a
// request needs; whether the engine profile qualifies a public feature at
// all is decided before this point, by Core.
//
// Four capabilities have no row here on purpose. permissions and
// workspace_authoring gate operations inside the Runtime (permission
// decisions, and the daemon's authoring command), so the Runtime checks
// them when the operation happens, not Core at admission. usage and resume
// are declared for information only: Core has no admission rule for them,
// so a Harness without them is still admitted.

// EnvironmentType is the type of the Environment a Session is bound to. It
// decides whether the Harness must run without an execution environment or
// against a bound local one.
type EnvironmentType string

const (
	// EnvironmentTypeNone runs with no execution environment at all.
	EnvironmentTypeNone EnvironmentType = "none"
	// EnvironmentTypeOpenAIHosted runs against a hosted local Environment.
	EnvironmentTypeOpenAIHosted EnvironmentType = "openai_hosted"
	// EnvironmentTypeSelfHosted runs against a user-owned local Environment.
	EnvironmentTypeSelfHosted EnvironmentType = "self_hosted"
)

// environmentTypes lists the valid types in the order errors name them.
var environmentTypes = []string{
	string(EnvironmentTypeNone),
	string(EnvironmentTypeOpenAIHosted),
	string(EnvironmentTypeSelfHosted),
}

// ParseEnvironmentType accepts exactly one of the three type names. The
// error is a *FieldError with an empty Field (the caller knows where the
// value came from): RuleRequired for a blank value, RuleEnum otherwise.
func ParseEnvironmentType(s string) (EnvironmentType, error) {
	t := EnvironmentType(s)
	if fe := t.validate(); fe != nil {
		return "", fe
	}
	return t, nil
}

// Validate reports whether t is one of the three types, as a *FieldError.
func (t EnvironmentType) Validate() error { return asError(t.validate()) }

func (t EnvironmentType) validate() *FieldError {
	c := newChecker("")
	c.oneOf("", string(t), environmentTypes...)
	return c.first
}

// Local reports whether t binds a local Environment (openai_hosted or
// self_hosted). It is false for none and for an invalid type.
func (t EnvironmentType) Local() bool {
	return t == EnvironmentTypeOpenAIHosted || t == EnvironmentTypeSelfHosted
}

// EngineProfile is the part of a Harness's engine profile that admission
// reads: the controls the profile declares. A declared control is one Core
// will set on every Run, so the Runtime must be able to honour it.
type EngineProfile struct {
	WebSearchControl bool // the profile declares the web search control
	TextVerbosity    bool // the profile declares the text verbosity control
}

// AgentFeatures is the part of an Agent's configuration that admission
// reads. Callers map their Agent model onto it; nothing here is on the wire.
type AgentFeatures struct {
	// JSONSchemaOutput is true when the Agent requests json_schema output.
	JSONSchemaOutput bool
	// MultiAgentEnabled is the Agent's multi_agent.enabled. Both values
	// require a capability (observing subagents, or switching them off),
	// so the zero value never admits more than an explicit choice would.
	MultiAgentEnabled bool
	// ToolSearch is true when the Agent enables tool search.
	ToolSearch bool
	// DisableProgrammaticToolCalling is true only when the Agent disables
	// programmatic tool calling explicitly; leaving it unset requires
	// nothing.
	DisableProgrammaticToolCalling bool
	// Functions are the function tools the Agent declares.
	Functions []AgentFunction
	// MCPHTTPServers are the HTTP MCP servers the Agent declares.
	MCPHTTPServers []AgentMCPServer
}

// AgentFunction is one function tool of an Agent, as admission sees it.
type AgentFunction struct {
	// DeferLoading is true when the function is loaded through tool search
	// instead of up front.
	DeferLoading bool
}

// AgentMCPServer is one HTTP MCP server of an Agent, as admission sees it.
type AgentMCPServer struct {
	// Required is true when the Run must fail if the server is unavailable.
	Required bool
	// VaultCredential is true when a Vault credential is selected for the
	// server, so the Runtime must pass a bearer token to it.
	VaultCredential bool
}

// AdmissionInput is everything Core's admission rules read about one Turn
// (or one idle Files read). Each field maps to one or more rows of the
// protocol's admission table; see RequiredCapabilities.
type AdmissionInput struct {
	// Environment is the type of the Session's Environment; required.
	Environment EnvironmentType
	// Profile is the selected Harness's engine profile.
	Profile EngineProfile
	// Agent is the Agent's configuration.
	Agent AgentFeatures
	// Input is the Turn's ordered input; an image in any message requires
	// message_images.
	Input MessageInput
	// FunctionResultImages is true when a function result of the Turn
	// carries an image.
	FunctionResultImages bool
	// NativeSessionMissing is true when the Session has a started Turn but
	// no recorded native Session ID, so the Runtime must recover it.
	NativeSessionMissing bool
	// IdleFilesRead is true when an idle Files directory read needs a
	// read-only preparation. The protocol text states the always row for
	// executions and is silent about idle reads; they are held to it too,
	// since a Harness that fails it cannot run any Turn for the Session
	// whose files are read, and requiring more can only refuse, never
	// admit something the table forbids.
	IdleFilesRead bool
}

// RequiredCapabilities applies the admission table to in and returns every
// capability the selected Harness must support. The result always holds
// the rows that apply to every execution; each other row adds its
// capabilities when its condition holds:
//
//	always                         streaming, steering, durable_turns, durable_input_receipts,
//	                               preparation, execution_controls, tool_observations
//	environment none               environment_none
//	environment openai_hosted or   local_environment, workspace_read_preparation,
//	self_hosted                    workspace_output_export
//	idle Files read                workspace_read_preparation
//	native Session ID missing      native_session_recovery
//	profile declares a control     web_search_control, text_verbosity (each its own)
//	json_schema output             structured_output and message_items
//	multi_agent.enabled true       subagent_observations
//	multi_agent.enabled false      subagent_control
//	tool search, deferred loading  tool_search
//	explicit programmatic disable  programmatic_tool_calling_disable
//	function tools declared        function_tools
//	image in a message             message_images
//	image in a function result     function_result_images
//	HTTP MCP servers declared      mcp_http_tools
//	one of them required           mcp_http_required
//	Vault credential for one       mcp_http_bearer_auth
//
// The always row also requires the Harness to be available; Missing and
// Check enforce that. The only error is a *FieldError on "environment"
// when in.Environment is not a valid type: an unknown type must not be
// admitted with fewer requirements than a known one.
func RequiredCapabilities(in AdmissionInput) (CapabilitySet, error) {
	var s CapabilitySet
	if fe := in.Environment.validate(); fe != nil {
		return s, fe.under("", "environment")
	}
	for _, r := range admissionRows {
		if r.when(in) {
			for _, i := range r.adds {
				s.has[i] = true
			}
		}
	}
	return s, nil
}

// admissionRow is one row of the table: a condition and the capabilities
// it adds, as indexes into CapabilityFields.
type admissionRow struct {
	when func(AdmissionInput) bool
	adds []int
}

// capabilitySelector picks one field of a declaration. Rows name their
// capabilities through selectors rather than strings, so a renamed or
// removed field fails to compile instead of silently requiring nothing.
type capabilitySelector func(*AgentKindCapabilities) *CapabilitySupport

// admissionRows is the table, resolved to field indexes once.
var admissionRows = []admissionRow{
	admissionRule(func(AdmissionInput) bool { return true },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.Streaming },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.Steering },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.DurableTurns },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.DurableInputReceipts },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.Preparation },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.ExecutionControls },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.ToolObservations },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Environment == EnvironmentTypeNone },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.EnvironmentNone },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Environment.Local() },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.LocalEnvironment },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.WorkspaceReadPreparation },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.WorkspaceOutputExport },
	),
	admissionRule(func(in AdmissionInput) bool { return in.IdleFilesRead },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.WorkspaceReadPreparation },
	),
	admissionRule(func(in AdmissionInput) bool { return in.NativeSessionMissing },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.NativeSessionRecovery },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Profile.WebSearchControl },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.WebSearchControl },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Profile.TextVerbosity },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.TextVerbosity },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Agent.JSONSchemaOutput },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.StructuredOutput },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.MessageItems },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Agent.MultiAgentEnabled },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.SubagentObservations },
	),
	admissionRule(func(in AdmissionInput) bool { return !in.Agent.MultiAgentEnabled },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.SubagentControl },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Agent.ToolSearch || in.Agent.defersLoading() },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.ToolSearch },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Agent.DisableProgrammaticToolCalling },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.ProgrammaticToolCallingDisable },
	),
	admissionRule(func(in AdmissionInput) bool { return len(in.Agent.Functions) > 0 },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.FunctionTools },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Input.HasImage() },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.MessageImages },
	),
	admissionRule(func(in AdmissionInput) bool { return in.FunctionResultImages },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.FunctionResultImages },
	),
	admissionRule(func(in AdmissionInput) bool { return len(in.Agent.MCPHTTPServers) > 0 },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.MCPHTTPTools },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Agent.anyMCPRequired() },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.MCPHTTPRequired },
	),
	admissionRule(func(in AdmissionInput) bool { return in.Agent.anyMCPVaultCredential() },
		func(c *AgentKindCapabilities) *CapabilitySupport { return &c.MCPHTTPBearerAuth },
	),
}

// admissionRule resolves each selector to its index in CapabilityFields.
// A selector that matches no entry means the generated table lost a field
// of the struct: a programming error, reported when the package loads.
func admissionRule(when func(AdmissionInput) bool, fields ...capabilitySelector) admissionRow {
	row := admissionRow{when: when}
	for _, sel := range fields {
		row.adds = append(row.adds, capabilityIndexOf(sel))
	}
	return row
}

func capabilityIndexOf(sel capabilitySelector) int {
	var probe AgentKindCapabilities
	want := sel(&probe)
	for i, f := range CapabilityFields() {
		if f.Of(&probe) == want {
			return i
		}
	}
	panic("wire: admission rule names a capability field missing from CapabilityFields (capabilities_gen.go is out of date)")
}

func (a AgentFeatures) defersLoading() bool {
	for _, f := range a.Functions {
		if f.DeferLoading {
			return true
		}
	}
	return false
}

func (a AgentFeatures) anyMCPRequired() bool {
	for _, s := range a.MCPHTTPServers {
		if s.Required {
			return true
		}
	}
	return false
}

func (a AgentFeatures) anyMCPVaultCredential() bool {
	for _, s := range a.MCPHTTPServers {
		if s.VaultCredential {
			return true
		}
	}
	return false
}

// RequirementAvailable is the name Missing reports when the Harness is not
// available: it is the heartbeat member that says so, not a capability.
const RequirementAvailable = "available"

// CapabilitySet is a set of capability fields, kept in spec order (the
// order of CapabilityFields). The zero value is empty. It is comparable, so
// two sets can be compared with ==.
type CapabilitySet struct {
	has [NumCapabilities]bool
}

// capabilityIndex maps each JSON name to its index in CapabilityFields.
var capabilityIndex = func() map[string]int {
	m := make(map[string]int, NumCapabilities)
	for i, f := range CapabilityFields() {
		m[f.Name] = i
	}
	return m
}()

// NewCapabilitySet builds a set from JSON names. An unknown name is a
// *FieldError on "[i]" (its position in names) with RuleEnum.
func NewCapabilitySet(names ...string) (CapabilitySet, error) {
	var s CapabilitySet
	for i, n := range names {
		idx, ok := capabilityIndex[n]
		if !ok {
			return CapabilitySet{}, fieldErr("", "["+strconv.Itoa(i)+"]", RuleEnum, quote(n)+" is not a capability")
		}
		s.has[idx] = true
	}
	return s, nil
}

// Has reports whether the set holds the capability with that JSON name.
func (s CapabilitySet) Has(name string) bool {
	i, ok := capabilityIndex[name]
	return ok && s.has[i]
}

// Len is the number of capabilities in the set.
func (s CapabilitySet) Len() int {
	n := 0
	for _, h := range s.has {
		if h {
			n++
		}
	}
	return n
}

// Names lists the set's JSON names in spec order; nil when empty.
func (s CapabilitySet) Names() []string {
	var out []string
	for i, f := range CapabilityFields() {
		if s.has[i] {
			out = append(out, f.Name)
		}
	}
	return out
}

// Union returns the capabilities in s or o.
func (s CapabilitySet) Union(o CapabilitySet) CapabilitySet {
	for i := range s.has {
		s.has[i] = s.has[i] || o.has[i]
	}
	return s
}

func (s CapabilitySet) String() string {
	return "{" + strings.Join(s.Names(), ", ") + "}"
}

// Missing lists what keeps decl from being admitted for s: first
// RequirementAvailable when the Harness is not available (the always row
// requires that), then every capability in s that decl does not support,
// in spec order. A field left unspecified counts as not supported. An
// empty result means the declaration qualifies; use Check to also reject
// an incomplete declaration outright.
func (s CapabilitySet) Missing(decl AgentKindCapabilities, available bool) []string {
	var out []string
	if !available {
		out = append(out, RequirementAvailable)
	}
	for i, f := range CapabilityFields() {
		if s.has[i] && !f.Of(&decl).Supports() {
			out = append(out, f.Name)
		}
	}
	return out
}

// ErrNotAdmitted matches an *AdmissionError.
var ErrNotAdmitted = errors.New("wire: not admitted")

// AdmissionError says why a declaration was not admitted: the Harness is
// unavailable, or it lacks required capabilities, or both.
type AdmissionError struct {
	Unavailable bool
	Unsupported []string // JSON names, in spec order
}

func (e *AdmissionError) Error() string {
	var parts []string
	if e.Unavailable {
		parts = append(parts, "the Harness is not available")
	}
	if len(e.Unsupported) > 0 {
		parts = append(parts, "unsupported capabilities: "+strings.Join(e.Unsupported, ", "))
	}
	return "wire: not admitted: " + strings.Join(parts, "; ")
}

// Is matches ErrNotAdmitted.
func (e *AdmissionError) Is(target error) bool { return target == ErrNotAdmitted }

// Check admits decl for s or says why not. An incomplete declaration is
// invalid whatever s requires and fails with decl's own *FieldError; an
// unavailable Harness or a missing capability fails with *AdmissionError.
func (s CapabilitySet) Check(decl AgentKindCapabilities, available bool) error {
	if err := decl.Validate(); err != nil {
		return err
	}
	missing := s.Missing(decl, available)
	if len(missing) == 0 {
		return nil
	}
	e := &AdmissionError{Unavailable: !available}
	if e.Unavailable {
		missing = missing[1:]
	}
	if len(missing) > 0 {
		e.Unsupported = missing
	}
	return e
}

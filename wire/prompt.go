package wire

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The prompt request is the execution configuration of a Run. It travels
// in two frames: whole, as prompt_request (the direct path, which carries
// the Run ID and input itself), and as the configuration of
// execution_prepare (the admission path, where execution_start supplies the
// Run ID and input later). Both use one type and one validator, run with
// the profile of the frame that carries it, so the two paths cannot drift.

// Limits of the prompt request that limits.go does not name.
const (
	// MaxFunctionNameBytes bounds a function tool name, which must match
	// [A-Za-z0-9_-]+: the common denominator of the native tool-name
	// grammars, so a name valid on the wire is valid for every Harness.
	MaxFunctionNameBytes = 64
	// MaxCapabilitySources bounds the skills, the plugins and the
	// directories of capability_sources, each on its own (the reference
	// Runtime's installation bound).
	MaxCapabilitySources = 50
	// MaxAgentSessionIDBytes bounds a native Session ID. Native IDs are
	// engine-defined, so the bound is generous; it only stops a peer from
	// making the Runtime carry an arbitrary blob as an identity.
	MaxAgentSessionIDBytes = 256
	// MaxShutdownReasonBytes bounds the diagnostic reason of device_shutdown.
	MaxShutdownReasonBytes = 256
)

// AgentStateKeyPrefix starts every agent_state_key. The key is the
// Runtime's stable, per-Session native state directory; execution_prepare
// requires exactly AgentStateKeyPrefix + session_id, so a configuration
// can never point at another Session's native state.
const AgentStateKeyPrefix = "agents-api-"

// AgentStateKey returns the state key of a Session.
func AgentStateKey(sessionID string) string { return AgentStateKeyPrefix + sessionID }

// Values of execution_controls.
const (
	WebSearchDisabled = "disabled" // the only mode Core sends
	WebSearchCached   = "cached"
	WebSearchLive     = "live"

	TextVerbosityLow    = "low"
	TextVerbosityMedium = "medium" // Core's default
	TextVerbosityHigh   = "high"

	// OutputFormatJSONSchema is the only structured output format: Core
	// sends output_format only for an Agent that requests json_schema.
	OutputFormatJSONSchema = "json_schema"
)

// Connection origins of an HTTP MCP server. There is no default: a missing
// or unknown origin rejects the request, because guessing would move the
// outbound connection (and its credential) to a host nobody chose.
const (
	// MCPOriginService connects from the service side; the Run must have
	// no execution environment (disable_execution_environment, and no
	// local_environment).
	MCPOriginService = "service"
	// MCPOriginEnvironment connects from the bound local Environment; the
	// Run must have a local_environment.
	MCPOriginEnvironment = "environment"
)

// CapabilitySourceInline is the only source type of a skill or plugin.
const CapabilitySourceInline = "inline"

// PromptRequest is the execution configuration (PromptRequestPayload, E2
// era). Booleans are opt-ins: absent means false, and a request without an
// opt-in keeps the frames and fields it had without it, so they are
// omitted when false. See ApplyOptIns for what Core sets on every Run.
//
// As prompt_request it needs run_id and input. As the configuration of
// execution_prepare it has neither (nor conversation_id or
// workspace_authoring), its agent_state_key is bound to the Session and
// strict_resume is set; with workspace_read_only it is the read-only
// profile, which carries only the Environment binding and the state key.
type PromptRequest struct {
	AgentKind string `json:"agent_kind"`
	// MaxConcurrentSubagents bounds concurrent child agents when subagents
	// are enabled; nil leaves the Harness default.
	MaxConcurrentSubagents *int   `json:"max_concurrent_subagents,omitempty"`
	ConversationID         string `json:"conversation_id,omitempty"`
	RunID                  string `json:"run_id,omitempty"`
	// Input is the Run's ordered input (prompt_request only).
	Input        MessageInput  `json:"input,omitempty"`
	AgentOptions *AgentOptions `json:"agent_options,omitempty"`
	// ExecutionControls are the engine-neutral controls; the adapter owns
	// their native names.
	ExecutionControls *ExecutionControls `json:"execution_controls,omitempty"`
	// MCPHTTPServers: nil leaves the MCP configuration unchanged; a
	// pointer to an empty list declares explicitly that there is none.
	MCPHTTPServers *[]MCPHTTPServer `json:"mcp_http_servers,omitempty"`
	// LocalEnvironment is the exact Environment binding (openai_hosted and
	// self_hosted). There is no working directory on the wire: the Runtime
	// checks its own workspace against the binding.
	LocalEnvironment *LocalEnvironment `json:"local_environment,omitempty"`
	// AgentSessionID is the native Session to resume, when one is recorded.
	AgentSessionID string `json:"agent_session_id,omitempty"`
	AgentStateKey  string `json:"agent_state_key,omitempty"`
	// WorkspaceReadOnly selects the read-only preparation profile, which
	// can never be started.
	WorkspaceReadOnly  bool `json:"workspace_read_only,omitempty"`
	WorkspaceAuthoring bool `json:"workspace_authoring,omitempty"`
	// ReleaseOnCompletion closes the native writer before done is sent.
	ReleaseOnCompletion bool `json:"release_on_completion,omitempty"`
	StrictResume        bool `json:"strict_resume,omitempty"`
	// RequireExistingNativeSession makes recovery fail rather than start a
	// new native root when no native Session ID was recorded.
	RequireExistingNativeSession bool           `json:"require_existing_native_session,omitempty"`
	ObserveMessages              bool           `json:"observe_messages,omitempty"`
	ObserveTools                 bool           `json:"observe_tools,omitempty"`
	ObserveToolObservations      bool           `json:"observe_tool_observations,omitempty"`
	ObserveSubagentIdentities    bool           `json:"observe_subagent_identities,omitempty"`
	FunctionTools                []FunctionTool `json:"function_tools,omitempty"`
	// ToolSearch enables search over deferred functions; it needs at least
	// one function with defer_loading, and a deferred function needs it.
	ToolSearch                  bool `json:"tool_search,omitempty"`
	DisableExecutionEnvironment bool `json:"disable_execution_environment,omitempty"`
	DisableSubagents            bool `json:"disable_subagents,omitempty"`
}

// AgentOptions is the E2 agent_options object.
//
// decision: the E2 reference typed agent_options as an open map whose keys
// only the adapter interpreted; later it closed the map to model,
// system_prompt, model_provider and harness_config before replacing it
// with typed fields. agentwire takes the closed form as a typed object: an
// open map would defeat strict decoding, and a key no adapter honours
// would be dropped silently. Unknown keys are rejected.
type AgentOptions struct {
	// Model is the model name; when present it must not be blank.
	Model *string `json:"model,omitempty"`
	// SystemPrompt is the Agent's instructions; "" is an explicit empty
	// prompt, absent leaves the Harness default.
	SystemPrompt *string `json:"system_prompt,omitempty"`
	// ModelProvider is the provider configuration, a JSON object the
	// adapter interprets.
	ModelProvider NativeJSON `json:"model_provider,omitempty"`
	// HarnessConfig holds native model parameters: a JSON object of at most
	// MaxHarnessConfigBytes (compact encoding). The selected Harness owns
	// its members.
	HarnessConfig NativeJSON `json:"harness_config,omitempty"`
}

// ExecutionControls are engine-neutral controls; both values are required
// whenever the object is sent.
type ExecutionControls struct {
	WebSearch     string `json:"web_search"`
	TextVerbosity string `json:"text_verbosity"`
	// DisableProgrammaticToolCalling is set only when the Agent disables
	// programmatic tool calling explicitly; absent keeps the native default.
	DisableProgrammaticToolCalling bool          `json:"disable_programmatic_tool_calling,omitempty"`
	OutputFormat                   *OutputFormat `json:"output_format,omitempty"`
}

// OutputFormat asks for structured output; Schema is the Agent's JSON
// Schema object, passed to the adapter unchanged.
type OutputFormat struct {
	Type   string     `json:"type"`
	Schema NativeJSON `json:"schema"`
}

// MCPHTTPServer is one HTTP MCP server declared by the Agent. It is private
// request data (it may carry a bearer token): never log or persist it.
type MCPHTTPServer struct {
	ConnectionOrigin string `json:"connection_origin"`
	ServerLabel      string `json:"server_label"`
	// ServerURL is an absolute http or https URL without user information:
	// credentials never travel in a URL.
	ServerURL string `json:"server_url"`
	// AllowedTools: null allows every tool the server offers; a list
	// allows exactly those names (an empty list allows none). The member
	// is always encoded. A missing member decodes like null.
	AllowedTools *[]string `json:"allowed_tools"`
	// Required fails the Run when the server is unavailable.
	Required bool `json:"required,omitempty"`
	// BearerToken is a transient Vault credential; when present it must
	// not be blank. Errors never repeat it.
	BearerToken *string `json:"bearer_token,omitempty"`
}

// LocalEnvironment is the exact Environment binding of a Run.
type LocalEnvironment struct {
	// ID is the Environment ID, a canonical non-nil UUID (the identity
	// runtime_prepare initialized).
	ID string `json:"id"`
	// CapabilitySources are the frozen skill, plugin and directory sources
	// of the Environment; absent and {} both mean none.
	CapabilitySources *CapabilitySources `json:"capability_sources,omitempty"`
	// ToolEnvironment consumes the confidential initialization Core
	// completed for the Environment.
	ToolEnvironment bool `json:"tool_environment,omitempty"`
}

// CapabilitySources describes frozen sources; their contents are observed
// by the Runtime after setup, never sent here.
type CapabilitySources struct {
	Skills      []CapabilitySource `json:"skills,omitempty"`
	Plugins     []CapabilitySource `json:"plugins,omitempty"`
	Directories []string           `json:"directories,omitempty"`
}

// CapabilitySource is the portable metadata of one skill or plugin. The
// shared Skill and Plugin parsers own the name grammar.
type CapabilitySource struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// FunctionTool is one function the Agent declares; the Runtime calls it
// through function_call. Parameters is its JSON Schema object.
type FunctionTool struct {
	Name         string     `json:"name"`
	Description  string     `json:"description"`
	Parameters   NativeJSON `json:"parameters"`
	DeferLoading bool       `json:"defer_loading,omitempty"`
}

// promptProfile selects which frame a PromptRequest is validated for.
type promptProfile uint8

const (
	promptDirect   promptProfile = iota // prompt_request
	promptPrepared                      // execution_prepare, executor profile
	promptReadOnly                      // execution_prepare with workspace_read_only
)

// Validate checks p as a prompt_request payload.
func (p PromptRequest) Validate() error { return asError(p.validate(promptDirect, "")) }

// validate checks every rule of the profile in field order. sessionID is
// the execution_prepare session_id (prepared profiles only).
func (p PromptRequest) validate(profile promptProfile, sessionID string) *FieldError {
	c := newChecker("")
	direct, readOnly := profile == promptDirect, profile == promptReadOnly
	const notReadOnly = "the read-only profile carries only the Environment binding and the state key"

	c.id("agent_kind", p.AgentKind, MaxIDBytes)

	if n := p.MaxConcurrentSubagents; n != nil {
		switch {
		case readOnly:
			c.forbidden("max_concurrent_subagents", true, notReadOnly)
		case *n < 1:
			c.fail("max_concurrent_subagents", RuleRange, "must be at least 1")
		case p.DisableSubagents:
			c.fail("max_concurrent_subagents", RuleConflict, "a subagent limit needs subagents; disable_subagents is set")
		}
	}

	if direct {
		if p.ConversationID != "" {
			c.id("conversation_id", p.ConversationID, MaxIDBytes)
		}
		c.id("run_id", p.RunID, MaxIDBytes)
		c.nested("input", p.Input.validate())
	} else {
		c.forbidden("conversation_id", p.ConversationID != "", "execution_prepare carries no conversation ID")
		c.forbidden("run_id", p.RunID != "", "execution_prepare carries no Run ID; execution_start supplies it")
		c.forbidden("input", p.Input != nil, "execution_prepare carries no input; execution_start supplies it")
	}

	if p.AgentOptions != nil {
		c.forbidden("agent_options", readOnly, notReadOnly)
		c.nested("agent_options", p.AgentOptions.validate())
	}
	if p.ExecutionControls != nil {
		c.forbidden("execution_controls", readOnly, notReadOnly)
		c.nested("execution_controls", p.ExecutionControls.validate())
	}
	if p.MCPHTTPServers != nil {
		c.forbidden("mcp_http_servers", readOnly, notReadOnly)
		p.validateMCP(c)
	}

	if p.LocalEnvironment == nil {
		if readOnly {
			c.fail("local_environment", RuleRequired, "the read-only profile needs the bound Environment")
		}
	} else {
		c.nested("local_environment", p.LocalEnvironment.validate())
	}

	if p.AgentSessionID != "" {
		c.forbidden("agent_session_id", readOnly, notReadOnly)
		c.id("agent_session_id", p.AgentSessionID, MaxAgentSessionIDBytes)
	}

	if direct {
		if p.AgentStateKey != "" {
			rest, ok := strings.CutPrefix(p.AgentStateKey, AgentStateKeyPrefix)
			if !ok || validSessionID(rest) != nil {
				c.fail("agent_state_key", RuleFormat, "must be "+AgentStateKeyPrefix+" followed by a Session ID")
			}
		}
	} else {
		switch {
		case p.AgentStateKey == "":
			c.fail("agent_state_key", RuleRequired, "execution_prepare needs the Session's state key")
		case p.AgentStateKey != AgentStateKey(sessionID):
			c.fail("agent_state_key", RuleConflict, "must be "+AgentStateKeyPrefix+" followed by session_id")
		}
	}

	c.forbidden("workspace_read_only", direct && p.WorkspaceReadOnly, "a read-only preparation can never start a Run; send it as execution_prepare")
	c.forbidden("workspace_authoring", !direct && p.WorkspaceAuthoring, "execution_prepare does not run the authoring command")
	if readOnly && !p.ReleaseOnCompletion {
		c.fail("release_on_completion", RuleRequired, "the read-only profile must release on completion")
	}
	if !direct && !p.StrictResume {
		c.fail("strict_resume", RuleRequired, "execution_prepare must resume strictly (true)")
	}

	if p.RequireExistingNativeSession {
		c.forbidden("require_existing_native_session", readOnly, notReadOnly)
		c.forbidden("require_existing_native_session", p.AgentSessionID != "", "recovery applies only without a recorded agent_session_id")
	}
	c.forbidden("observe_messages", readOnly && p.ObserveMessages, notReadOnly)
	c.forbidden("observe_tools", readOnly && p.ObserveTools, notReadOnly)
	c.forbidden("observe_tool_observations", readOnly && p.ObserveToolObservations, notReadOnly)
	if p.ObserveSubagentIdentities {
		c.forbidden("observe_subagent_identities", readOnly, notReadOnly)
		if p.DisableSubagents {
			c.fail("observe_subagent_identities", RuleConflict, "cannot observe subagents that disable_subagents switches off")
		}
	}

	deferred := false
	if p.FunctionTools != nil {
		c.forbidden("function_tools", readOnly, notReadOnly)
		seen := make(map[string]bool, len(p.FunctionTools))
		for i, f := range p.FunctionTools {
			fp := "function_tools[" + strconv.Itoa(i) + "]"
			c.nested(fp, f.validate())
			if seen[f.Name] {
				c.fail(fp+".name", RuleConflict, "function name "+quote(f.Name)+" is declared twice")
			}
			seen[f.Name] = true
			if f.DeferLoading && !p.ToolSearch {
				c.fail(fp+".defer_loading", RuleConflict, "a deferred function needs tool_search")
			}
			deferred = deferred || f.DeferLoading
		}
	}
	if p.ToolSearch {
		c.forbidden("tool_search", readOnly, notReadOnly)
		if !deferred {
			c.fail("tool_search", RuleConflict, "tool search needs at least one function with defer_loading")
		}
	}
	if p.DisableExecutionEnvironment {
		c.forbidden("disable_execution_environment", readOnly, notReadOnly)
		if p.LocalEnvironment != nil {
			c.fail("disable_execution_environment", RuleConflict, "conflicts with local_environment: a Run either has the bound Environment or none")
		}
	}
	c.forbidden("disable_subagents", readOnly && p.DisableSubagents, notReadOnly)
	return c.first
}

// validateMCP checks each server, its connection origin against the
// request's environment, and that labels are unique.
func (p PromptRequest) validateMCP(c *checker) {
	seen := map[string]bool{}
	for i, s := range *p.MCPHTTPServers {
		sp := "mcp_http_servers[" + strconv.Itoa(i) + "]"
		switch s.ConnectionOrigin {
		case MCPOriginService:
			if !p.DisableExecutionEnvironment || p.LocalEnvironment != nil {
				c.fail(sp+".connection_origin", RuleConflict, "service origin needs disable_execution_environment and no local_environment")
			}
		case MCPOriginEnvironment:
			if p.DisableExecutionEnvironment || p.LocalEnvironment == nil {
				c.fail(sp+".connection_origin", RuleConflict, "environment origin needs a local_environment")
			}
		}
		c.nested(sp, s.validate())
		if seen[s.ServerLabel] {
			c.fail(sp+".server_label", RuleConflict, "server label "+quote(s.ServerLabel)+" is declared twice")
		}
		seen[s.ServerLabel] = true
	}
}

func (o AgentOptions) validate() *FieldError {
	c := newChecker("")
	if o.Model != nil {
		c.required("model", *o.Model)
	}
	c.nativeJSON("model_provider", o.ModelProvider, optionalObject)
	if c.nativeJSON("harness_config", o.HarnessConfig, optionalObject) {
		// A decoded value is compact already; one built in Go may not be,
		// and whitespace is not what the bound limits.
		var b bytes.Buffer
		if json.Compact(&b, o.HarnessConfig) == nil && b.Len() > MaxHarnessConfigBytes {
			c.fail("harness_config", RuleTooLarge, "longer than "+strconv.Itoa(MaxHarnessConfigBytes)+" bytes encoded")
		}
	}
	return c.first
}

func (e ExecutionControls) validate() *FieldError {
	c := newChecker("")
	c.oneOf("web_search", e.WebSearch, WebSearchDisabled, WebSearchCached, WebSearchLive)
	c.oneOf("text_verbosity", e.TextVerbosity, TextVerbosityLow, TextVerbosityMedium, TextVerbosityHigh)
	if f := e.OutputFormat; f != nil {
		c.oneOf("output_format.type", f.Type, OutputFormatJSONSchema)
		c.nativeJSON("output_format.schema", f.Schema, requiredObject)
	}
	return c.first
}

func (s MCPHTTPServer) validate() *FieldError {
	c := newChecker("")
	c.oneOf("connection_origin", s.ConnectionOrigin, MCPOriginService, MCPOriginEnvironment)
	c.required("server_label", s.ServerLabel)
	if s.ServerURL == "" {
		c.fail("server_url", RuleRequired, "required")
	} else if u, err := url.Parse(s.ServerURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		c.fail("server_url", RuleFormat, "must be an absolute http or https URL")
	} else if u.User != nil {
		c.fail("server_url", RuleFormat, "must not carry credentials")
	}
	if s.AllowedTools != nil {
		seen := map[string]bool{}
		for i, name := range *s.AllowedTools {
			tp := "allowed_tools[" + strconv.Itoa(i) + "]"
			c.required(tp, name)
			if seen[name] {
				c.fail(tp, RuleConflict, "tool "+quote(name)+" is listed twice")
			}
			seen[name] = true
		}
	}
	if s.BearerToken != nil && strings.TrimSpace(*s.BearerToken) == "" {
		c.fail("bearer_token", RuleRequired, "must not be blank when present")
	}
	return c.first
}

func (e LocalEnvironment) validate() *FieldError {
	c := newChecker("")
	c.uuid("id", e.ID)
	if e.CapabilitySources != nil {
		c.nested("capability_sources", e.CapabilitySources.validate())
	}
	return c.first
}

func (s CapabilitySources) validate() *FieldError {
	c := newChecker("")
	promptSources(c, "skills", s.Skills)
	promptSources(c, "plugins", s.Plugins)
	if len(s.Directories) > MaxCapabilitySources {
		c.fail("directories", RuleTooLarge, "more than "+strconv.Itoa(MaxCapabilitySources)+" directories")
	}
	// The directories are the ones runtime_prepare's finalize step
	// installed, so they follow its path rule: logical, clean, under
	// /workspace (the workspace itself included).
	seen := map[string]bool{}
	for i, d := range s.Directories {
		dp := "directories[" + strconv.Itoa(i) + "]"
		c.nested(dp, CheckLogicalPath(d, true))
		if c.ok() && seen[d] {
			c.fail(dp, RuleConflict, "directory is listed twice")
		}
		seen[d] = true
	}
	return c.first
}

func promptSources(c *checker, field string, sources []CapabilitySource) {
	if len(sources) > MaxCapabilitySources {
		c.fail(field, RuleTooLarge, "more than "+strconv.Itoa(MaxCapabilitySources)+" sources")
	}
	seen := map[string]bool{}
	for i, s := range sources {
		sp := field + "[" + strconv.Itoa(i) + "]"
		c.oneOf(sp+".type", s.Type, CapabilitySourceInline)
		c.required(sp+".name", s.Name)
		c.required(sp+".description", s.Description)
		if seen[s.Name] {
			c.fail(sp+".name", RuleConflict, "name "+quote(s.Name)+" is listed twice")
		}
		seen[s.Name] = true
	}
}

func (f FunctionTool) validate() *FieldError {
	c := newChecker("")
	c.required("name", f.Name)
	c.maxBytes("name", f.Name, MaxFunctionNameBytes)
	for i := 0; i < len(f.Name) && c.ok(); i++ {
		if ch := f.Name[i]; !(ch == '_' || ch == '-' || ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			c.fail("name", RuleFormat, "only letters, digits, _ and - are allowed")
		}
	}
	c.nativeJSON("parameters", f.Parameters, requiredObject)
	return c.first
}

// PromptCancel asks the Runtime to cancel the Run named by Envelope.id.
// The receipt is an interaction_decision_ack echoing DeliveryID.
//
// decision (spec/run.yaml): the reference makes delivery_id optional, but
// the protocol lets only a receipt that echoes its delivery ID settle a
// cancellation, so Core always sets it and it is required here.
type PromptCancel struct {
	DeliveryID string `json:"delivery_id"`
}

// Validate checks the delivery ID.
func (p PromptCancel) Validate() error {
	c := newChecker("")
	c.id("delivery_id", p.DeliveryID, MaxIDBytes)
	return c.err()
}

// DeviceShutdown asks the daemon to close its Executors and stop. Reason
// is diagnostic text for the daemon's logs; it changes nothing.
type DeviceShutdown struct {
	Reason string `json:"reason,omitempty"`
}

// Validate bounds the reason.
func (p DeviceShutdown) Validate() error {
	c := newChecker("")
	c.maxBytes("reason", p.Reason, MaxShutdownReasonBytes)
	if !utf8.ValidString(p.Reason) {
		c.fail("reason", RuleFormat, "not valid UTF-8")
	}
	return c.err()
}

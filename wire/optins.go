package wire

import "slices"

// SessionConfig is what the opt-in rules read about a Session and the
// Harness it runs on. Callers map their own Session, Agent and device
// records onto it; nothing here is on the wire.
type SessionConfig struct {
	// Environment is the type of the Session's Environment; required.
	Environment EnvironmentType
	// Binding is the exact Environment binding: required for openai_hosted
	// and self_hosted, forbidden for none.
	Binding *LocalEnvironment
	// MultiAgentEnabled is the Agent's multi_agent.enabled.
	MultiAgentEnabled bool
	// TextVerbosity is the Agent's resolved text verbosity; "" means the
	// default, medium.
	TextVerbosity string
	// OutputSchema is the JSON Schema object of a json_schema output
	// format; nil when the Agent requests none.
	OutputSchema NativeJSON
	// DisableProgrammaticToolCalling is true only when the Agent disables
	// programmatic tool calling explicitly.
	DisableProgrammaticToolCalling bool
	// Capabilities is the declaration of the selected Harness, as admitted.
	Capabilities AgentKindCapabilities
	// StartedTurn is true when the Session already has a started Turn.
	StartedTurn bool
	// NativeSessionID is the recorded native Session ID, "" when none.
	NativeSessionID string
}

// NeedsNativeSessionRecovery reports whether the Runtime must recover the
// native Session: a Turn was started but no native Session ID recorded.
func (s SessionConfig) NeedsNativeSessionRecovery() bool {
	return s.StartedTurn && s.NativeSessionID == ""
}

// ApplyOptIns sets on req the opt-ins Core sets for every Run (the
// protocol's prompt-request opt-in table), for a prompt_request or the
// configuration of an executor-profile execution_prepare:
//
//	execution_controls            always: web search disabled, the resolved text
//	                              verbosity (default medium), the Agent's explicit
//	                              programmatic-tool-calling disable, any json_schema format
//	observe_tool_observations     always
//	observe_messages              when the Harness declares message_items
//	observe_subagent_identities,  from multi_agent.enabled (observe when enabled,
//	disable_subagents             disable when not)
//	disable_execution_environment for an Environment of type none
//	local_environment             for openai_hosted and self_hosted: the exact binding
//	strict_resume,                always strict; require_existing_native_session when
//	require_existing_native_session  the native Session must be recovered
//
// It owns exactly these fields and sets each one, false and nil included,
// so a reused request cannot keep a stale opt-in; every other field is
// left as it is (agent_session_id and agent_state_key are the caller's).
// The read-only preparation profile takes no opt-ins. On an invalid
// SessionConfig it returns a *FieldError naming the SessionConfig field
// (environment, binding, text_verbosity, output_schema) and leaves req
// unchanged. The durable_receipt row of prompt_steer is ApplySteerOptIns.
func ApplyOptIns(req *PromptRequest, s SessionConfig) error {
	c := newChecker("")
	c.nested("environment", s.Environment.validate())
	switch {
	case !c.ok():
	case s.Environment.Local() && s.Binding == nil:
		c.fail("binding", RuleRequired, "a "+string(s.Environment)+" Environment needs its exact binding")
	case !s.Environment.Local() && s.Binding != nil:
		c.fail("binding", RuleForbidden, "an Environment of type none has no binding")
	case s.Binding != nil:
		c.nested("binding", s.Binding.validate())
	}
	verbosity := s.TextVerbosity
	if verbosity == "" {
		verbosity = TextVerbosityMedium
	}
	c.oneOf("text_verbosity", verbosity, TextVerbosityLow, TextVerbosityMedium, TextVerbosityHigh)
	if s.OutputSchema != nil {
		c.nativeJSON("output_schema", s.OutputSchema, requiredObject)
	}
	if err := c.err(); err != nil {
		return err
	}

	// execution_controls
	controls := &ExecutionControls{
		WebSearch:                      WebSearchDisabled,
		TextVerbosity:                  verbosity,
		DisableProgrammaticToolCalling: s.DisableProgrammaticToolCalling,
	}
	if s.OutputSchema != nil {
		controls.OutputFormat = &OutputFormat{Type: OutputFormatJSONSchema, Schema: slices.Clone(s.OutputSchema)}
	}
	req.ExecutionControls = controls
	// observe_tool_observations
	req.ObserveToolObservations = true
	// observe_messages
	req.ObserveMessages = s.Capabilities.MessageItems.Supports()
	// observe_subagent_identities, disable_subagents
	req.ObserveSubagentIdentities = s.MultiAgentEnabled
	req.DisableSubagents = !s.MultiAgentEnabled
	// disable_execution_environment
	req.DisableExecutionEnvironment = s.Environment == EnvironmentTypeNone
	// local_environment
	req.LocalEnvironment = nil
	if s.Environment.Local() {
		req.LocalEnvironment = s.Binding.clone()
	}
	// strict_resume, require_existing_native_session
	req.StrictResume = true
	req.RequireExistingNativeSession = s.NeedsNativeSessionRecovery()
	return nil
}

// ApplySteerOptIns sets the opt-in Core sets on every active input it
// delivers: durable_receipt, so the Runtime reports the written phase.
func ApplySteerOptIns(p *PromptSteer) {
	p.DurableReceipt = true
}

// clone copies the binding so the request never aliases the caller's.
func (e *LocalEnvironment) clone() *LocalEnvironment {
	out := *e
	if src := e.CapabilitySources; src != nil {
		out.CapabilitySources = &CapabilitySources{
			Skills:      slices.Clone(src.Skills),
			Plugins:     slices.Clone(src.Plugins),
			Directories: slices.Clone(src.Directories),
		}
	}
	return &out
}

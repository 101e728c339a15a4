package harness

import (
	"fmt"
	"strconv"

	"github.com/agentwire/agentwire/wire"
)

// The gate: what a request asks of a Harness, checked against the
// declaration snapshot before any native call (daemon-protocol.txt:27:
// "Optional operations check this snapshot before any native call; the
// presence of a Go interface never grants support"). The daemon runs these
// checks before it calls an adapter, and an adapter runs them again on its
// own side of the interface, so that a caller other than the daemon (a
// test, the conformance kit) meets the same refusal.

// UnsupportedError refuses an operation the declaration does not support.
// It names the capability and the request member that asked for it;
// errors.Is(err, ErrUnsupportedOperation) holds.
type UnsupportedError struct {
	// Capability is the JSON name of the capability field that is false.
	Capability string
	// What names the member of the request that needs it
	// ("execution_controls.output_format", "input[0].content[1]").
	What string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("harness: %s needs the %s capability, which this Harness does not declare", e.What, e.Capability)
}

// Is makes an UnsupportedError an ErrUnsupportedOperation.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupportedOperation }

// need refuses what unless the declaration supports capability.
func need(s wire.CapabilitySupport, capability, what string) error {
	if s.Supports() {
		return nil
	}
	return &UnsupportedError{Capability: capability, What: what}
}

// CheckConfiguration refuses a configuration (a prompt_request, or the
// configuration of an execution_prepare) that asks for an operation c does
// not declare: the first such member, in the order of the protocol's
// tables (daemon-protocol.txt:34-47 and :51-60). A prompt_request's input is
// checked too (CheckInput). The read-only preparation profile asks only for
// workspace_read_preparation.
func CheckConfiguration(c wire.AgentKindCapabilities, cfg wire.PromptRequest) error {
	if cfg.WorkspaceReadOnly {
		return need(c.WorkspaceReadPreparation, "workspace_read_preparation", "workspace_read_only")
	}
	checks := []struct {
		asked bool
		s     wire.CapabilitySupport
		name  string
		what  string
	}{
		{cfg.DisableExecutionEnvironment, c.EnvironmentNone, "environment_none", "disable_execution_environment"},
		{cfg.LocalEnvironment != nil, c.LocalEnvironment, "local_environment", "local_environment"},
		{cfg.ExecutionControls != nil, c.ExecutionControls, "execution_controls", "execution_controls"},
		{cfg.ObserveToolObservations, c.ToolObservations, "tool_observations", "observe_tool_observations"},
		{cfg.ObserveMessages, c.MessageItems, "message_items", "observe_messages"},
		{cfg.ObserveSubagentIdentities, c.SubagentObservations, "subagent_observations", "observe_subagent_identities"},
		{cfg.DisableSubagents, c.SubagentControl, "subagent_control", "disable_subagents"},
		{cfg.AgentSessionID != "", c.Resume, "resume", "agent_session_id"},
		{cfg.RequireExistingNativeSession, c.NativeSessionRecovery, "native_session_recovery", "require_existing_native_session"},
		{cfg.WorkspaceAuthoring, c.WorkspaceAuthoring, "workspace_authoring", "workspace_authoring"},
		{len(cfg.FunctionTools) > 0, c.FunctionTools, "function_tools", "function_tools"},
		{cfg.ToolSearch, c.ToolSearch, "tool_search", "tool_search"},
	}
	for _, k := range checks {
		if k.asked {
			if err := need(k.s, k.name, k.what); err != nil {
				return err
			}
		}
	}
	if ec := cfg.ExecutionControls; ec != nil {
		// decision: Core sends web search disabled and a resolved text
		// verbosity on every Run (daemon-protocol.txt:54), and the controls
		// themselves only when the engine profile declares them
		// (daemon-protocol.txt:40). A Harness without web search honours
		// "disabled", and one without a verbosity control runs at its own
		// default, which "medium" (Core's default) names; any other value
		// needs the control's capability.
		if ec.WebSearch != "" && ec.WebSearch != wire.WebSearchDisabled {
			if err := need(c.WebSearchControl, "web_search_control", "execution_controls.web_search"); err != nil {
				return err
			}
		}
		if ec.TextVerbosity != "" && ec.TextVerbosity != wire.TextVerbosityMedium {
			if err := need(c.TextVerbosity, "text_verbosity", "execution_controls.text_verbosity"); err != nil {
				return err
			}
		}
		if ec.DisableProgrammaticToolCalling {
			if err := need(c.ProgrammaticToolCallingDisable, "programmatic_tool_calling_disable", "execution_controls.disable_programmatic_tool_calling"); err != nil {
				return err
			}
		}
		if ec.OutputFormat != nil {
			// Core asks for both when the Agent requests json_schema output
			// (daemon-protocol.txt:41): the structured answer is reported
			// as an output message.
			if err := need(c.StructuredOutput, "structured_output", "execution_controls.output_format"); err != nil {
				return err
			}
			if err := need(c.MessageItems, "message_items", "execution_controls.output_format"); err != nil {
				return err
			}
		}
	}
	if cfg.MCPHTTPServers != nil {
		for i, s := range *cfg.MCPHTTPServers {
			at := "mcp_http_servers[" + strconv.Itoa(i) + "]"
			if err := need(c.MCPHTTPTools, "mcp_http_tools", at); err != nil {
				return err
			}
			if s.Required {
				if err := need(c.MCPHTTPRequired, "mcp_http_required", at+".required"); err != nil {
					return err
				}
			}
			if s.BearerToken != nil {
				if err := need(c.MCPHTTPBearerAuth, "mcp_http_bearer_auth", at+".bearer_token"); err != nil {
					return err
				}
			}
		}
	}
	if len(cfg.Input) > 0 {
		return CheckInput(c, cfg.Input)
	}
	return nil
}

// CheckInput refuses content c cannot carry: an image without
// message_images. A text-only transport rejects the image rather than
// dropping it (daemon-protocol.txt:98).
func CheckInput(c wire.AgentKindCapabilities, in wire.MessageInput) error {
	if c.MessageImages.Supports() {
		return nil
	}
	for i, m := range in {
		for j, ct := range m.Content {
			if ct.Type == wire.ContentImage {
				return &UnsupportedError{Capability: "message_images", What: "input[" + strconv.Itoa(i) + "].content[" + strconv.Itoa(j) + "]"}
			}
		}
	}
	return nil
}

// CheckSteer refuses active input c does not take: steering, and the
// content of the input (CheckInput).
func CheckSteer(c wire.AgentKindCapabilities, in wire.MessageInput) error {
	if err := need(c.Steering, "steering", "prompt_steer"); err != nil {
		return err
	}
	return CheckInput(c, in)
}

// CheckAnswer refuses an answer c does not take: a permission or
// user-choice decision needs permissions, a function result needs
// function_tools, and an image in it function_result_images.
func CheckAnswer(c wire.AgentKindCapabilities, a Answer) error {
	switch {
	case a.Permission != nil:
		return need(c.Permissions, "permissions", "permission_decision")
	case a.Choice != nil:
		return need(c.Permissions, "permissions", "prompt_for_user_choice_decision")
	case a.Result != nil:
		if err := need(c.FunctionTools, "function_tools", "function_result"); err != nil {
			return err
		}
		for i, ct := range a.Result.Content {
			if ct.Type == wire.ContentImage {
				if err := need(c.FunctionResultImages, "function_result_images", "function_result.content["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

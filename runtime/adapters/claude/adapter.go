package claude

import (
	"context"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// capabilities is what the adapter declares: every field decided
// (daemon-protocol.txt:23), true only where the adapter implements the
// operation and a test against the real CLI shows it (harness_test.go).
// The conformance kit (harness_kit_test.go) runs every declared one.
func capabilities() wire.AgentKindCapabilities {
	yes, no := wire.Supported, wire.Unsupported
	return wire.AgentKindCapabilities{
		Streaming:    yes, // text_delta → delta
		DurableTurns: yes, // a Run returns once the CLI wrote its result
		Preparation:  yes, // NewExecutor starts the CLI and initializes it
		Usage:        yes, // the result's usage, summed over the Turn's model calls
		Resume:       yes, // --resume with the native Session done reports
		MessageItems: yes, // item IDs on deltas, output_message per text block
		// decision: the Environment's workspace is the CLI's working
		// directory, and the daemon serves reads and exports from the bound
		// directory itself (daemon-protocol.txt:29, :175).
		EnvironmentNone:          yes,
		LocalEnvironment:         yes,
		WorkspaceReadPreparation: yes,
		WorkspaceOutputExport:    yes,

		Steering:             yes, // a user message with the input's ID as uuid
		DurableInputReceipts: yes, // written = the line, accepted = command_lifecycle started (or the replay)

		ExecutionControls: yes, // web search disabled (tools off), the default verbosity
		SubagentControl:   yes, // disable_subagents switches off the Task tool
		ToolObservations:  yes, // tool_use and tool_result (with tool_use_result) → tool_call before and after
		Permissions:       yes, // can_use_tool → permission_request; the answer is the control response
		FunctionTools:     yes, // an MCP server on the control channel; tools/call → function_call
		StructuredOutput:  yes, // --json-schema; done's content is the result's structured_output
		// Core's HTTP MCP servers go to the CLI in a 0600 --mcp-config
		// file (mcphttp.go): their tools are asked as permission_request
		// and observed like others, a required server that does not
		// connect fails the preparation, the bearer token is a header.
		MCPHTTPTools:      yes,
		MCPHTTPRequired:   yes,
		MCPHTTPBearerAuth: yes,

		WebSearchControl:               no,
		TextVerbosity:                  no,
		SubagentObservations:           no,
		NativeSessionRecovery:          no,
		WorkspaceAuthoring:             no,
		ProgrammaticToolCallingDisable: no,
		ToolSearch:                     no,
		MessageImages:                  no,
		FunctionResultImages:           no,
	}
}

// Declaration is the kind as the adapter declares it.
func (a *Adapter) Declaration() harness.Declaration {
	return harness.Declaration{Kind: a.cfg.Kind, Available: a.available, Version: a.version, Capabilities: capabilities()}
}

// NewExecutor starts a CLI for the configuration: a new native Session,
// or the one agent_session_id names, resumed strictly.
func (a *Adapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	if !a.available {
		return nil, ErrUnavailable
	}
	if err := harness.CheckConfiguration(cfg.Declaration.Capabilities, cfg.Configuration); err != nil {
		return nil, err
	}
	e, err := a.startExecutor(ctx, cfg)
	if err != nil {
		if e != nil {
			// The start failed and so did its close: both values go back
			// (daemon-protocol.txt:177), the caller closes the Executor.
			return e, err
		}
		return nil, err // never a nil *executor inside a non-nil Executor
	}
	return e, nil
}

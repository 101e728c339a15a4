package codex

import "github.com/agentwire/agentwire/wire"

// capabilities is what the adapter declares: every field decided
// (daemon-protocol.txt:23), true only where the adapter implements the
// operation and a test against the real CLI shows it (adapter_test.go and
// the TestHarness* tests name each one).
func capabilities() wire.AgentKindCapabilities {
	yes, no := wire.Supported, wire.Unsupported
	return wire.AgentKindCapabilities{
		// Core requires these for every execution (daemon-protocol.txt:34).
		Streaming:            yes, // item/agentMessage/delta → delta
		Steering:             yes, // turn/steer with clientUserMessageId
		DurableTurns:         yes, // a Run settles natively (turn/completed) before Run returns
		DurableInputReceipts: yes, // written = the turn/steer line, accepted = the userMessage echo
		Preparation:          yes, // NewExecutor starts the app-server and its thread
		ExecutionControls:    yes, // web_search, model_verbosity, outputSchema
		ToolObservations:     yes, // command, file, MCP and dynamic tool items → tool_call

		Permissions:     yes, // command and file-change approvals
		Usage:           yes, // per-Run snapshots from thread totals
		Resume:          yes, // thread/resume by the thread ID done reports
		MessageItems:    yes, // item IDs on deltas, output_message
		EnvironmentNone: yes, // a private empty working directory
		// decision: the Environment's workspace is the thread's cwd, and the
		// daemon serves workspace reads and exports from the bound directory
		// with its own implementation, without a Harness process
		// (daemon-protocol.txt:29, :175).
		LocalEnvironment:         yes,
		WorkspaceReadPreparation: yes,
		WorkspaceOutputExport:    yes,
		WebSearchControl:         yes, // thread config web_search
		TextVerbosity:            yes, // thread config model_verbosity
		StructuredOutput:         yes, // turn/start outputSchema
		SubagentControl:          yes, // thread config features.multi_agent=false
		FunctionTools:            yes, // dynamicTools, item/tool/call → function_call

		// Not implemented, so not declared.
		SubagentObservations:           no,
		NativeSessionRecovery:          no,
		WorkspaceAuthoring:             no,
		ProgrammaticToolCallingDisable: no,
		ToolSearch:                     no,
		MessageImages:                  no,
		FunctionResultImages:           no,
		MCPHTTPTools:                   no,
		MCPHTTPRequired:                no,
		MCPHTTPBearerAuth:              no,
	}
}

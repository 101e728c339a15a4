// Package acp is one Harness adapter for every agent that speaks the
// Agent Client Protocol (JSON-RPC over the agent's stdio: initialize,
// session/new or session/load, session/prompt with session/update
// notifications, session/request_permission, session/cancel), configured
// per agent kind with a command line and environment. Gemini CLI
// (`gemini --acp`) is the ready-made kind (gemini.go).
//
// It is built on github.com/coder/acp-go-sdk (pinned in go.mod): its
// client side connection types the protocol and orders notifications
// before the response that follows them, which the mapping relies on
// (every update of a prompt reaches the Run before the prompt's end).
//
// Mapping: agent_message_chunk → delta, agent_thought_chunk → thinking,
// tool_call / tool_call_update → tool_call before and after (with the
// observation), session/request_permission → permission_request,
// session/cancel → the cancellation, settled when the prompt ends with
// stopReason cancelled, the prompt's end → done, sessionId → the native
// Session ID (session/load resumes it strictly when the agent declares
// loadSession). Steered input waits in an Inbox and is submitted as the
// next session/prompt of the same Run once the current one ends; the Run
// and its done wait for it.
//
// What ACP cannot carry is declared unsupported: user-choice requests,
// message item IDs, usage (no standard field), engine failure codes (a
// prompt error is a bare JSON-RPC error). Function tools reach the agent
// as the tools of an MCP server each Executor hosts on 127.0.0.1
// (functions.go), for kinds whose agent takes HTTP MCP servers.
package acp

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Adapter is the Harness of one ACP agent kind.
type Adapter struct {
	cfg   Config
	state string
}

// New validates cfg; a kind whose always-required capabilities cannot be
// honoured is refused with the reason. An unavailable agent (cfg.Agent
// Available false) registers, declared unavailable.
func New(cfg Config) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	state, err := cfg.stateDir()
	if err != nil {
		return nil, err
	}
	return &Adapter{cfg: cfg, state: state}, nil
}

// capabilities is what an ACP kind declares: every field decided
// (daemon-protocol.txt:23).
func (a *Adapter) capabilities() wire.AgentKindCapabilities {
	yes, no := wire.Supported, wire.Unsupported
	of := func(b bool) wire.CapabilitySupport {
		if b {
			return yes
		}
		return no
	}
	return wire.AgentKindCapabilities{
		Streaming:    yes, // agent_message_chunk → delta
		DurableTurns: yes, // a Run returns once the prompt answered its stopReason
		Preparation:  yes, // NewExecutor starts the agent: initialize, session/new
		// decision: the Environment's workspace is the agent's cwd, and the
		// daemon serves reads and exports from the bound directory itself
		// (daemon-protocol.txt:29, :175), as for the other adapters.
		EnvironmentNone:          yes,
		LocalEnvironment:         yes,
		WorkspaceReadPreparation: yes,
		WorkspaceOutputExport:    yes,
		// decision: ACP takes one prompt at a time, so active input waits in
		// an Inbox (written once it is there) and is accepted when it is
		// submitted as the Run's next session/prompt (steer.go).
		Steering:             yes,
		DurableInputReceipts: yes,
		ExecutionControls:    yes, // through the agent's own settings (Agent.Controls)
		ToolObservations:     yes, // tool_call / tool_call_update
		Permissions:          yes, // session/request_permission
		SubagentControl:      of(a.cfg.Agent.SubagentControl),
		Resume:               of(a.cfg.Agent.LoadSession),

		// What ACP does not carry, or the adapter does not build.
		Usage:            no, // no standard usage field (Gemini's is in _meta)
		MessageItems:     no, // no item IDs or boundaries
		StructuredOutput: no,
		// decision: function tools go through the MCP server the Executor
		// hosts (functions.go), for kinds whose agent takes HTTP MCP
		// servers in session/new; results are text only.
		FunctionTools: of(a.cfg.Agent.FunctionTools),
		// Core's HTTP MCP servers go to the agent in session/new
		// (mcphttp.go); a required one is checked during the preparation.
		MCPHTTPTools:                   of(a.cfg.Agent.MCPHTTP),
		MCPHTTPRequired:                of(a.cfg.Agent.MCPHTTP),
		MCPHTTPBearerAuth:              of(a.cfg.Agent.MCPHTTP),
		WebSearchControl:               no, // only "disabled", which every kind honours
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
	return harness.Declaration{Kind: a.cfg.Agent.Kind, Available: a.cfg.Agent.Available, Version: a.cfg.Agent.Version,
		Capabilities: a.capabilities()}
}

// ErrUnavailable is NewExecutor's error for an unavailable agent.
var ErrUnavailable = errors.New("acp adapter: the agent is not available")

// NewExecutor starts the agent for the configuration: a new native
// session, or the one agent_session_id names, loaded strictly.
func (a *Adapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	if !a.cfg.Agent.Available {
		return nil, ErrUnavailable
	}
	if err := harness.CheckConfiguration(cfg.Declaration.Capabilities, cfg.Configuration); err != nil {
		return nil, err
	}
	e, err := a.startExecutor(ctx, cfg)
	if err != nil {
		if e != nil {
			return e, err // its close failed too: the caller keeps and closes it
		}
		return nil, err
	}
	return e, nil
}

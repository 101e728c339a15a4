// Package codex is the Harness adapter for the OpenAI Codex CLI, built on
// `codex app-server` (JSON-RPC 2.0 over stdio). An Executor is one
// app-server process, in its own process group, holding one Codex thread
// for the Session; each Run is one Codex turn. The thread ID is the native
// Session ID that done reports and a later Executor resumes.
//
// Codex runs offline against the model provider of the adapter's
// configuration (a Responses API base URL and the name of the environment
// variable that holds its key), with a Codex home the adapter owns, so
// nothing but that provider is contacted.
package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Adapter is the Codex Harness.
type Adapter struct {
	cfg   Config
	decl  harness.Declaration
	state string // the state root
}

// New validates cfg, checks the binary's version against PinnedVersion and
// returns the adapter. A missing binary or another version leaves the kind
// declared but unavailable, with a log line saying why; a configuration
// that cannot work is an error.
func New(cfg Config) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	state, err := cfg.stateDir()
	if err != nil {
		return nil, err
	}
	decl := harness.Declaration{Kind: cfg.Kind, Available: true, Version: PinnedVersion, Capabilities: capabilities()}
	if found, err := checkVersion(cfg.Binary); err != nil {
		decl.Available = false
		decl.Version = found
		cfg.Logger.Warn("codex adapter: the kind is declared unavailable", "kind", cfg.Kind, "binary", cfg.Binary, "want", pinnedVersionLine, "err", err)
	}
	if err := decl.Validate(); err != nil {
		return nil, err
	}
	return &Adapter{cfg: cfg, decl: decl, state: state}, nil
}

// Declaration is the declaration New made.
func (a *Adapter) Declaration() harness.Declaration { return a.decl }

// ErrUnavailable is NewExecutor's error when the binary is missing or not
// the pinned version.
var ErrUnavailable = errors.New("codex adapter: the codex binary is not available at the pinned version")

// NewExecutor starts an app-server and its thread for the configuration:
// a new thread, or the one agent_session_id names (resumed strictly: an
// unknown thread fails the preparation, it never becomes a new one).
func (a *Adapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	if !a.decl.Available {
		return nil, ErrUnavailable
	}
	// The gate of the Executor's declaration snapshot first
	// (daemon-protocol.txt:27), then what this adapter never honours,
	// whatever a snapshot says.
	if err := harness.CheckConfiguration(cfg.Declaration.Capabilities, cfg.Configuration); err != nil {
		return nil, err
	}
	if err := checkConfiguration(cfg.Configuration); err != nil {
		return nil, err
	}
	home, err := a.home(cfg.Configuration.AgentStateKey)
	if err != nil {
		return nil, err
	}
	e, err := startExecutor(ctx, a, cfg, home)
	if err != nil {
		if e != nil {
			// The start failed and so did its close: both values go back
			// (daemon-protocol.txt:177), the caller closes the Executor.
			return e, err
		}
		// A nil *executor in a non-nil Executor would look like something
		// to close.
		return nil, err
	}
	return e, nil
}

// home is the Codex home of a Session's state key (its rollouts, which a
// later Executor resumes), created on first use.
//
// decision: one Codex home per agent_state_key, the Runtime's per-Session
// native state (wire.AgentStateKey), so a thread can be resumed only by
// its own Session; a prompt_request without a key shares one home.
func (a *Adapter) home(key string) (string, error) {
	name := "shared"
	if key != "" {
		if strings.ContainsAny(key, `/\`) || key == "." || key == ".." || filepath.Base(key) != key {
			return "", fmt.Errorf("codex adapter: the agent state key is not a directory name")
		}
		name = key
	}
	dir := filepath.Join(a.state, "homes", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("codex adapter: the Codex home: %w", err)
	}
	return dir, nil
}

// checkConfiguration refuses, before any native work, what the adapter
// does not honour (daemon-protocol.txt:157: reject before starting the
// operation).
func checkConfiguration(p wire.PromptRequest) error {
	refuse := func(what string) error {
		return fmt.Errorf("codex adapter: %s is not supported by this Harness", what)
	}
	switch {
	case p.ToolSearch:
		return refuse("tool_search")
	case p.MCPHTTPServers != nil && len(*p.MCPHTTPServers) > 0:
		return refuse("mcp_http_servers")
	case p.ExecutionControls != nil && p.ExecutionControls.DisableProgrammaticToolCalling:
		return refuse("disable_programmatic_tool_calling")
	case p.RequireExistingNativeSession:
		// decision: native_session_recovery is declared false; a Session
		// that needs recovery fails here with a finite preparation error
		// rather than silently starting a new thread.
		return refuse("recovering a native Session that has no recorded agent_session_id (native_session_recovery)")
	case p.ObserveSubagentIdentities:
		return refuse("observe_subagent_identities")
	case p.WorkspaceAuthoring:
		return refuse("workspace_authoring")
	}
	if o := p.AgentOptions; o != nil {
		// decision: the provider and its credentials are the Runtime
		// operator's (the adapter's configuration), and native parameters
		// could override the sandbox or the approval policy; neither is
		// taken from a request.
		if len(o.ModelProvider) > 0 {
			return refuse("agent_options.model_provider")
		}
		if len(o.HarnessConfig) > 0 {
			return refuse("agent_options.harness_config")
		}
	}
	return nil
}

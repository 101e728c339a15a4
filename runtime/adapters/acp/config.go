package acp

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentwire/agentwire/wire"
)

// Agent is one agent kind that speaks ACP: how to start it and what of
// the protocol's always-required operations it can honour.
type Agent struct {
	// Kind is the agent kind the adapter declares.
	Kind string
	// Command is the executable; Args its arguments (e.g. "--acp").
	Command string
	Args    []string
	// Env is added to the Runtime's environment ("NAME=value").
	Env []string
	// Version is the agent's version, when known ("" otherwise).
	Version string
	// Available is false when the executable is missing or of another
	// version than a pinned kind speaks; the kind is declared anyway.
	Available bool
	// Controls writes the agent's own configuration for one Executor
	// under home, the directory the adapter owns for the Session's state
	// key, honouring the configuration's execution controls (web tools
	// excluded…), and returns the environment that points the agent at
	// it. nil means the adapter knows no way to honour execution controls
	// for this agent, so the kind cannot run a Turn and is refused at
	// registration (New).
	Controls func(home string, p wire.PromptRequest) ([]string, error)
	// SubagentControl: Controls switches the agent's subagents off when
	// the configuration asks (disable_subagents).
	SubagentControl bool
	// FunctionTools: the agent calls the tools of MCP servers named in
	// session/new over streamable HTTP (it declares mcpCapabilities.http),
	// so Core's function tools reach it through the MCP server the
	// Executor hosts (functions.go). MCPToolName must be set with it.
	FunctionTools bool
	// MCPHTTP: Core's HTTP MCP servers (mcp_http_servers) are passed to
	// the agent in session/new, with their bearer tokens as headers
	// (mcphttp.go); the agent asks permission before it calls one of
	// their tools, and Controls keeps tools outside a server's
	// allowed_tools from running. MCPToolName must be set with it.
	MCPHTTP bool
	// MCPToolName is the name the agent shows its model for tool of the
	// MCP server named server, or an error when the agent would rewrite or
	// cut the name (the model would call another name than the Agent
	// declared).
	MCPToolName func(server, tool string) (string, error)
	// LoadSession: the agent loads a saved session (ACP session/load), so
	// a Session resumes its native Session strictly. The agent also
	// declares it in initialize; an Executor whose agent does not refuses
	// the resume.
	LoadSession bool
	// beforeLoad prepares the agent's saved state under home for loading
	// the native session id (gemini.go); nil = nothing to prepare.
	beforeLoad func(home, id string) error
	// replaysAfterLoad: the agent streams a loaded session's history after
	// it answered session/load (gemini.go), so the Executor waits for the
	// replay to end before its first Run.
	replaysAfterLoad bool
}

// Defaults of Config.
const (
	DefaultStartTimeout = 60 * time.Second
	DefaultCancelWait   = 10 * time.Second
	DefaultCloseGrace   = 3 * time.Second
	DefaultStderrBytes  = 64 << 10
	// DefaultMaxReadBytes bounds one fs/read_text_file answer.
	DefaultMaxReadBytes = wire.MaxReadBytes
)

// Config configures the adapter of one agent kind.
type Config struct {
	Agent Agent
	// StateDir holds the per-Session-state-key homes the adapter owns (the
	// agent's settings and saved sessions) and the private working
	// directories of Environment-none Sessions; "" = a directory under
	// the user's cache directory.
	StateDir string
	// StartTimeout bounds starting the agent: initialize and session/new
	// (or session/load).
	StartTimeout time.Duration
	// CancelWait bounds how long a cancelled Run waits for the prompt to
	// end with stopReason cancelled before the agent is killed.
	CancelWait time.Duration
	// CloseGrace is how long the agent may take to exit after stdin EOF
	// before its process group is signalled, then killed.
	CloseGrace time.Duration
	// StderrBytes bounds the agent's stderr kept for the log.
	StderrBytes int
	// MaxReadBytes bounds one fs/read_text_file answer.
	MaxReadBytes int64
	Logger       *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.CancelWait <= 0 {
		c.CancelWait = DefaultCancelWait
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = DefaultCloseGrace
	}
	if c.StderrBytes <= 0 {
		c.StderrBytes = DefaultStderrBytes
	}
	if c.MaxReadBytes <= 0 || c.MaxReadBytes > DefaultMaxReadBytes {
		c.MaxReadBytes = DefaultMaxReadBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate checks the agent's description; what an always-required
// capability needs comes first, with the reason.
func (c Config) validate() error {
	a := c.Agent
	if a.Kind == "" || len(a.Kind) > wire.MaxAgentKindBytes || strings.ContainsAny(a.Kind, "=: \t\n") {
		return fmt.Errorf("acp adapter: the kind %q must be 1 to %d bytes without '=', ':' or spaces", a.Kind, wire.MaxAgentKindBytes)
	}
	if a.Command == "" {
		return fmt.Errorf("acp adapter: kind %s: a command is required", a.Kind)
	}
	for _, kv := range a.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !envName.MatchString(k) {
			// The value is not repeated: it may hold a secret.
			return fmt.Errorf("acp adapter: kind %s: an environment entry is not NAME=value (name %q)", a.Kind, k)
		}
	}
	if a.Controls == nil {
		// decision: Core requires execution_controls for every Turn
		// (daemon-protocol.txt:34) and ACP has no standard setting for
		// them (no way to exclude web tools), so a kind the adapter
		// cannot configure could never run a Turn: refused here, with
		// the reason, rather than registered and never admitted.
		return fmt.Errorf("acp adapter: kind %s cannot be registered: Core requires execution_controls (web search off) for every Turn, "+
			"ACP has no standard setting for it, and this adapter knows the agent's own settings only for: %s", a.Kind, strings.Join(KnownAgents(), ", "))
	}
	if (a.FunctionTools || a.MCPHTTP) && a.MCPToolName == nil {
		return fmt.Errorf("acp adapter: kind %s: function tools and HTTP MCP servers need the agent's MCP tool naming (Agent.MCPToolName)", a.Kind)
	}
	return nil
}

// stateDir is the adapter's state root.
func (c Config) stateDir() (string, error) {
	if c.StateDir != "" {
		return filepath.Abs(c.StateDir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("acp adapter: no state directory: %w", err)
	}
	return filepath.Join(base, "agentwire", "acp", c.Agent.Kind), nil
}

// dirs are the home and the private working directory of a Session state
// key.
//
// decision: one home per agent_state_key (wire.AgentStateKey), as the
// Claude adapter keeps one configuration directory per key: a saved
// native session is loaded only by its own Session.
func dirs(state, key string) (home, scratch string, err error) {
	name := "shared"
	if key != "" {
		if strings.ContainsAny(key, `/\`) || key == "." || key == ".." || filepath.Base(key) != key {
			return "", "", errors.New("acp adapter: the agent state key is not a directory name")
		}
		name = key
	}
	home = filepath.Join(state, "home", name)
	scratch = filepath.Join(state, "scratch", name)
	for _, d := range []string{home, scratch} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", fmt.Errorf("acp adapter: %w", err)
		}
	}
	return home, scratch, nil
}

// env is the agent's environment: the Runtime's own, the agent's Env and
// what its Controls returned, later entries replacing earlier ones of the
// same name.
func env(layers ...[]string) []string {
	idx := map[string]int{}
	var out []string
	add := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			return
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range os.Environ() {
		add(kv)
	}
	for _, l := range layers {
		for _, kv := range l {
			add(kv)
		}
	}
	return out
}

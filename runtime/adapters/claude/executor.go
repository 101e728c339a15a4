package claude

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentwire/agentwire/internal/runtime/childproc"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Adapter is the Claude Code Harness.
type Adapter struct {
	cfg   Config
	state string // the state root
	// available is false when the binary is missing or another version.
	available bool
	version   string
}

// New validates cfg and checks the binary's version against
// PinnedVersion; another version or a missing binary leaves the kind
// unavailable, with a log line saying why.
func New(cfg Config) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	state, err := cfg.stateDir()
	if err != nil {
		return nil, err
	}
	a := &Adapter{cfg: cfg, state: state, available: true, version: PinnedVersion}
	if found, err := checkVersion(cfg.Binary); err != nil {
		a.available, a.version = false, found
		cfg.Logger.Warn("claude adapter: the kind is declared unavailable", "kind", cfg.Kind, "binary", cfg.Binary, "want", pinnedVersionLine, "err", err)
	}
	return a, nil
}

// ErrUnavailable is NewExecutor's error when the binary is missing or not
// the pinned version.
var ErrUnavailable = errors.New("claude adapter: the claude binary is not available at the pinned version")

// dirs are the directories of a Session's state key: the Claude
// configuration directory (its transcripts, which a later Executor
// resumes) and, for a Session with no workspace, its private working
// directory.
//
// decision: one configuration directory per agent_state_key, the
// Runtime's per-Session native state (wire.AgentStateKey), so a native
// Session can be resumed only by its own Session. Claude Code files a
// transcript under its working directory, so an Environment-none Session
// keeps one private working directory across Executors (resume finds the
// transcript), removed with nothing else.
func (a *Adapter) dirs(key string) (config, scratch string, err error) {
	name := "shared"
	if key != "" {
		if strings.ContainsAny(key, `/\`) || key == "." || key == ".." || filepath.Base(key) != key {
			return "", "", errors.New("claude adapter: the agent state key is not a directory name")
		}
		name = key
	}
	config = filepath.Join(a.state, "config", name)
	scratch = filepath.Join(a.state, "scratch", name)
	for _, d := range []string{config, scratch} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", fmt.Errorf("claude adapter: %w", err)
		}
	}
	return config, scratch, nil
}

// executor is one claude process holding one native Session.
type executor struct {
	cfg       Config
	log       *slog.Logger
	proc      *childproc.Process
	ch        *channel
	sessionID string
	// observeMessages: Core opted in to message items and the Executor's
	// declaration has them (daemon-protocol.txt:55, :62).
	observeMessages bool
	// observeTools: the same for tool observations (daemon-protocol.txt:56).
	observeTools bool
	// functions are Core's function tools, served as the tools of the
	// adapter's MCP server (functions.go).
	functions []wire.FunctionTool
	// mcp are Core's HTTP MCP servers, which the CLI connects to itself
	// (mcphttp.go); nil when there are none.
	mcp *mcpHTTP

	runMu sync.Mutex // one Run at a time

	mu  sync.Mutex
	cur *turnState // the running Turn, nil between Runs
	// costTotal is the process's total cost at its last result
	// (total_cost_usd), from which each Run's cost_usd is the growth.
	costTotal float64
	closed    bool
	closeErr  error
}

// newSessionID mints the native Session's ID up front (--session-id): the
// Runtime knows it before the CLI says anything, so done can report it
// even for a Turn that failed early.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// startExecutor starts the CLI for the configuration (a new native
// Session, or the one agent_session_id names, resumed strictly) and sends
// initialize within the start bound. An unknown Session makes the CLI
// exit, so the preparation fails; it never becomes a new one.
//
// A start that fails closes the CLI; when that close is not confirmed the
// process may still run, so the executor comes back with the error for its
// owner to keep and close later (daemon-protocol.txt:177).
func (a *Adapter) startExecutor(ctx context.Context, hc harness.ExecutorConfig) (kept *executor, err error) {
	cfg := a.cfg
	configDir, scratch, err := a.dirs(hc.Configuration.AgentStateKey)
	if err != nil {
		return nil, err
	}
	cwd := hc.WorkspaceDir
	if cwd == "" {
		cwd = scratch
	}
	session, resume := newSessionID(), false
	if id := hc.Configuration.AgentSessionID; id != "" {
		session, resume = id, true
	}
	functions := hc.Configuration.FunctionTools
	l := launch{session: session, resume: resume, disallowed: disallowedTools(hc.Configuration), functions: len(functions) > 0}
	var mcp *mcpHTTP
	if p := hc.Configuration.MCPHTTPServers; p != nil && len(*p) > 0 {
		if err := checkMCPServers(*p); err != nil {
			return nil, err
		}
		file, err := writeMCPConfig(configDir, *p)
		if err != nil {
			return nil, err
		}
		mcp = &mcpHTTP{servers: append([]wire.MCPHTTPServer(nil), *p...), file: file}
		l.mcpFile = file
	}
	if c := hc.Configuration.ExecutionControls; c != nil && c.OutputFormat != nil {
		// The gate admitted it only with structured_output declared; the
		// CLI gives the model a StructuredOutput tool with this schema and
		// reports what it was called with (turn.go).
		l.schema = string(c.OutputFormat.Schema)
	}
	if o := hc.Configuration.AgentOptions; o != nil {
		if o.Model != nil {
			l.model = *o.Model
		}
		if o.SystemPrompt != nil {
			l.instructions = *o.SystemPrompt
		}
	}
	// The Executor's model is the Agent's when it names one: the CLI's
	// model settings and the usage the Runs report say the same.
	cfg.Model = cfg.modelOf(l)
	proc, err := childproc.Start(cfg.Binary, cfg.args(l), cfg.env(configDir), cwd, cfg.StderrBytes)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("claude adapter: starting the CLI: %w", err), mcp.remove())
	}
	e := &executor{cfg: cfg, log: cfg.Logger.With("kind", cfg.Kind, "session_id", hc.SessionID, "agent_session_id", session),
		proc: proc, sessionID: session, functions: functions, mcp: mcp,
		observeMessages: hc.Configuration.ObserveMessages && hc.Declaration.Capabilities.MessageItems.Supports(),
		observeTools:    hc.Configuration.ObserveToolObservations && hc.Declaration.Capabilities.ToolObservations.Supports()}
	e.ch = newChannel(proc.Stdout, proc.Stdin, cfg.MaxLineBytes, "aw-", func(f string, args ...any) { e.log.Debug(fmt.Sprintf(f, args...)) }, e.interceptMCP)
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*cfg.CloseGrace)
			if cerr := e.Close(cctx); cerr != nil {
				// Dropping e here would orphan a live CLI: hand it back
				// with the error, so the daemon keeps it owned and its
				// cleanup retries the close.
				kept, err = e, errors.Join(err, cerr)
			}
			cancel()
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if _, err := e.ch.Request(sctx, "initialize", nil); err != nil {
		if resume {
			// decision: resume is always strict: the CLI ends when the
			// Session does not exist ("No conversation found"), which fails
			// the preparation with a finite code (issue 20,
			// daemon-protocol.txt:60, :165).
			return nil, e.startFailed(fmt.Errorf("resuming native Session %s: %w", session, err))
		}
		return nil, e.startFailed(err)
	}
	if mcp != nil {
		if err := e.awaitRequired(sctx); err != nil {
			return nil, fmt.Errorf("claude adapter: %w", err)
		}
	}
	e.log.Debug("claude ready", "pid", proc.Pid(), "resumed", resume)
	return e, nil
}

// disallowedTools are the tools the configuration switches off.
//
// decision: Core sends web search disabled on every Run and asks for
// nothing else (daemon-protocol.txt:54); the adapter has no web search
// control to offer, so search and fetch are always off (an offline Runtime
// has nothing to search anyway). disable_subagents switches off Task,
// Claude Code's subagent tool (daemon-protocol.txt:57).
func disallowedTools(p wire.PromptRequest) []string {
	out := []string{"WebSearch", "WebFetch"}
	if p.DisableSubagents {
		out = append(out, "Task")
	}
	return out
}

// startFailed wraps a start error with the CLI's stderr, which says why
// far better than a closed pipe.
func (e *executor) startFailed(err error) error {
	if !e.proc.Alive() || errors.Is(err, ErrClosed) {
		e.log.Warn("claude failed to start", "exit", e.proc.ExitText(), "stderr", e.proc.Stderr.String())
	}
	return fmt.Errorf("claude adapter: %w", err)
}

// Close ends the CLI: stdin EOF (it exits once queued input is done),
// then the process group is signalled and killed. A close whose ctx ends
// first keeps the process owned and may be retried.
func (e *executor) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed && e.closeErr == nil {
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	_ = e.ch.CloseWrite()
	_ = e.proc.Stop(ctx, e.cfg.CloseGrace) // a non-zero exit after the signals is expected
	if ctx.Err() != nil && e.proc.Alive() {
		e.mu.Lock()
		e.closeErr = fmt.Errorf("claude adapter: the CLI did not exit: %w", ctx.Err())
		e.mu.Unlock()
		return e.closeErr
	}
	if text := e.proc.Stderr.String(); text != "" {
		e.log.Debug("claude exited", "exit", e.proc.ExitText(), "stderr", text)
	}
	// The bearer tokens live no longer than the Executor: the process that
	// read them is gone.
	if err := e.mcp.remove(); err != nil {
		e.mu.Lock()
		e.closeErr = err
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	e.closed, e.closeErr = true, nil
	e.mu.Unlock()
	return nil
}

package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentwire/agentwire/internal/runtime/childproc"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// executor is one agent process holding one native session.
type executor struct {
	harness.Inbox // steered input, taken between prompts (steer.go)

	cfg       Config
	log       *slog.Logger
	proc      *childproc.Process
	conn      *sdk.ClientSideConnection
	sessionID string
	// ws is the Session's workspace binding (or its private directory),
	// the only place fs/* requests reach (client.go).
	ws           *workspace.Workspace
	wsDir        string
	observeTools bool

	runMu sync.Mutex // one Run at a time

	replay replayClock // updates outside any Run: a load's history

	// fn is the MCP server of Core's function tools (nil: none asked).
	fn *fnHost

	mu     sync.Mutex
	cur    *turn // the running Turn's mapping; nil between Runs
	closed bool
}

// startExecutor starts the agent in its own process group, initializes
// it and opens (or loads) the native session, within StartTimeout.
//
// decision: the agent's own process group, killed whole on Close: some
// ACP agents do not exit on stdin EOF and their Node wrappers leave the
// real process behind when only the wrapper is signalled.
func (a *Adapter) startExecutor(ctx context.Context, hc harness.ExecutorConfig) (kept *executor, err error) {
	cfg := a.cfg
	home, scratch, err := dirs(a.state, hc.Configuration.AgentStateKey)
	if err != nil {
		return nil, err
	}
	cwd := hc.WorkspaceDir
	if cwd == "" {
		cwd = scratch
	}
	if fns := hc.Configuration.FunctionTools; len(fns) > 0 {
		if err := checkFunctions(cfg.Agent, fns); err != nil {
			return nil, err
		}
	}
	if ms := hc.Configuration.MCPHTTPServers; ms != nil && len(*ms) > 0 {
		if err := checkMCPServers(cfg.Agent, *ms); err != nil {
			return nil, err
		}
	}
	controls, err := cfg.Agent.Controls(home, hc.Configuration)
	if err != nil {
		return nil, err
	}
	ws, err := workspace.Open(cwd)
	if err != nil {
		return nil, fmt.Errorf("acp adapter: %w", err)
	}
	proc, err := childproc.Start(cfg.Agent.Command, cfg.Agent.Args, env(cfg.Agent.Env, controls), cwd, cfg.StderrBytes)
	if err != nil {
		_ = ws.Close()
		return nil, fmt.Errorf("acp adapter: starting %s: %w", cfg.Agent.Kind, err)
	}
	e := &executor{cfg: cfg, proc: proc, ws: ws, wsDir: cwd,
		log:          cfg.Logger.With("kind", cfg.Agent.Kind, "session_id", hc.SessionID),
		observeTools: hc.Configuration.ObserveToolObservations && hc.Declaration.Capabilities.ToolObservations.Supports()}
	e.conn = sdk.NewClientSideConnection(&client{e: e}, proc.Stdin, proc.Stdout)
	// The SDK logs malformed lines whole; the adapter's logger at debug
	// keeps them out of an operator's log unless asked for.
	e.conn.SetLogger(slog.New(debugOnly{e.log.Handler()}))
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*cfg.CloseGrace)
			if cerr := e.Close(cctx); cerr != nil {
				kept, err = e, errors.Join(err, cerr)
			}
			cancel()
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	init, err := e.conn.Initialize(sctx, sdk.InitializeRequest{
		ProtocolVersion:    sdk.ProtocolVersionNumber,
		ClientInfo:         &sdk.Implementation{Name: "agentwire", Version: "1"},
		ClientCapabilities: sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}},
	})
	if err != nil {
		return nil, e.startFailed("initialize", err)
	}
	servers, err := e.mcpServers(sctx, init.AgentCapabilities.McpCapabilities, hc.Configuration)
	if err != nil {
		return nil, err
	}
	if id := hc.Configuration.AgentSessionID; id != "" {
		if !init.AgentCapabilities.LoadSession {
			return nil, fmt.Errorf("acp adapter: %s does not declare loadSession: native session %s cannot be resumed", cfg.Agent.Kind, id)
		}
		// decision: resume is always strict (daemon-protocol.txt:60): an
		// unknown session fails the preparation, never becomes a new one.
		// The history the agent replays as updates has no Run to go to and
		// is dropped (client.go).
		if b := cfg.Agent.beforeLoad; b != nil {
			if err := b(home, id); err != nil {
				return nil, e.startFailed("session/load "+id, err)
			}
		}
		if _, err := e.conn.LoadSession(sctx, sdk.LoadSessionRequest{SessionId: sdk.SessionId(id), Cwd: cwd, McpServers: servers}); err != nil {
			return nil, e.startFailed("session/load "+id, err)
		}
		e.setSession(id)
		if cfg.Agent.replaysAfterLoad {
			if err := e.replay.settle(sctx, replayQuiet); err != nil {
				return nil, e.startFailed("session/load "+id+": the history replay did not end", err)
			}
		}
	} else {
		s, err := e.conn.NewSession(sctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: servers})
		if err != nil {
			return nil, e.startFailed("session/new", err)
		}
		if s.SessionId == "" {
			return nil, e.startFailed("session/new", errors.New("the agent answered no sessionId"))
		}
		e.setSession(string(s.SessionId))
	}
	e.log.Debug("acp agent ready", "agent_session_id", e.sessionID, "pid", proc.Pid(), "agent", init.AgentInfo)
	return e, nil
}

// mcpServers is session/new's (and session/load's) mcpServers: the
// Executor's own server of Core's function tools, when the configuration
// has any, and Core's HTTP MCP servers. The agent must take HTTP servers
// (mcpCapabilities.http); a required server of Core's must answer first.
func (e *executor) mcpServers(ctx context.Context, caps sdk.McpCapabilities, p wire.PromptRequest) ([]sdk.McpServer, error) {
	servers := []sdk.McpServer{}
	var core []wire.MCPHTTPServer
	if p.MCPHTTPServers != nil {
		core = *p.MCPHTTPServers
	}
	if len(p.FunctionTools) == 0 && len(core) == 0 {
		return servers, nil
	}
	if !caps.Http {
		return nil, fmt.Errorf("acp adapter: %s does not declare mcpCapabilities.http: function tools and Core's MCP servers need HTTP MCP servers", e.cfg.Agent.Kind)
	}
	if err := awaitRequired(ctx, core); err != nil {
		return nil, err
	}
	if len(p.FunctionTools) > 0 {
		fn, err := e.startFunctions(p.FunctionTools)
		if err != nil {
			return nil, err
		}
		e.fn = fn
		servers = append(servers, fn.mcpServer())
	}
	return append(servers, coreServers(core)...), nil
}

// replayQuiet is how long a loaded session's history replay must have
// been silent before the first Run may start.
//
// decision: ACP has the agent replay the history before it answers
// session/load, and gives no end-of-replay marker; an agent that replays
// after its answer (Gemini CLI) is waited for until its replay went quiet,
// so that no replayed chunk reaches the first Run as its answer
// (daemon-protocol.txt:72: a Run's frames are its own).
const replayQuiet = 250 * time.Millisecond

// replayClock records the updates that arrived outside any Run.
type replayClock struct {
	mu   sync.Mutex
	n    int
	last time.Time
}

func (r *replayClock) seen() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.last = time.Now()
}

// settle returns once at least one update arrived and none for quiet, or
// with ctx's error.
func (r *replayClock) settle(ctx context.Context, quiet time.Duration) error {
	tick := time.NewTicker(quiet / 10)
	defer tick.Stop()
	for {
		r.mu.Lock()
		done := r.n > 0 && time.Since(r.last) >= quiet
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setSession records the native session under the lock the agent's
// notifications read it under (client.current): updates arrive as soon as
// the session exists.
func (e *executor) setSession(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sessionID = id
}

// startFailed wraps a start error with the agent's stderr when it died.
func (e *executor) startFailed(what string, err error) error {
	if !e.proc.Alive() {
		e.log.Warn("acp agent failed to start", "exit", e.proc.ExitText(), "stderr", e.proc.Stderr.String())
	}
	return fmt.Errorf("acp adapter: %s: %s: %w", e.cfg.Agent.Kind, what, err)
}

// Close ends the agent: stdin EOF, then the process group is signalled
// and killed (childproc.Stop). A close whose ctx ends first keeps the
// process owned and may be retried.
func (e *executor) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	_ = e.proc.Stdin.Close()
	_ = e.proc.Stop(ctx, e.cfg.CloseGrace) // an exit on a signal is expected
	if ctx.Err() != nil && e.proc.Alive() {
		return fmt.Errorf("acp adapter: the agent did not exit: %w", ctx.Err())
	}
	select {
	case <-e.conn.Done():
	case <-ctx.Done():
		return fmt.Errorf("acp adapter: the agent's connection did not end: %w", ctx.Err())
	}
	if text := e.proc.Stderr.String(); text != "" {
		e.log.Debug("acp agent exited", "exit", e.proc.ExitText(), "stderr", text)
	}
	e.fn.close()
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	return e.ws.Close()
}

// debugOnly logs every record at debug level.
type debugOnly struct{ slog.Handler }

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	if !d.Handler.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	return d.Handler.Handle(ctx, r)
}

func (d debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.Handler.Enabled(ctx, slog.LevelDebug)
}

var _ io.Closer = (*workspace.Workspace)(nil)

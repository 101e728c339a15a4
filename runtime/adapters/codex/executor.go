package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentwire/agentwire/internal/runtime/childproc"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// executor is one app-server process holding one thread.
type executor struct {
	a        *Adapter
	cfg      Config
	log      *slog.Logger
	proc     *childproc.Process
	conn     *rpcConn
	threadID string
	model    string
	scratch  string // the private empty cwd of an Environment-none Session, removed at Close

	observeMessages bool
	observeTools    bool
	outputSchema    json.RawMessage

	runMu sync.Mutex // one Run at a time

	mu    sync.Mutex
	cur   *turnRun        // the running Turn, nil between Runs
	total *tokenBreakdown // the thread's last reported total
	// lastStatus is the status of the last turn/completed (the proof a
	// cancellation settled, for tests and logs).
	lastStatus string
	closed     bool
	closeErr   error
}

// startExecutor starts the process, initializes the connection and starts
// or resumes the thread, within the adapter's start bound.
//
// A start that fails closes what it started; when that close is not
// confirmed the process may still run, so the executor comes back with the
// error for its owner to keep and close later (daemon-protocol.txt:177).
func startExecutor(ctx context.Context, a *Adapter, hc harness.ExecutorConfig, home string) (kept *executor, err error) {
	cfg := a.cfg
	p := hc.Configuration
	e := &executor{a: a, cfg: cfg, log: cfg.Logger.With("kind", cfg.Kind, "session", hc.SessionID), model: cfg.Model}
	e.observeMessages = p.ObserveMessages && hc.Declaration.Capabilities.MessageItems.Supports()
	e.observeTools = p.ObserveToolObservations && hc.Declaration.Capabilities.ToolObservations.Supports()
	if c := p.ExecutionControls; c != nil && c.OutputFormat != nil {
		e.outputSchema = json.RawMessage(c.OutputFormat.Schema)
	}
	cwd := hc.WorkspaceDir
	if cwd == "" {
		// decision: a Session with no execution environment runs in a
		// private empty directory the Executor owns (issue 17 §3), never in
		// the daemon's working directory.
		if err := os.MkdirAll(filepath.Join(a.state, "scratch"), 0o700); err != nil {
			return nil, fmt.Errorf("codex adapter: %w", err)
		}
		if e.scratch, err = os.MkdirTemp(filepath.Join(a.state, "scratch"), "run-"); err != nil {
			return nil, fmt.Errorf("codex adapter: %w", err)
		}
		cwd = e.scratch
	}
	proc, err := childproc.Start(cfg.Binary, cfg.args(), cfg.env(home), cwd, cfg.StderrBytes)
	if err != nil {
		e.removeScratch()
		return nil, fmt.Errorf("codex adapter: starting the app-server: %w", err)
	}
	e.proc = proc
	e.conn = newRPCConn(proc.Stdout, proc.Stdin, cfg.MaxLineBytes, e.observe, func(f string, args ...any) {
		e.log.Debug(fmt.Sprintf(f, args...))
	})
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*cfg.CloseGrace+cfg.CloseGrace)
			if cerr := e.Close(cctx); cerr != nil {
				// Dropping e here would orphan a live app-server: hand it
				// back with the error, so the daemon keeps it owned and its
				// cleanup retries the close.
				kept, err = e, errors.Join(err, cerr)
			}
			cancel()
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	var init initializeParams
	init.ClientInfo = clientInfo{Name: "agentwire", Title: "agentwire Runtime", Version: PinnedVersion}
	init.Capabilities.ExperimentalAPI = true
	if err := e.conn.Call(sctx, mInitialize, init, nil); err != nil {
		return nil, e.startFailed(err)
	}
	if err := e.conn.Notify(sctx, mInitialized, nil); err != nil {
		return nil, e.startFailed(err)
	}
	tp := threadParams{Cwd: cwd, ApprovalPolicy: "on-request", Sandbox: "workspace-write", Config: threadConfig(p)}
	for _, f := range p.FunctionTools {
		tp.DynamicTools = append(tp.DynamicTools, dynamicTool{Type: "function", Name: f.Name, Description: f.Description, InputSchema: json.RawMessage(f.Parameters)})
	}
	if o := p.AgentOptions; o != nil {
		if o.Model != nil {
			tp.Model = *o.Model
			e.model = *o.Model
		}
		if o.SystemPrompt != nil {
			// decision: the Agent's instructions are developer instructions;
			// Codex keeps its own base instructions (its tools and sandbox
			// rules depend on them).
			s := *o.SystemPrompt
			tp.DeveloperInstructions = &s
		}
	}
	var res threadResult
	if id := p.AgentSessionID; id != "" {
		tp.ThreadID, tp.ExcludeTurns = id, true
		if err := e.conn.Call(sctx, mThreadResume, tp, &res); err != nil {
			// decision: resume is always strict here: an unknown or
			// unreadable thread fails the preparation (a finite
			// preparation_failed), never a new thread (issue 17 §3,
			// daemon-protocol.txt:167).
			return nil, e.startFailed(fmt.Errorf("resuming thread %s: %w", id, err))
		}
		if res.Thread.ID != id {
			return nil, e.startFailed(fmt.Errorf("resuming thread %s: Codex answered thread %q", id, res.Thread.ID))
		}
	} else if err := e.conn.Call(sctx, mThreadStart, tp, &res); err != nil {
		return nil, e.startFailed(err)
	}
	if res.Thread.ID == "" {
		return nil, e.startFailed(errors.New("thread/start answered no thread ID"))
	}
	if err := checkSandbox(res.Sandbox); err != nil {
		return nil, e.startFailed(err)
	}
	e.threadID = res.Thread.ID
	if res.Model != "" {
		e.model = res.Model
	}
	e.log = e.log.With("thread", e.threadID)
	e.log.Debug("codex app-server ready", "pid", proc.Pid())
	return e, nil
}

// threadConfig is the thread's configuration overrides from the execution
// controls (their native names belong to the adapter,
// daemon-protocol.txt:54).
func threadConfig(p wire.PromptRequest) map[string]any {
	c := map[string]any{
		// decision: with no execution_controls the web search tool is off
		// too: Core always sends disabled (daemon-protocol.txt:54), and an
		// offline Runtime has nothing to search.
		"web_search": wire.WebSearchDisabled,
		// decision: Codex's goal tools keep thread state that no frame of
		// the protocol carries; they are switched off.
		"features.goals": false,
		// decision: the workspace-write sandbox of Codex 0.171.0 also makes
		// /tmp and $TMPDIR writable roots, so Codex wrote files there
		// without asking (measured: an apply_patch under /tmp, outside the
		// workspace, applied with no approval). A Runtime promises that
		// what its agent writes unasked stays in the Session's workspace;
		// /tmp is shared with every other process on the machine, and
		// $TMPDIR is usually /tmp or the daemon's own. Both are taken out
		// of the sandbox's writable roots, so such a write becomes a
		// permission_request the client answers. The cost: a sandboxed
		// command that needs a scratch file in /tmp fails or asks too.
		// checkSandbox verifies that Codex applied this.
		sandboxExcludeSlashTmp: true,
		sandboxExcludeTmpdir:   true,
	}
	if x := p.ExecutionControls; x != nil {
		c["web_search"] = x.WebSearch
		if x.TextVerbosity != "" {
			c["model_verbosity"] = x.TextVerbosity
		}
	}
	if p.DisableSubagents {
		c["features.multi_agent"] = false
	}
	return c
}

// The thread configuration keys that keep /tmp and $TMPDIR out of the
// workspace-write sandbox's writable roots.
const (
	sandboxExcludeSlashTmp = "sandbox_workspace_write.exclude_slash_tmp"
	sandboxExcludeTmpdir   = "sandbox_workspace_write.exclude_tmpdir_env_var"
)

// checkSandbox refuses a thread whose effective sandbox policy (what
// thread/start and thread/resume answer) would let Codex write outside the
// workspace without asking: anything but workspace-write with /tmp and
// $TMPDIR excluded, and with no extra writable roots. A thread that fails
// it fails the preparation rather than run with a wider sandbox than the
// Runtime promises.
func checkSandbox(p sandboxPolicy) error {
	if p.Type != "workspaceWrite" || !p.ExcludeSlashTmp || !p.ExcludeTmpdirEnvVar || len(p.WritableRoots) > 0 || (p.NetworkAccess != nil && p.NetworkAccess != false) {
		b, _ := json.Marshal(p)
		return fmt.Errorf("Codex applied the sandbox %s; the adapter needs workspace-write confined to the workspace (no /tmp, no $TMPDIR, no extra roots, no network)", b)
	}
	return nil
}

// startFailed wraps a start error with the app-server's stderr, which says
// why far better than a closed pipe.
func (e *executor) startFailed(err error) error {
	if !e.proc.Alive() || errors.Is(err, ErrClosed) {
		e.log.Warn("codex app-server failed to start", "exit", e.proc.ExitText(), "stderr", e.proc.Stderr.String())
	}
	return fmt.Errorf("codex adapter: %w", err)
}

// observe runs on the connection's reader for every notification, before
// it is queued: it wakes the waiters that the Run loop itself may be
// blocking (a decision waiting for Codex's resolution while the loop
// waits for the decision's receipt), and reports steered input accepted.
func (e *executor) observe(m *message) {
	switch m.Method {
	case nRequestResolved:
		var p resolvedParams
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		e.mu.Lock()
		if t := e.cur; t != nil {
			if q := t.byRPC[string(p.RequestID)]; q != nil {
				q.resolve()
			}
		}
		e.mu.Unlock()
	case nItemCompleted:
		// Codex sends no serverRequest/resolved for a dynamic tool call it
		// was answered: the call's item completing is the proof the answer
		// settled it (measured on 0.171.0; the item ID is the call ID).
		if !bytes.Contains(m.Params, []byte(`"dynamicToolCall"`)) {
			return
		}
		var p itemParams
		var it item
		if json.Unmarshal(m.Params, &p) != nil || json.Unmarshal(p.Item, &it) != nil || it.Type != itemDynamicTool {
			return
		}
		e.mu.Lock()
		if t := e.cur; t != nil && p.TurnID == t.turnID {
			if q := t.asked[it.ID]; q != nil && q.function {
				q.resolve()
			}
		}
		e.mu.Unlock()
	case nItemStarted:
		if !bytes.Contains(m.Params, []byte(`"userMessage"`)) {
			return
		}
		var p itemParams
		var it item
		if json.Unmarshal(m.Params, &p) != nil || json.Unmarshal(p.Item, &it) != nil || it.Type != itemUserMessage || it.ClientID == nil {
			return
		}
		e.mu.Lock()
		t := e.cur
		var s *steer
		if t != nil && (p.TurnID == t.turnID || t.turnID == "") {
			s = t.steers[*it.ClientID]
		}
		e.mu.Unlock()
		if s != nil {
			s.accept()
		}
	}
}

// running returns the Turn runID when it is the running one.
func (e *executor) running(runID string) *turnRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil || e.cur.runID != runID || e.cur.ended {
		return nil
	}
	return e.cur
}

// Steer writes active input into the running turn with turn/steer. It
// returns once the request line is written (the written phase,
// daemon-protocol.txt:143); Codex's answer and the user message that
// echoes the input ID come later and are reported through Turn.Notify.
func (e *executor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	t := e.running(runID)
	if t == nil {
		return harness.ErrRunInactive
	}
	if err := harness.CheckSteer(t.caps, in); err != nil {
		return err
	}
	if in.HasImage() {
		// Whatever the snapshot says, images are refused, never dropped.
		return &harness.UnsupportedError{Capability: "message_images", What: "prompt_steer.input"}
	}
	select {
	case <-t.turnKnown:
	case <-t.endedCh:
		return harness.ErrRunInactive
	case <-ctx.Done():
		return ctx.Err()
	}
	s := &steer{inputID: inputID, notify: t.notify}
	e.mu.Lock()
	if t.ended {
		e.mu.Unlock()
		return harness.ErrRunInactive
	}
	t.steers[inputID] = s
	e.mu.Unlock()
	k, err := e.conn.Start(ctx, mTurnSteer, turnSteerParams{ThreadID: e.threadID, ExpectedTurnID: t.turnID, ClientUserMessageID: inputID, Input: textInput(in)})
	if err != nil {
		e.mu.Lock()
		delete(t.steers, inputID)
		e.mu.Unlock()
		return err
	}
	go func() {
		// The answer comes within the connection's life; a connection that
		// ends first leaves the input's fate unknown.
		_, err := k.Wait(context.Background())
		s.answered(err)
	}()
	return nil
}

// Decide answers an open approval. It returns nil once Codex confirmed the
// answer settled the request (serverRequest/resolved for it), which is
// what applied means (daemon-protocol.txt:145).
func (e *executor) Decide(ctx context.Context, runID string, a harness.Answer) error {
	t := e.running(runID)
	if t == nil {
		return harness.ErrRunInactive
	}
	if err := harness.CheckAnswer(t.caps, a); err != nil {
		return err
	}
	e.mu.Lock()
	q := t.asked[a.InteractionID]
	if q == nil || q.answered || q.isResolved() {
		e.mu.Unlock()
		return harness.ErrRunInactive
	}
	result, err := answerOf(q, a)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	q.answered = true
	e.mu.Unlock()
	if err := e.conn.Respond(ctx, q.method, q.rpcID, result); err != nil {
		if !e.conn.broken() {
			// Nothing was written: the question is still open.
			e.mu.Lock()
			q.answered = false
			e.mu.Unlock()
		}
		return err
	}
	select {
	case <-q.resolved:
		return nil
	case <-t.endedCh:
		// The turn ended before Codex confirmed the answer: whether it
		// counted is unknown, so it is not reported applied.
		if q.isResolved() {
			return nil
		}
		return errors.New("codex adapter: the turn ended before Codex confirmed the answer")
	case <-ctx.Done():
		return fmt.Errorf("codex adapter: the answer was written but Codex did not confirm it: %w", ctx.Err())
	case <-e.conn.Done():
		return fmt.Errorf("codex adapter: the answer was written but the app-server ended: %w", e.conn.Err())
	}
}

// answerOf is Codex's answer to q from Core's answer a.
func answerOf(q *question, a harness.Answer) (any, error) {
	switch {
	case q.function && a.Result != nil:
		res := toolCallResponse{ContentItems: []toolContent{}, Success: a.Result.Success != nil && *a.Result.Success}
		for _, c := range a.Result.Content {
			if c.Type != wire.ContentText {
				// function_result_images is false; the gate refuses images
				// before this, and one that gets here is never dropped.
				return nil, &harness.UnsupportedError{Capability: "function_result_images", What: "function_result.content"}
			}
			res.ContentItems = append(res.ContentItems, toolContent{Type: "inputText", Text: c.Text})
		}
		return res, nil
	case !q.function && a.Permission != nil:
		if a.Permission.Approved == nil {
			return nil, errors.New("codex adapter: a permission decision without a verdict")
		}
		approved := *a.Permission.Approved
		if approved && len(a.Permission.UpdatedInput) > 0 {
			// decision: Codex runs the command or patch it asked about and
			// takes no replacement input, so an approval that changes the
			// input cannot be honoured as given; it is refused, and the
			// request stays open.
			return nil, errors.New("codex adapter: Codex cannot run a changed input; approve without updated_input or deny")
		}
		if approved {
			return map[string]string{"decision": "accept"}, nil
		}
		return map[string]string{"decision": "decline"}, nil
	case q.function:
		return nil, fmt.Errorf("codex adapter: %s is a function call; it takes a function_result", q.interactionID)
	}
	return nil, fmt.Errorf("codex adapter: %s is a permission request; it takes a permission decision", q.interactionID)
}

// Close ends the app-server: stdin EOF, then the process group is
// signalled and killed (process.stop). A close whose ctx ends first keeps
// the process owned and may be retried.
func (e *executor) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed && e.closeErr == nil {
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	_ = e.conn.CloseWrite()
	err := e.proc.Stop(ctx, e.cfg.CloseGrace)
	if ctx.Err() != nil && e.proc.Alive() {
		e.mu.Lock()
		e.closeErr = fmt.Errorf("codex adapter: the app-server did not exit: %w", ctx.Err())
		e.mu.Unlock()
		return e.closeErr
	}
	if text := e.proc.Stderr.String(); text != "" {
		e.log.Debug("codex app-server exited", "exit", e.proc.ExitText(), "stderr", text)
	}
	_ = err // a non-zero exit after the signals is expected
	e.removeScratch()
	e.mu.Lock()
	e.closed, e.closeErr = true, nil
	e.mu.Unlock()
	return nil
}

func (e *executor) removeScratch() {
	if e.scratch != "" {
		if err := os.RemoveAll(e.scratch); err != nil {
			e.log.Warn("codex adapter: removing the private working directory", "dir", e.scratch, "err", err)
		}
	}
}

// textInput converts the ordered input: every text item, in message and
// content order (images were refused before).
func textInput(in wire.MessageInput) []userInput {
	var out []userInput
	for _, m := range in {
		for _, c := range m.Content {
			if c.Type == wire.ContentText {
				out = append(out, userInput{Type: "text", Text: c.Text, TextElements: []any{}})
			}
		}
	}
	return out
}

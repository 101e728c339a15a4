package codex

// The Harness conformance kit (runtime/harnesstest) against the
// REAL Codex CLI: every capability the adapter declares true passes its
// acceptance scenario, every one declared false its refusal. The kit says
// what the native side must do in each Turn (a Plan); the hook below turns
// the Plan into the scripted model endpoint's answers for that Turn's
// requests, so Codex itself streams, thinks, runs commands, asks for
// approvals, calls functions and takes steered input.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/runtime/harnesstest"
	"github.com/agentwire/agentwire/wire"
)

// kitTimeout bounds each Turn and wait of the kit: a failure bound for the
// real CLI on a loaded machine, never a wait the test relies on.
const kitTimeout = 90 * time.Second

func TestHarnessCodexConformance(t *testing.T) {
	bin := install.RequireCodex(t)
	n := &kitNative{scripts: map[string]*kitScript{}, threads: map[string]string{}, execs: map[string]*executor{},
		said: map[string]string{}, done: make(chan struct{})}
	// The app-server runs behind a wrapper that counts the processes
	// started, so that a refusal is also proven to start none.
	dir := t.TempDir()
	n.procFile = filepath.Join(dir, "app-server-starts")
	wrapper := filepath.Join(dir, "codex")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = app-server ]; then echo started >> %s; fi\nexec %s \"$@\"\n", shellQuote(n.procFile), shellQuote(bin))
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))

	// One endpoint for the whole run: every request is answered from the
	// script of the Session whose Codex thread sent it (the thread-id
	// header), strictly in order; a request no script expects is a
	// failure, never a default answer.
	r := newRig(t, func(c *Config) { c.Binary = wrapper }, modeltest.WithFallback(n.respond))
	n.srv, n.a = r.srv, r.a
	defer close(n.done)

	began := time.Now()
	report := harnesstest.Run(t, harnesstest.Config{
		Adapter: kitAdapter{n},
		Default: n.hook,
		// Codex streams its reasoning summary (item/reasoning/*Delta).
		Thinking: true,
		// request_user_input exists only in Codex's Plan collaboration mode,
		// which the adapter never starts, and the adapter refuses
		// item/tool/requestUserInput natively: it never asks
		// prompt_for_user_choice.
		UserChoice: false,
		// Codex settles an unanswered approval only when its turn ends
		// with it pending (an interruption); the adapter then withdraws it
		// (events.go: withdrawOpen), but only in a cancelled Turn, which
		// the kit's check of this flag leaves out. Codex never withdraws a
		// request on its own while the turn goes on.
		Withdrawal: false,
		// A native operation of a Turn is a model request: preparation
		// (the app-server) belongs to NewExecutor, which the image refusal
		// scenario runs before it counts. Processes are checked separately
		// for the Turns expected refused (kitNative.checkRefusals).
		NativeCalls: func() int { return len(n.srv.TurnRequests()) },
		Timeout:     kitTimeout,
	})
	n.checkRefusals(t)
	t.Logf("conformance: %d of %d scenarios passed in %s (%d app-servers, %d model requests)", report.Passed(), len(report.Scenarios),
		time.Since(began).Round(time.Millisecond), n.procs(), len(n.srv.TurnRequests()))
	assert.Positive(t, n.procs(), "the wrapper counted no app-server: the refusals' process check proved nothing")

	n.mu.Lock()
	defer n.mu.Unlock()
	assert.Empty(t, n.strays, "model requests no scenario scripted")
	assert.Empty(t, n.problems, "requests the scripts could not answer as planned")
	for sid, sc := range n.scripts {
		if sc != nil && sc.next < len(sc.reqs) {
			t.Logf("scenario %s (session %s): %d of %d scripted model requests were not made (a cancelled or refused Turn)", sc.name, sid, len(sc.reqs)-sc.next, len(sc.reqs))
		}
	}
}

// kitAdapter is the adapter under test, unchanged: NewExecutor returns the
// adapter's own Executor; it only records which Codex thread serves which
// Session, for the endpoint's scripts and the hook's checks.
type kitAdapter struct{ n *kitNative }

func (k kitAdapter) Declaration() harness.Declaration { return k.n.a.Declaration() }

func (k kitAdapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	exe, err := k.n.a.NewExecutor(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if e, ok := exe.(*executor); ok {
		k.n.mu.Lock()
		k.n.threads[e.threadID] = cfg.SessionID
		k.n.execs[cfg.SessionID] = e
		k.n.mu.Unlock()
	}
	return exe, nil
}

// kitNative is the native side the kit drives: the scripted endpoint and,
// per Session, the script of its current Turn.
type kitNative struct {
	srv      *modeltest.Server
	a        *Adapter
	procFile string
	done     chan struct{}

	mu       sync.Mutex
	scripts  map[string]*kitScript // by Session ID: its current Turn's
	threads  map[string]string     // Codex thread ID → Session ID
	execs    map[string]*executor  // by Session ID: its latest Executor
	said     map[string]string     // by Session ID: what its last Turn said
	refusals []kitRefusal          // configuration refusals still to check
	strays   []string
	problems []string
	seq      int
}

// kitScript is one Turn's model requests, answered in order.
type kitScript struct {
	name   string
	reqs   []*kitRequest
	next   int
	served []*modeltest.Request
}

// kitRequest is the answer to one model request: parts computed from the
// request (the input it echoes, the tool result it quotes), the usage it
// reports, or a failure.
type kitRequest struct {
	parts []func(*modeltest.Request) []modeltest.Part
	usage *modeltest.Usage
	fail  string
}

func (q *kitRequest) add(p ...modeltest.Part) {
	q.parts = append(q.parts, func(*modeltest.Request) []modeltest.Part { return p })
}

// kitRefusal is a configuration refusal and the app-server count before it.
type kitRefusal struct {
	name  string
	procs int
}

func (n *kitNative) procs() int {
	b, err := os.ReadFile(n.procFile)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// checkRefusals asserts that no app-server started for a Turn the kit
// expected refused before any native call. The kit runs one
// scenario at a time, so the processes started from one refusal's hook to
// the next hook are the refused Turn's.
func (n *kitNative) checkRefusals(t *testing.T) {
	n.mu.Lock()
	list := n.refusals
	n.refusals = nil
	n.mu.Unlock()
	now := n.procs()
	for _, r := range list {
		assert.Equal(t, r.procs, now, "%s: the refusal started a Codex app-server", r.name)
	}
}

// respond answers a model request from the script of the Session whose
// thread sent it.
func (n *kitNative) respond(r *modeltest.Request) modeltest.Turn {
	thread := r.Header.Get("thread-id")
	n.mu.Lock()
	sid, known := n.threads[thread]
	sc := n.scripts[sid]
	if !known || sc == nil || sc.next >= len(sc.reqs) {
		what := "no Session"
		if known {
			what = "no scripted request left for Session " + sid
			if sc != nil {
				what += " (" + sc.name + ")"
			}
		}
		n.strays = append(n.strays, fmt.Sprintf("request %d from thread %q: %s; last user text %q", r.TurnSeq, thread, what, r.LastUserText()))
		n.mu.Unlock()
		return modeltest.Fail(http.StatusBadRequest, "harnesstest: no scripted answer for this request")
	}
	q := sc.reqs[sc.next]
	sc.next++
	sc.served = append(sc.served, r)
	n.mu.Unlock()
	if q.fail != "" && len(q.parts) == 0 {
		return modeltest.FailWith(modeltest.HTTPError{Status: http.StatusInternalServerError, Type: "server_error", Message: q.fail})
	}
	var parts []modeltest.Part
	for _, f := range q.parts {
		parts = append(parts, f(r)...)
	}
	if q.fail != "" {
		parts = append(parts, modeltest.StreamError(modeltest.HTTPError{Status: http.StatusInternalServerError, Type: "server_error", Message: q.fail}))
	}
	turn := modeltest.Reply(parts...)
	if q.usage != nil {
		turn = turn.WithUsage(*q.usage)
	}
	return turn
}

func (n *kitNative) problem(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.problems = append(n.problems, fmt.Sprintf(format, args...))
}

// hook makes Codex's next Turn of s follow s.Plan.
func (n *kitNative) hook(t *testing.T, s *harnesstest.Scenario) {
	n.checkRefusals(t)
	if s.Refused {
		// Nothing is scripted: the Turn must never reach the model, and a
		// request it made anyway finds no script (a stray, which fails).
		n.mu.Lock()
		delete(n.scripts, s.SessionID)
		if s.Config.AgentSessionID == "" {
			// A strict resume of an unknown thread needs Codex to look it
			// up; every other refusal comes before any process.
			n.refusals = append(n.refusals, kitRefusal{name: s.Name, procs: n.procs()})
		}
		n.mu.Unlock()
		return
	}
	sc := n.compile(t, s)
	n.mu.Lock()
	n.scripts[s.SessionID] = sc
	prev := n.said[s.SessionID]
	n.said[s.SessionID] = s.Plan.Text()
	n.mu.Unlock()
	s.Verify = n.verifier(s, sc, prev)
}

// compile lays the Plan out as model requests: a step that needs the
// model's next request (a tool run, an approval, a function call, a
// steered input) ends one request, and the steps after it answer the next.
func (n *kitNative) compile(t *testing.T, s *harnesstest.Scenario) *kitScript {
	t.Helper()
	sc := &kitScript{name: s.Name}
	cur := &kitRequest{}
	push := func() {
		sc.reqs = append(sc.reqs, cur)
		cur = &kitRequest{}
	}
	var target, reported modeltest.Usage // cumulative usage: planned, and reported by earlier requests
	usage := false
	for _, st := range s.Plan {
		if st.Usage != nil {
			usage = true
		}
	}
	setUsage := func() {
		if usage {
			u := usageMinus(target, reported)
			cur.usage = &u
			reported = target
		}
	}
	ended := false
	for _, st := range s.Plan {
		switch {
		case len(st.Say) > 0:
			cur.add(modeltest.Text(st.Say...))
		case st.Think != "":
			cur.add(modeltest.Reasoning(halves(st.Think)...))
		case st.Echo:
			cur.parts = append(cur.parts, n.echoInput)
		case st.Tool != nil:
			cur.add(modeltest.CodexExec(kitToolCommand(st.Tool)))
			setUsage()
			push()
		case st.Ask != nil:
			cur.add(modeltest.CodexExecEscalated("echo "+n.askProof(), "harnesstest asks to run "+st.Ask.Tool))
			setUsage()
			push()
		case st.Call != nil:
			cur.add(modeltest.FunctionCall(st.Call.Name, json.RawMessage(st.Call.Args)))
			setUsage()
			push()
			// The native side then says the text of the result it got.
			cur.parts = append(cur.parts, n.echoToolResult)
		case st.AwaitInput:
			// The stream holds after what it said until Codex has taken
			// the steered input; the turn's next request carries it.
			gate := modeltest.NewGate()
			cur.add(modeltest.Hold(gate))
			go n.openOnSteer(gate, s.SessionID)
			setUsage()
			push()
			cur.parts = append(cur.parts, n.echoSteered)
		case st.Usage != nil:
			target = kitUsage(st.Usage[len(st.Usage)-1])
		case st.JSON != "":
			cur.add(modeltest.Text(halves(st.JSON)...))
		case st.Fail != "":
			cur.fail = st.Fail
			ended = true
		case st.Hang:
			// Held until Codex interrupts the turn and drops the stream
			// (or the endpoint closes at the test's end).
			cur.add(modeltest.Hold(modeltest.NewGate()))
			ended = true
		case st.Withdraw != nil:
			t.Fatalf("%s: Codex never withdraws a request of its own outside an interruption (Config.Withdrawal is false)", s.Name)
		case st.Choice != nil:
			t.Fatalf("%s: the adapter never asks user choices (Config.UserChoice is false)", s.Name)
		default:
			t.Fatalf("%s: a plan step the Codex hook does not know: %+v", s.Name, st)
		}
		if ended {
			break
		}
	}
	setUsage()
	push()
	return sc
}

// askProof is what an approved command prints.
func (n *kitNative) askProof() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	return fmt.Sprintf("kit-approved-%d", n.seq)
}

// kitToolCommand is the shell command Codex runs for a kit tool: its name
// and, when it has one, its path argument; sandboxed, so it needs no
// approval.
func kitToolCommand(tl *harnesstest.Tool) string {
	cmd := tl.Name
	var args struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(tl.Args, &args) == nil && args.Path != "" {
		cmd += " " + shellQuote(args.Path)
	}
	return cmd
}

// echoInput says the Turn's input as Codex sent it: the text parts of the
// last user message, in order.
func (n *kitNative) echoInput(r *modeltest.Request) []modeltest.Part {
	parts := lastUserParts(r)
	if len(parts) == 0 {
		n.problem("request %d: no user message to echo", r.TurnSeq)
		return nil
	}
	return []modeltest.Part{modeltest.Text(parts...)}
}

// echoToolResult says the text of the function result the model got.
func (n *kitNative) echoToolResult(r *modeltest.Request) []modeltest.Part {
	tr, ok := r.LastToolResult()
	if !ok || tr.Output == "" {
		n.problem("request %d: no function result to quote", r.TurnSeq)
		return nil
	}
	return []modeltest.Part{modeltest.Text(tr.Output)}
}

// echoSteered says the steered input, the request's last user text.
func (n *kitNative) echoSteered(r *modeltest.Request) []modeltest.Part {
	in := r.LastUserText()
	if in == "" {
		n.problem("request %d: no steered input", r.TurnSeq)
		return nil
	}
	return []modeltest.Part{modeltest.Text(in)}
}

// lastUserParts is the text parts of the request's last user message.
func lastUserParts(r *modeltest.Request) []string {
	items, _ := r.Body["input"].([]any)
	for i := len(items) - 1; i >= 0; i-- {
		m, _ := items[i].(map[string]any)
		if m["type"] != "message" || m["role"] != "user" {
			continue
		}
		var out []string
		content, _ := m["content"].([]any)
		for _, c := range content {
			p, _ := c.(map[string]any)
			if s, ok := p["text"].(string); ok && p["type"] == "input_text" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// openOnSteer opens gate once Codex has taken the steered input of the
// Session's running turn (turn/steer answered) or refused it, so the held
// stream completes only when the input is queued for the same turn. A
// turn that is no longer running has nothing to wait for.
func (n *kitNative) openOnSteer(gate *modeltest.Gate, sid string) {
	defer gate.Open()
	bound := time.NewTimer(kitTimeout)
	defer bound.Stop()
	select {
	case <-gate.Reached():
	case <-n.done:
		return
	case <-bound.C:
		return
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !n.steerTaken(sid) {
		select {
		case <-tick.C:
		case <-n.done:
			return
		case <-bound.C:
			return
		}
	}
}

func (n *kitNative) steerTaken(sid string) bool {
	n.mu.Lock()
	e := n.execs[sid]
	n.mu.Unlock()
	if e == nil {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil {
		return true
	}
	for _, s := range e.cur.steers {
		s.mu.Lock()
		taken := s.ok || s.notified
		s.mu.Unlock()
		if taken {
			return true
		}
	}
	return false
}

// served is the requests s's script answered so far.
func (n *kitNative) served(sc *kitScript) []*modeltest.Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*modeltest.Request(nil), sc.served...)
}

// verifier checks, after the Turn, what only the native side shows: the
// model requests Codex made for it.
func (n *kitNative) verifier(s *harnesstest.Scenario, sc *kitScript, prevSaid string) func(*testing.T, *harnesstest.Result) {
	cfg := s.Config
	return func(t *testing.T, r *harnesstest.Result) {
		t.Helper()
		reqs := n.served(sc)
		require.NotEmpty(t, reqs, "%s: Codex made no model request", s.Name)
		first := reqs[0]
		verbosity := func(q *modeltest.Request) any { m, _ := q.Body["text"].(map[string]any); return m["verbosity"] }
		webSearch := func(q *modeltest.Request) bool {
			for _, tl := range q.Tools() {
				if strings.Contains(tl.Name, "web_search") || tl.Type == "web_search" {
					return true
				}
			}
			return false
		}
		if x := cfg.ExecutionControls; x != nil {
			// Every Turn: the controls reached the model request.
			assert.Equal(t, string(x.TextVerbosity), verbosity(first), "the text verbosity Codex sent")
			assert.Equal(t, x.WebSearch != wire.WebSearchDisabled, webSearch(first), "web search offered to the model: %v", first.ToolNames())
			if f := x.OutputFormat; f != nil && f.Type == wire.OutputFormatJSONSchema {
				textCfg, _ := first.Body["text"].(map[string]any)
				format, _ := textCfg["format"].(map[string]any)
				require.NotNil(t, format, "no text.format in the model request")
				assert.Equal(t, "json_schema", format["type"])
				got, _ := json.Marshal(format["schema"])
				assert.JSONEq(t, string(f.Schema), string(got), "the output schema Codex sent")
			}
		}
		if cfg.DisableSubagents {
			assert.NotContains(t, string(first.RawBody), "multi_agent", "subagents disabled: Codex offers no multi-agent tools")
		}
		for _, f := range cfg.FunctionTools {
			assert.True(t, first.HasTool(f.Name), "the function %s is offered to the model: %v", f.Name, first.ToolNames())
		}
		if cfg.AgentSessionID != "" && prevSaid != "" {
			assert.Contains(t, string(first.RawBody), prevSaid, "the resumed thread carries the earlier answer")
		}
		if r.Scenario.WorkspaceDir != "" {
			assert.Contains(t, string(first.RawBody), "<cwd>"+r.Scenario.WorkspaceDir+"</cwd>", "Codex runs in the Environment's workspace")
		}
		for i, st := range s.Plan {
			switch {
			case st.Echo:
				var want []string
				for _, m := range r.Scenario.Input {
					for _, c := range m.Content {
						if c.Type == wire.ContentText {
							want = append(want, c.Text)
						}
					}
				}
				assert.Equal(t, want, lastUserParts(first), "the input's text parts reached the model, in order")
			case st.Ask != nil:
				require.GreaterOrEqual(t, len(reqs), 2, "the model never got the command's outcome")
				tr, ok := reqs[1].LastToolResult()
				require.True(t, ok, "the model got the command's outcome")
				if st.Ask.Approve {
					assert.Contains(t, tr.Output, "kit-approved-", "the approved command ran")
				} else {
					assert.NotContains(t, tr.Output, "kit-approved-", "the denied command did not run")
					assert.Contains(t, strings.ToLower(tr.Output), "rejected", "the model was told the command was rejected")
				}
			case st.Tool != nil:
				require.GreaterOrEqual(t, len(reqs), 2, "the model never got the tool's outcome")
				_, ok := reqs[1].LastToolResult()
				assert.True(t, ok, "the tool's output went back to the model")
			case st.Call != nil:
				require.GreaterOrEqual(t, len(reqs), 2, "the model never got the function result")
				tr, ok := reqs[1].LastToolResult()
				require.True(t, ok)
				var want []string
				for _, c := range st.Call.Result {
					want = append(want, c.Text)
				}
				assert.Equal(t, strings.Join(want, "\n"), tr.Output, "the function result the model got")
			case st.AwaitInput:
				require.Len(t, r.Steers, 1)
				require.GreaterOrEqual(t, len(reqs), 2, "the steered input never reached the model")
				var steered []string
				for _, m := range r.Steers[0].Input {
					for _, c := range m.Content {
						steered = append(steered, c.Text)
					}
				}
				assert.NotContains(t, string(first.RawBody), steered[0], "the input was written after the turn's first request")
				assert.Equal(t, strings.Join(steered, ""), reqs[1].LastUserText(), "the steered input reached the model in the same turn")
			case st.Usage != nil:
				want := kitUsage(st.Usage[len(st.Usage)-1])
				require.NotNil(t, r.Done.Usage.Tokens, "done carries no token usage")
				tk := r.Done.Usage.Tokens
				assert.Equal(t, [4]int64{want.InputTokens, want.CachedTokens, want.OutputTokens, want.ReasoningTokens},
					[4]int64{*tk.InputTokens, *tk.CachedInputTokens, *tk.OutputTokens, *tk.ReasoningOutputTokens}, "the usage Codex measured (step %d)", i)
			case st.Hang && r.Cancelled:
				n.mu.Lock()
				e := n.execs[s.SessionID]
				n.mu.Unlock()
				require.NotNil(t, e)
				assert.Equal(t, turnInterrupted, e.status(), "the cancellation settled natively (turn/completed interrupted)")
			}
		}
	}
}

// kitUsage is a usage snapshot as the endpoint reports it.
func kitUsage(u wire.Usage) modeltest.Usage {
	var m modeltest.Usage
	get := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	if tk := u.Tokens; tk != nil {
		m.InputTokens, m.CachedTokens = get(tk.InputTokens), get(tk.CachedInputTokens)
		m.OutputTokens, m.ReasoningTokens = get(tk.OutputTokens), get(tk.ReasoningOutputTokens)
		return m
	}
	if u.InputTokens != nil {
		m.InputTokens = int64(*u.InputTokens)
	}
	if u.OutputTokens != nil {
		m.OutputTokens = int64(*u.OutputTokens)
	}
	return m
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// usageMinus is a - b, never below zero.
func usageMinus(a, b modeltest.Usage) modeltest.Usage {
	sub := func(x, y int64) int64 { return max(x-y, 0) }
	return modeltest.Usage{InputTokens: sub(a.InputTokens, b.InputTokens), CachedTokens: sub(a.CachedTokens, b.CachedTokens),
		CacheWriteTokens: sub(a.CacheWriteTokens, b.CacheWriteTokens), OutputTokens: sub(a.OutputTokens, b.OutputTokens),
		ReasoningTokens: sub(a.ReasoningTokens, b.ReasoningTokens)}
}

// halves cuts s into two deltas at a space near its middle (one when it
// has none), so that joining deltas is exercised.
func halves(s string) []string {
	i := strings.Index(s[len(s)/2:], " ")
	if i < 0 {
		return []string{s}
	}
	i += len(s) / 2
	return []string{s[:i], s[i:]}
}

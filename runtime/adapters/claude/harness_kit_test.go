package claude

// The Harness conformance kit (runtime/harnesstest) against the
// REAL Claude Code CLI: every capability the adapter declares true passes
// its acceptance scenario, every one declared false its refusal. The hook
// turns the kit's Plan into the scripted endpoint's answers for the
// Session's model requests, found by the native Session the request names
// (X-Claude-Code-Session-Id).

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

func TestHarnessClaudeConformance(t *testing.T) {
	bin := install.RequireClaude(t)
	n := &kitNative{scripts: map[string]*kitScript{}, natives: map[string]string{}, execs: map[string]*executor{}, done: make(chan struct{})}
	// The CLI runs behind a wrapper that counts the processes started, so
	// that a refusal is also proven to start none.
	dir := t.TempDir()
	n.procFile = filepath.Join(dir, "claude-starts")
	wrapper := filepath.Join(dir, "claude")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -p ]; then echo started >> %s; fi\nexec %s \"$@\"\n", shellQuote(n.procFile), shellQuote(bin))
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	t.Setenv(keyEnv, testKey)
	srv := modeltest.New(t, modeltest.WithFallback(n.respond))
	a, err := New(Config{Binary: wrapper, Model: "scripted-model", BaseURL: srv.URL(), APIKeyEnv: keyEnv, StateDir: t.TempDir()})
	require.NoError(t, err)
	require.True(t, a.Declaration().Available)
	n.srv, n.a = srv, a
	defer close(n.done)

	began := time.Now()
	report := harnesstest.Run(t, harnesstest.Config{
		Adapter:  kitAdapter{n},
		Default:  n.hook,
		Thinking: true, // thinking_delta → thinking
		// The adapter asks prompt_for_user_choice only when the model calls
		// AskUserQuestion, which no kit plan does; TestHarnessClaudeUserChoice
		// proves it.
		UserChoice: false,
		// The CLI withdraws a prompt only when its Turn is interrupted.
		Withdrawal:  false,
		NativeCalls: func() int { return len(n.srv.TurnRequests()) },
		Timeout:     cliWait,
	})
	n.checkRefusals(t)
	t.Logf("conformance: %d of %d scenarios passed in %s (%d CLI processes, %d model requests)", report.Passed(), len(report.Scenarios),
		time.Since(began).Round(time.Millisecond), n.procs(), len(n.srv.TurnRequests()))
	n.mu.Lock()
	defer n.mu.Unlock()
	assert.Empty(t, n.strays, "model requests no scenario scripted")
	assert.Empty(t, n.problems, "requests the scripts could not answer as planned")
}

// kitAdapter is the adapter under test, unchanged; it records which native
// Session serves which Session, for the endpoint's scripts.
type kitAdapter struct{ n *kitNative }

func (k kitAdapter) Declaration() harness.Declaration { return k.n.a.Declaration() }

func (k kitAdapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	exe, err := k.n.a.NewExecutor(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if e, ok := exe.(*executor); ok {
		k.n.mu.Lock()
		k.n.natives[e.sessionID] = cfg.SessionID
		k.n.execs[cfg.SessionID] = e
		k.n.mu.Unlock()
	}
	return exe, nil
}

// kitNative is the native side the kit drives.
type kitNative struct {
	srv      *modeltest.Server
	a        *Adapter
	procFile string
	done     chan struct{}

	mu       sync.Mutex
	scripts  map[string]*kitScript // by Session ID: its current Turn's
	natives  map[string]string     // native Session ID → Session ID
	execs    map[string]*executor  // by Session ID: its latest Executor
	refusals []kitRefusal
	strays   []string
	problems []string
	seq      int
}

type kitScript struct {
	name   string
	reqs   []*kitRequest
	next   int
	served []*modeltest.Request
}

type kitRequest struct {
	parts []func(*modeltest.Request) []modeltest.Part
	usage *modeltest.Usage
	fail  string
}

func (q *kitRequest) add(p ...modeltest.Part) {
	q.parts = append(q.parts, func(*modeltest.Request) []modeltest.Part { return p })
}

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

// checkRefusals: no CLI started for a Turn refused before any native call.
func (n *kitNative) checkRefusals(t *testing.T) {
	n.mu.Lock()
	list := n.refusals
	n.refusals = nil
	n.mu.Unlock()
	now := n.procs()
	for _, r := range list {
		assert.Equal(t, r.procs, now, "%s: the refusal started a CLI", r.name)
	}
}

// respond answers a model request from the script of the Session whose
// native Session sent it.
func (n *kitNative) respond(r *modeltest.Request) modeltest.Turn {
	native := r.Header.Get("X-Claude-Code-Session-Id")
	n.mu.Lock()
	sid, known := n.natives[native]
	sc := n.scripts[sid]
	if known && sc != nil && sc.next >= len(sc.reqs) && sc.next > 0 && sc.reqs[sc.next-1].fail != "" {
		// Claude Code retries a failed call (CLAUDE_CODE_MAX_RETRIES): the
		// retry is answered as the call was, and fails the same way.
		sc.next--
	}
	if !known || sc == nil || sc.next >= len(sc.reqs) {
		n.strays = append(n.strays, fmt.Sprintf("request %d from native Session %q (known %v): last user text %q", r.TurnSeq, native, known, r.LastUserText()))
		n.mu.Unlock()
		return modeltest.Fail(http.StatusBadRequest, "harnesstest: no scripted answer for this request")
	}
	q := sc.reqs[sc.next]
	sc.next++
	sc.served = append(sc.served, r)
	n.mu.Unlock()
	if q.fail != "" && len(q.parts) == 0 {
		return modeltest.FailWith(modeltest.HTTPError{Status: http.StatusInternalServerError, Type: "api_error", Message: q.fail})
	}
	var parts []modeltest.Part
	for _, f := range q.parts {
		parts = append(parts, f(r)...)
	}
	if q.fail != "" {
		parts = append(parts, modeltest.StreamError(modeltest.HTTPError{Status: http.StatusInternalServerError, Type: "api_error", Message: q.fail}))
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

// hook makes the CLI's next Turn of s follow s.Plan.
func (n *kitNative) hook(t *testing.T, s *harnesstest.Scenario) {
	n.checkRefusals(t)
	if s.Refused {
		n.mu.Lock()
		delete(n.scripts, s.SessionID)
		if s.Config.AgentSessionID == "" && !requiresMCP(s.Config) {
			// A strict resume of an unknown Session needs the CLI to look
			// it up, and a required MCP server that is down needs it to
			// try to connect; every other refusal comes before any process.
			n.refusals = append(n.refusals, kitRefusal{name: s.Name, procs: n.procs()})
		}
		n.mu.Unlock()
		return
	}
	sc := n.compile(t, s)
	n.mu.Lock()
	n.scripts[s.SessionID] = sc
	n.mu.Unlock()
	s.Verify = n.verifier(s, sc)
}

// requiresMCP: the configuration names a required HTTP MCP server.
func requiresMCP(c wire.PromptRequest) bool {
	if c.MCPHTTPServers == nil {
		return false
	}
	for _, s := range *c.MCPHTTPServers {
		if s.Required {
			return true
		}
	}
	return false
}

// compile lays the Plan out as model requests: a tool, an approval or a
// steered input ends one request, and the steps after it answer the next.
func (n *kitNative) compile(t *testing.T, s *harnesstest.Scenario) *kitScript {
	t.Helper()
	sc := &kitScript{name: s.Name}
	cur := &kitRequest{}
	push := func() {
		sc.reqs = append(sc.reqs, cur)
		cur = &kitRequest{}
	}
	var target, reported modeltest.Usage
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
			// A read-only tool runs without a permission prompt.
			cur.add(modeltest.FunctionCall("Glob", map[string]any{"pattern": "*"}))
			setUsage()
			push()
		case st.Ask != nil:
			// A command that writes a file: Claude Code asks before running
			// it (a bare echo it runs unasked).
			proof := n.askProof()
			cur.add(modeltest.ClaudeBash("echo "+proof+" | tee "+proof+".txt", "harnesstest asks to run "+st.Ask.Tool))
			setUsage()
			push()
		case st.Call != nil:
			// Core's functions are the tools of the adapter's MCP server.
			cur.add(modeltest.FunctionCall(mcpToolPrefix+st.Call.Name, json.RawMessage(st.Call.Args)))
			setUsage()
			push()
			cur.parts = append(cur.parts, n.echoToolResult)
		case st.MCP != nil:
			// Claude Code names an HTTP MCP server's tool
			// mcp__<label>__<tool>; one outside allowed_tools is denied,
			// and the model goes on with the plan.
			cur.add(modeltest.FunctionCall("mcp__"+st.MCP.Server+"__"+st.MCP.Tool, json.RawMessage(st.MCP.Args)))
			setUsage()
			push()
			if !st.MCP.Outside {
				cur.parts = append(cur.parts, n.echoToolResult)
			}
		case st.AwaitInput:
			// The stream holds until the input is written; the CLI takes it
			// after the result, as a follow-up whose request carries it.
			gate := modeltest.NewGate()
			cur.add(modeltest.Hold(gate))
			go n.openOnSteer(gate, s.SessionID)
			setUsage()
			push()
			cur.parts = append(cur.parts, n.echoSteered)
		case st.Usage != nil:
			target = kitUsage(st.Usage[len(st.Usage)-1])
		case st.JSON != "":
			// With --json-schema the model answers through the CLI's
			// StructuredOutput tool, and the CLI ends the Turn with it: no
			// further model request.
			cur.add(modeltest.FunctionCall("StructuredOutput", json.RawMessage(st.JSON)))
			ended = true
		case st.Fail != "":
			cur.fail = st.Fail
			ended = true
		case st.Hang:
			cur.add(modeltest.Hold(modeltest.NewGate()))
			ended = true
		default:
			t.Fatalf("%s: a plan step the Claude hook does not know: %+v", s.Name, st)
		}
		if ended {
			break
		}
	}
	setUsage()
	push()
	return sc
}

func (n *kitNative) askProof() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	return fmt.Sprintf("kit-approved-%d", n.seq)
}

// echoInput says the Turn's input: the text blocks of the last user message.
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

// lastUserParts is the text blocks of the request's last user message,
// without the reminders the CLI adds.
func lastUserParts(r *modeltest.Request) []string {
	msgs, _ := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		var out []string
		switch c := m["content"].(type) {
		case string:
			out = append(out, c)
		case []any:
			for _, b := range c {
				p, _ := b.(map[string]any)
				if s, ok := p["text"].(string); ok && p["type"] == "text" && !strings.HasPrefix(strings.TrimSpace(s), "<system-reminder>") {
					out = append(out, s)
				}
			}
		}
		return out
	}
	return nil
}

// openOnSteer opens gate once the Session's running Turn has an input
// written (or the Turn is over), so the held stream completes only after it.
func (n *kitNative) openOnSteer(gate *modeltest.Gate, sid string) {
	defer gate.Open()
	bound := time.NewTimer(cliWait)
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
	for !n.steerWritten(sid) {
		select {
		case <-tick.C:
		case <-n.done:
			return
		case <-bound.C:
			return
		}
	}
}

func (n *kitNative) steerWritten(sid string) bool {
	n.mu.Lock()
	e := n.execs[sid]
	n.mu.Unlock()
	if e == nil {
		return true
	}
	e.mu.Lock()
	t := e.cur
	e.mu.Unlock()
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.steers) > 0 || t.ended
}

func (n *kitNative) served(sc *kitScript) []*modeltest.Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*modeltest.Request(nil), sc.served...)
}

// verifier checks what only the native side shows: the model requests the
// CLI made for the Turn.
func (n *kitNative) verifier(s *harnesstest.Scenario, sc *kitScript) func(*testing.T, *harnesstest.Result) {
	cfg := s.Config
	return func(t *testing.T, r *harnesstest.Result) {
		t.Helper()
		reqs := n.served(sc)
		require.NotEmpty(t, reqs, "%s: the CLI made no model request", s.Name)
		first := reqs[0]
		if cfg.ExecutionControls != nil {
			assert.False(t, first.HasTool("WebSearch") || first.HasTool("WebFetch"), "web search disabled: offered %v", first.ToolNames())
		}
		if c := cfg.ExecutionControls; c != nil && c.OutputFormat != nil {
			assert.True(t, first.HasTool("StructuredOutput"), "json_schema output: the CLI offers its StructuredOutput tool: %v", first.ToolNames())
		}
		if cfg.DisableSubagents {
			assert.False(t, first.HasTool("Task"), "subagents disabled: Task offered")
		}
		for _, st := range s.Plan {
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
					assert.True(t, tr.IsError, "the model was told the command was denied")
				}
			case st.Tool != nil:
				require.GreaterOrEqual(t, len(reqs), 2, "the model never got the tool's outcome")
				_, ok := reqs[1].LastToolResult()
				assert.True(t, ok, "the tool's output went back to the model")
			case st.Call != nil:
				assert.True(t, first.HasTool(mcpToolPrefix+st.Call.Name), "the function is offered to the model: %v", first.ToolNames())
				require.GreaterOrEqual(t, len(reqs), 2, "the model never got the function result")
				tr, ok := reqs[1].LastToolResult()
				require.True(t, ok)
				var want []string
				for _, c := range st.Call.Result {
					want = append(want, c.Text)
				}
				assert.Equal(t, strings.Join(want, "\n"), tr.Output, "the function result the model got")
			case st.MCP != nil:
				tool := "mcp__" + st.MCP.Server + "__" + st.MCP.Tool
				assert.True(t, first.HasTool(tool), "the server's tool is offered to the model: %v", first.ToolNames())
				require.GreaterOrEqual(t, len(reqs), 2, "the model never got the tool's outcome")
				tr, ok := reqs[1].LastToolResult()
				require.True(t, ok)
				assert.Equal(t, st.MCP.Outside, tr.IsError, "the model was told whether the tool ran")
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
				assert.Equal(t, strings.Join(steered, ""), reqs[1].LastUserText(), "the steered input reached the model")
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
		// The adapter's input counts cached reads in (usageOf).
		m.InputTokens = get(tk.InputTokens) - get(tk.CachedInputTokens)
		m.CachedTokens = get(tk.CachedInputTokens)
		m.OutputTokens, m.ReasoningTokens = get(tk.OutputTokens), get(tk.ReasoningOutputTokens)
	}
	return m
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func usageMinus(a, b modeltest.Usage) modeltest.Usage {
	sub := func(x, y int64) int64 { return max(x-y, 0) }
	return modeltest.Usage{InputTokens: sub(a.InputTokens, b.InputTokens), CachedTokens: sub(a.CachedTokens, b.CachedTokens),
		CacheWriteTokens: sub(a.CacheWriteTokens, b.CacheWriteTokens), OutputTokens: sub(a.OutputTokens, b.OutputTokens),
		ReasoningTokens: sub(a.ReasoningTokens, b.ReasoningTokens)}
}

func halves(s string) []string {
	i := strings.Index(s[len(s)/2:], " ")
	if i < 0 {
		return []string{s}
	}
	i += len(s) / 2
	return []string{s[:i], s[i:]}
}

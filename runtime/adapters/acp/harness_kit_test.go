package acp

// The Harness conformance kit (runtime/harnesstest) against the REAL
// Gemini CLI (`gemini --acp`, make harnesses): every capability the gemini
// kind declares true passes its acceptance scenario, every one declared
// false its refusal, at the Harness level and through the real daemon with
// a scripted Core. The kit says what the native side must do in each Turn
// (a Plan); the hook below turns the Plan into the scripted Gemini API's
// answers for that Turn's model requests, so Gemini CLI itself streams,
// thinks, lists a directory, asks before running a shell command and takes
// steered input as its next prompt. Offline: the endpoint is on 127.0.0.1.

import (
	"context"
	"fmt"
	"net/http"
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

func TestHarnessGeminiConformance(t *testing.T) {
	bin := install.RequireGemini(t)
	n := newKitNative(t, geminiDialect)
	t.Setenv("AW_TEST_GEMINI_KEY", "dummy")
	ag, err := Gemini(GeminiConfig{Binary: bin, Model: "gemini-2.5-pro", BaseURL: n.srv.URL(), APIKeyEnv: "AW_TEST_GEMINI_KEY"})
	require.NoError(t, err)
	n.run(t, ag)
}

// kitDialect is what the kit's native side does differently per agent:
// the tool calls the model makes for the plan's steps, and what the
// model's requests show.
type kitDialect struct {
	agent string
	// tool is a call the agent runs without asking; toolResult the name
	// its result carries back to the model.
	tool       modeltest.Part
	toolResult string
	// ask is a command the agent asks permission for; it prints proof.
	ask func(proof, what string) modeltest.Part
	// mcpName is the agent's name for tool of the MCP server server.
	mcpName func(server, tool string) (string, error)
	// userParts is the text parts of the request's last user message.
	userParts func(*modeltest.Request) []string
	// controls checks the execution controls in the Turn's first request.
	controls func(t *testing.T, cfg wire.PromptRequest, first *modeltest.Request)
}

// geminiDialect: Gemini CLI on the Gemini API.
var geminiDialect = kitDialect{
	agent: "Gemini CLI",
	// list_directory is read-only: Gemini CLI runs it without asking,
	// reports it as tool_call and sends the model its output in the next
	// request.
	tool:       modeltest.FunctionCall("list_directory", map[string]any{"dir_path": "."}),
	toolResult: "list_directory",
	// A command that writes a file asks in Gemini CLI's default approval
	// mode (a bare echo is read-only and runs unasked).
	ask: func(proof, what string) modeltest.Part {
		return modeltest.GeminiShell(fmt.Sprintf("echo %[1]s > %[1]s.txt && cat %[1]s.txt", proof), what)
	},
	mcpName:   geminiMCPToolName,
	userParts: lastUserParts,
	controls: func(t *testing.T, cfg wire.PromptRequest, first *modeltest.Request) {
		// Core sends web search disabled on every Run; the settings
		// exclude both web tools (gemini.go).
		assert.False(t, first.HasTool("google_web_search") || first.HasTool("web_fetch"), "web search disabled: offered %v", first.ToolNames())
		assert.Equal(t, cfg.DisableSubagents, !first.HasTool("invoke_agent"), "subagents disabled %v: offered %v", cfg.DisableSubagents, first.ToolNames())
	},
}

// newKitNative is the native side with its scripted endpoint: one for the
// whole run. The kit runs one scenario at a time, so every model request
// belongs to the scenario whose hook ran last; a request no script
// expects is a failure, never a default answer.
func newKitNative(t *testing.T, d kitDialect) *kitNative {
	n := &kitNative{d: d, steered: map[string]chan struct{}{}, said: map[string]string{}, done: make(chan struct{})}
	t.Cleanup(func() { close(n.done) })
	n.srv = modeltest.New(t, modeltest.WithFallback(n.respond))
	return n
}

// run runs the kit against the adapter of ag.
func (n *kitNative) run(t *testing.T, ag Agent) {
	a, err := New(Config{Agent: ag, StateDir: t.TempDir()})
	require.NoError(t, err)
	n.a = a

	began := time.Now()
	report := harnesstest.Run(t, harnesstest.Config{
		Adapter: kitAdapter{n},
		Default: n.hook,
		// Both agents report the model's reasoning as
		// agent_thought_chunk.
		Thinking: true,
		// ACP has no user-choice request, and neither agent withdraws a
		// permission request of its own: only session/cancel ends one.
		UserChoice: false,
		Withdrawal: false,
		// A native operation of a Turn is a model request; the process
		// starts in NewExecutor, after the configuration was checked.
		NativeCalls: func() int { return len(n.srv.TurnRequests()) },
		Timeout:     kitTimeout,
	})
	t.Logf("conformance: %d of %d scenarios passed in %s (%d model requests)", report.Passed(), len(report.Scenarios),
		time.Since(began).Round(time.Millisecond), len(n.srv.TurnRequests()))

	n.mu.Lock()
	defer n.mu.Unlock()
	assert.Empty(t, n.strays, "model requests no scenario scripted")
	assert.Empty(t, n.problems, "requests the scripts could not answer as planned")
	for _, sc := range n.all {
		if sc.next < len(sc.reqs) {
			t.Logf("scenario %s: %d of %d scripted model requests were not made (a cancelled, denied or refused Turn)", sc.name, len(sc.reqs)-sc.next, len(sc.reqs))
		}
	}
}

// kitAdapter is the adapter under test; its Executors are the adapter's
// own, wrapped only to tell the endpoint when a steered input was written.
type kitAdapter struct{ n *kitNative }

func (k kitAdapter) Declaration() harness.Declaration { return k.n.a.Declaration() }

func (k kitAdapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	exe, err := k.n.a.NewExecutor(ctx, cfg)
	if err != nil {
		return exe, err
	}
	return &kitExecutor{executor: exe.(*executor), n: k.n, sid: cfg.SessionID}, nil
}

// kitExecutor is the adapter's Executor; Steer also signals the Session's
// held model stream once the input is in the Inbox (written).
type kitExecutor struct {
	*executor
	n   *kitNative
	sid string
}

func (k *kitExecutor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	err := k.executor.Steer(ctx, runID, inputID, in)
	if err == nil {
		k.n.wroteSteer(k.sid)
	}
	return err
}

// kitNative is the native side the kit drives: the scripted endpoint and
// the script of the current Turn.
type kitNative struct {
	d    kitDialect
	srv  *modeltest.Server
	a    *Adapter
	done chan struct{}

	mu       sync.Mutex
	cur      *kitScript
	all      []*kitScript
	steered  map[string]chan struct{} // by Session ID: closed once an input was written
	said     map[string]string        // by Session ID: what its last Turn said
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
// request (the input it echoes, the steered input), or a failure.
type kitRequest struct {
	parts []func(*modeltest.Request) []modeltest.Part
	fail  string
}

func (q *kitRequest) add(p ...modeltest.Part) {
	q.parts = append(q.parts, func(*modeltest.Request) []modeltest.Part { return p })
}

func (n *kitNative) problem(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.problems = append(n.problems, fmt.Sprintf(format, args...))
}

// respond answers a model request from the current scenario's script.
func (n *kitNative) respond(r *modeltest.Request) modeltest.Turn {
	n.mu.Lock()
	sc := n.cur
	if sc == nil || sc.next >= len(sc.reqs) {
		what := "no scenario"
		if sc != nil {
			what = "no scripted request left for " + sc.name
		}
		n.strays = append(n.strays, fmt.Sprintf("request %d %s: %s; last user text %q", r.TurnSeq, r.Path, what, r.LastUserText()))
		n.mu.Unlock()
		return modeltest.Fail(http.StatusBadRequest, "harnesstest: no scripted answer for this request")
	}
	q := sc.reqs[sc.next]
	sc.next++
	sc.served = append(sc.served, r)
	n.mu.Unlock()
	if q.fail != "" {
		// decision: the failure is the request's HTTP answer. Gemini CLI
		// passes over an error object inside a stream that already began
		// (measured: the prompt then ends normally), and a 400 is not an
		// error its client retries (429 and 5xx are; not measured here), so
		// it is the failure reported at once.
		return modeltest.FailWith(modeltest.HTTPError{Status: http.StatusBadRequest, Type: "INVALID_ARGUMENT", Message: q.fail})
	}
	var parts []modeltest.Part
	for _, f := range q.parts {
		parts = append(parts, f(r)...)
	}
	return modeltest.Reply(parts...)
}

// hook makes Gemini CLI's next Turn follow s.Plan.
func (n *kitNative) hook(t *testing.T, s *harnesstest.Scenario) {
	if s.Refused {
		// Nothing is scripted: a request the refused Turn made anyway
		// finds no script (a stray, which fails).
		n.mu.Lock()
		n.cur = nil
		n.mu.Unlock()
		return
	}
	// The Session's steer signal exists before compile starts the
	// goroutine that waits on it.
	n.mu.Lock()
	n.steered[s.SessionID] = make(chan struct{})
	n.mu.Unlock()
	sc := n.compile(t, s)
	n.mu.Lock()
	n.cur = sc
	n.all = append(n.all, sc)
	prev := n.said[s.SessionID]
	n.said[s.SessionID] = s.Plan.Text()
	n.mu.Unlock()
	s.Verify = n.verifier(s, sc, prev)
}

// compile lays the Plan out as model requests: a step that needs the
// model's next request (a tool's result, an approval's outcome, a steered
// input) ends one request, and the steps after it answer the next.
func (n *kitNative) compile(t *testing.T, s *harnesstest.Scenario) *kitScript {
	t.Helper()
	sc := &kitScript{name: s.Name}
	cur := &kitRequest{}
	push := func() {
		sc.reqs = append(sc.reqs, cur)
		cur = &kitRequest{}
	}
	ended := false
	for _, st := range s.Plan {
		switch {
		case len(st.Say) > 0:
			cur.add(modeltest.Text(st.Say...))
		case st.Think != "":
			// One thought part: Gemini CLI trims each thought chunk it
			// renders, so whitespace at a cut would not survive.
			cur.add(modeltest.Reasoning(st.Think))
		case st.Echo:
			cur.parts = append(cur.parts, n.echoInput)
		case st.Tool != nil:
			cur.add(n.d.tool)
			push()
		case st.Ask != nil:
			cur.add(n.d.ask(n.askProof(), "harnesstest asks to run "+st.Ask.Tool))
			push()
		case st.Call != nil:
			// The model calls the function as Gemini CLI shows it, a tool
			// of the adapter's MCP server; the next request carries the
			// result (as a functionResponse), which the model then says.
			name, err := n.d.mcpName(fnServerName, st.Call.Name)
			require.NoError(t, err)
			cur.add(modeltest.FunctionCall(name, st.Call.Args))
			push()
			cur.parts = append(cur.parts, n.sayToolResult)
		case st.MCP != nil:
			// The model calls the tool of Core's server as Gemini CLI
			// names it; Gemini CLI asks (approved by the kit) or, for a
			// tool outside allowed_tools, its policy denies the call and
			// tells the model, which goes on with the plan.
			name, err := n.d.mcpName(st.MCP.Server, st.MCP.Tool)
			require.NoError(t, err)
			cur.add(modeltest.FunctionCall(name, st.MCP.Args))
			push()
			if !st.MCP.Outside {
				cur.parts = append(cur.parts, n.sayToolResult)
			}
		case st.AwaitInput:
			// The stream holds after what it said until the input is
			// written; the prompt then ends, and the adapter submits the
			// input as the Run's next session/prompt, whose request the
			// model answers by saying it.
			gate := modeltest.NewGate()
			cur.add(modeltest.Hold(gate))
			go n.openOnSteer(gate, s.SessionID)
			push()
			cur.parts = append(cur.parts, n.echoSteered)
		case st.Usage != nil:
			// The gemini kind declares usage false; the endpoint reports
			// usageMetadata anyway, and the kit checks that none of it
			// reaches the Run.
		case st.Fail != "":
			cur.fail = st.Fail
			ended = true
		case st.Hang:
			// Held until Gemini CLI aborts the request on session/cancel
			// (or the endpoint closes at the test's end).
			cur.add(modeltest.Hold(modeltest.NewGate()))
			ended = true
		default:
			t.Fatalf("%s: a plan step the Gemini hook does not know: %+v", s.Name, st)
		}
		if ended {
			break
		}
	}
	push()
	return sc
}

func (n *kitNative) askProof() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	return fmt.Sprintf("kit-approved-%d", n.seq)
}

func (n *kitNative) wroteSteer(sid string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.steered[sid]; ok {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

// openOnSteer opens gate once the Session's input was written, so the
// held stream completes only after it.
func (n *kitNative) openOnSteer(gate *modeltest.Gate, sid string) {
	defer gate.Open()
	n.mu.Lock()
	ch := n.steered[sid]
	n.mu.Unlock()
	bound := time.NewTimer(kitTimeout)
	defer bound.Stop()
	select {
	case <-ch:
	case <-n.done:
	case <-bound.C:
	}
}

// lastUserParts is the text parts of the request's last user content:
// Gemini CLI sends a prompt's text blocks as its parts, in order, after
// its own session context on the first prompt.
func lastUserParts(r *modeltest.Request) []string {
	cs, _ := r.Body["contents"].([]any)
	for i := len(cs) - 1; i >= 0; i-- {
		c, _ := cs[i].(map[string]any)
		if c["role"] != "user" {
			continue
		}
		var out []string
		parts, _ := c["parts"].([]any)
		for _, p := range parts {
			m, _ := p.(map[string]any)
			if s, ok := m["text"].(string); ok && !strings.HasPrefix(s, "<session_context>") {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// echoInput says the Turn's input as Gemini CLI sent it.
func (n *kitNative) echoInput(r *modeltest.Request) []modeltest.Part {
	parts := n.d.userParts(r)
	if len(parts) == 0 {
		n.problem("request %d: no user message to echo", r.TurnSeq)
		return nil
	}
	return []modeltest.Part{modeltest.Text(parts...)}
}

// sayToolResult says the function result the request ends with, as
// Gemini CLI sent it back to the model.
func (n *kitNative) sayToolResult(r *modeltest.Request) []modeltest.Part {
	tr, ok := r.LastToolResult()
	if !ok {
		n.problem("request %d: no function result to say", r.TurnSeq)
		return nil
	}
	return []modeltest.Part{modeltest.Text(untrusted(tr.Output))}
}

// untrusted is the text Gemini CLI wrapped as untrusted context (an MCP
// tool's text result), unwrapped.
func untrusted(s string) string {
	const open, end = "<untrusted_context>\n", "\n</untrusted_context>"
	if strings.HasPrefix(s, open) && strings.HasSuffix(s, end) {
		return strings.TrimSuffix(strings.TrimPrefix(s, open), end)
	}
	return s
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

func (n *kitNative) served(sc *kitScript) []*modeltest.Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*modeltest.Request(nil), sc.served...)
}

// verifier checks what only the native side shows: the model requests
// Gemini CLI made for the Turn.
// prev is what the Session's previous Turn said, which a resumed native
// session carries.
func (n *kitNative) verifier(s *harnesstest.Scenario, sc *kitScript, prev string) func(*testing.T, *harnesstest.Result) {
	cfg := s.Config
	return func(t *testing.T, r *harnesstest.Result) {
		t.Helper()
		reqs := n.served(sc)
		require.NotEmpty(t, reqs, "%s: %s made no model request", s.Name, n.d.agent)
		first := reqs[0]
		n.d.controls(t, cfg, first)
		if cfg.AgentSessionID != "" {
			// Resumed with session/load: the model sees the earlier Turn.
			require.NotEmpty(t, prev, "a resumed Turn whose Session said nothing before")
			assert.Contains(t, string(first.RawBody), prev, "the resumed native session carries the previous Turn's answer")
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
				assert.Equal(t, want, n.d.userParts(first), "the input's text parts reached the model, in order")
			case st.Ask != nil:
				if st.Ask.Approve {
					require.GreaterOrEqual(t, len(reqs), 2, "the model never got the approved command's output")
					tr, ok := reqs[1].LastToolResult()
					require.True(t, ok, "the model got the command's outcome")
					assert.Contains(t, tr.Output, "kit-approved-", "the approved command ran")
				} else {
					// Gemini CLI ends the prompt on a rejected call; if it
					// asks the model again, the command's output is not in it.
					for _, q := range reqs[1:] {
						assert.NotContains(t, string(q.RawBody), "Output: kit-approved-", "the denied command ran")
					}
				}
			case st.Tool != nil:
				require.GreaterOrEqual(t, len(reqs), 2, "the model never got the tool's outcome")
				tr, ok := reqs[1].LastToolResult()
				assert.True(t, ok && tr.Name == n.d.toolResult, "the tool's output went back to the model")
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
				assert.Equal(t, strings.Join(steered, ""), reqs[1].LastUserText(), "the steered input reached the model as the next prompt")
			}
		}
	}
}

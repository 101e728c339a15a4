package claude

// End-to-end tests against the REAL Claude Code CLI (the pinned version
// `make harnesses` installs) and the scripted model endpoint on 127.0.0.1,
// offline. They are named TestHarness* so that `make check-harnesses`
// selects them; without the CLI they skip (install.RequireClaude), and fail
// under AGENTWIRE_REQUIRE_HARNESSES=1.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/internal/runtime/harness/nettrace"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

const (
	keyEnv  = "AGENTWIRE_TEST_ANTHROPIC_KEY"
	testKey = "sk-ant-agentwire-test-not-a-secret"
	cliWait = 90 * time.Second // a failure bound for the real CLI, never a wait a test relies on
)

type rig struct {
	t   *testing.T
	srv *modeltest.Server
	a   *Adapter
	key string // the Session's state key
}

func newRig(t *testing.T, opts ...modeltest.Option) *rig {
	return newRigOf(t, install.RequireClaude(t), opts...)
}

// newRigOf is newRig with the binary to start given (e.g. a wrapper).
func newRigOf(t *testing.T, bin string, opts ...modeltest.Option) *rig {
	t.Setenv(keyEnv, testKey)
	srv := modeltest.New(t, opts...)
	a, err := New(Config{Binary: bin, Model: "scripted-model", BaseURL: srv.URL(), APIKeyEnv: keyEnv, StateDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.True(t, a.Declaration().Available)
	return &rig{t: t, srv: srv, a: a, key: "agents-api-ses-1"}
}

// executor prepares an Executor (resuming native when set) and closes it
// at the test's end.
func (r *rig) executor(native string, observe bool) *executor {
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	decl := r.a.Declaration()
	exe, err := r.a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "ses-1", Declaration: decl,
		Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: r.key, AgentSessionID: native, StrictResume: true, ObserveMessages: observe}})
	require.NoError(r.t, err)
	e := exe.(*executor)
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		require.NoError(r.t, e.Close(ctx))
		require.False(r.t, e.proc.Alive())
	})
	return e
}

// recorder collects a Turn's frames.
type recorder struct {
	mu     sync.Mutex
	frames []wire.Payload
}

func (c *recorder) emit(_ context.Context, p wire.Payload) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames = append(c.frames, p)
	return nil
}

func (c *recorder) all() []wire.Payload {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wire.Payload(nil), c.frames...)
}

func run(t *testing.T, e *executor, ctx context.Context, runID, text string, rec *recorder) wire.Done {
	turn := harness.Turn{RunID: runID, Declaration: harness.Declaration{Kind: Kind, Available: true, Capabilities: capabilities()},
		Input: wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: text}}}}}
	done, err := e.Run(ctx, turn, rec.emit)
	require.NoError(t, err)
	return done
}

// A streamed Turn: thinking, text deltas in order with their message's item
// ID between output_message in_progress and completed, the usage summed
// over the call, and done with the content and the native Session.
func TestHarnessClaudeStreamedTurn(t *testing.T) {
	r := newRig(t, modeltest.WithFallback(modeltest.Always(modeltest.Reply(modeltest.Reasoning("Let me ", "think."), modeltest.Text("Hello ", "from ", "Claude.")))))
	e := r.executor("", true)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := &recorder{}
	done := run(t, e, ctx, "run-1", "hi", rec)
	assert.Equal(t, "Hello from Claude.", done.Content)
	require.NotNil(t, done.Metadata)
	assert.Equal(t, e.sessionID, done.Metadata.AgentSessionID)
	require.NotNil(t, done.Usage.Tokens)
	assert.Positive(t, *done.Usage.Tokens.OutputTokens)

	var thinking, text string
	var item string
	var statuses []string
	for _, f := range rec.all() {
		switch p := f.(type) {
		case wire.Thinking:
			thinking += p.Text
		case wire.Delta:
			text += p.Delta
			assert.NotEmpty(t, p.ItemID)
			if item == "" {
				item = p.ItemID
			}
			assert.Equal(t, item, p.ItemID, "one message")
		case wire.OutputMessage:
			assert.Equal(t, item == "" || p.ID == item, true)
			statuses = append(statuses, p.Status)
			if p.Status == wire.OutputCompleted {
				require.NotNil(t, p.Text)
				assert.Equal(t, "Hello from Claude.", *p.Text)
			}
		case wire.ErrorFrame:
			t.Errorf("an error frame: %+v", p)
		}
	}
	assert.Equal(t, "Let me think.", thinking)
	assert.Equal(t, "Hello from Claude.", text)
	assert.Equal(t, []string{wire.OutputInProgress, wire.OutputCompleted}, statuses)
}

// Only the scripted endpoint on 127.0.0.1 is contacted: the CLI runs
// under strace, and every address it connects or sends to is checked
// (nettrace) through a streamed turn. Without
// the DISABLE_* and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC variables the
// adapter sets, Claude Code looks up api.anthropic.com (harness-notes §3),
// which this would catch. Without strace this fails under
// AGENTWIRE_REQUIRE_HARNESSES=1.
func TestHarnessClaudeContactsOnlyLoopback(t *testing.T) {
	tr := nettrace.Wrap(t, install.RequireClaude(t))
	r := newRigOf(t, tr.Binary, modeltest.WithTurns(
		modeltest.Reply(modeltest.Reasoning("Thinking."), modeltest.Text("Hello ", "offline.")),
	))
	e := r.executor("", true)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := &recorder{}
	done := run(t, e, ctx, "run-net", "hi", rec)
	assert.Equal(t, "Hello offline.", done.Content)
	require.NoError(t, e.Close(ctx))
	tr.RequireOnly(t, r.srv.URL())
	assert.NotEmpty(t, r.srv.TurnRequests())
}

// A later Executor resumes the native Session the first Turn reported: the
// model sees the earlier exchange, and done names the same Session. An
// unknown Session fails the preparation instead of starting a new one.
func TestHarnessClaudeResume(t *testing.T) {
	r := newRig(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("The word is teal.")), modeltest.Reply(modeltest.Text("It was teal."))))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	first := r.executor("", false)
	d1 := run(t, first, ctx, "run-1", "remember teal", &recorder{})
	require.NoError(t, first.Close(ctx))

	second := r.executor(d1.Metadata.AgentSessionID, false)
	d2 := run(t, second, ctx, "run-2", "which word?", &recorder{})
	assert.Equal(t, "It was teal.", d2.Content)
	assert.Equal(t, d1.Metadata.AgentSessionID, d2.Metadata.AgentSessionID)
	last, err := r.srv.Await(ctx, 2)
	require.NoError(t, err)
	assert.Contains(t, last.UserTexts(), "remember teal", "the resumed Session carries the first exchange")

	_, err = r.a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "ses-1", Declaration: r.a.Declaration(),
		Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: r.key, AgentSessionID: "6b1c2d3e-0000-4000-8000-000000000000", StrictResume: true}})
	require.Error(t, err, "an unknown native Session is never started afresh")
}

// cost_usd is each Run's share of the process's running total: the first
// Run's is the total after it, the second's what the total grew by. The
// first call is made far dearer than the second, so a per-call total
// would shrink and a Run billed the whole total would cost more.
func TestHarnessClaudeCostIsTheRunsShare(t *testing.T) {
	r := newRig(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Text("One.")).WithUsage(modeltest.Usage{InputTokens: 20000, OutputTokens: 8000}),
		modeltest.Reply(modeltest.Text("Two.")).WithUsage(modeltest.Usage{InputTokens: 10, OutputTokens: 5})))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	e := r.executor("", false)
	totalNow := func() float64 {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.costTotal
	}
	d1 := run(t, e, ctx, "run-1", "first", &recorder{})
	require.NotNil(t, d1.Usage.CostUSD, "the result reported a cost")
	after1 := totalNow()
	assert.Positive(t, after1)
	assert.InDelta(t, after1, *d1.Usage.CostUSD, 1e-12, "the first Run is the whole total so far")
	d2 := run(t, e, ctx, "run-2", "second", &recorder{})
	require.NotNil(t, d2.Usage.CostUSD)
	assert.Positive(t, *d2.Usage.CostUSD)
	assert.Greater(t, totalNow(), after1, "the CLI's total is the process's running total")
	assert.InDelta(t, totalNow()-after1, *d2.Usage.CostUSD, 1e-12, "the second Run is what the total grew by")
	assert.Less(t, *d2.Usage.CostUSD, *d1.Usage.CostUSD/10, "the second, cheap Run is not billed the first one's cost")
}

// A cancelled Turn: the interrupt is answered, and the Run returns only
// once the CLI reported the aborted result, with what was said so far.
func TestHarnessClaudeCancellation(t *testing.T) {
	gate := modeltest.NewGate()
	defer gate.Open()
	r := newRig(t, modeltest.WithFallback(modeltest.Always(modeltest.Reply(modeltest.Text("Working "), modeltest.Hold(gate), modeltest.Text("never said")))))
	e := r.executor("", false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	out := make(chan wire.Done, 1)
	go func() { out <- run(t, e, ctx, "run-1", "work", rec) }()
	select {
	case <-gate.Reached():
	case <-time.After(cliWait):
		t.Fatal("the model stream never reached the hold")
	}
	cancel()
	var done wire.Done
	select {
	case done = <-out:
	case <-time.After(cliWait):
		t.Fatal("the cancelled Run never returned")
	}
	assert.NotContains(t, done.Content, "never said")
	for _, f := range rec.all() {
		_, isErr := f.(wire.ErrorFrame)
		assert.False(t, isErr, "an interruption is not an engine failure: %+v", f)
	}
}

// Active input while the model streams text: written once the line is
// written, accepted when the CLI starts it, which it does after the
// Turn's result as a follow-up; the Run waits for the follow-up's result
// and its text is the Turn's too.
func TestHarnessClaudeSteeringDuringText(t *testing.T) {
	gate := modeltest.NewGate()
	defer gate.Open()
	r := newRig(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Text("First "), modeltest.Hold(gate), modeltest.Text("answer. ")),
		modeltest.Reply(modeltest.Text("And the follow-up."))))
	e := r.executor("", false)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := &recorder{}
	notices := make(chan harness.InputNotice, 4)
	turn := harness.Turn{RunID: "run-1", Declaration: harness.Declaration{Kind: Kind, Available: true, Capabilities: capabilities()},
		Input:  wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "start"}}}},
		Notify: func(n harness.InputNotice) { notices <- n }}
	out := make(chan wire.Done, 1)
	go func() {
		done, err := e.Run(ctx, turn, rec.emit)
		assert.NoError(t, err)
		out <- done
	}()
	select {
	case <-gate.Reached():
	case <-ctx.Done():
		t.Fatal("the model stream never reached the hold")
	}
	require.NoError(t, e.Steer(ctx, "run-1", "input-1", wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "also this"}}}}),
		"written: the line went out")
	gate.Open()
	var done wire.Done
	select {
	case done = <-out:
	case <-ctx.Done():
		t.Fatal("the Run never returned")
	}
	select {
	case n := <-notices:
		assert.Equal(t, harness.InputNotice{InputID: "input-1", Accepted: true}, n)
	default:
		t.Fatal("no receipt for the input")
	}
	assert.Equal(t, "First answer. And the follow-up.", done.Content)
	follow, err := r.srv.Await(ctx, 2)
	require.NoError(t, err)
	assert.Contains(t, follow.UserTexts(), "also this", "the model saw the input")
	assert.ErrorIs(t, e.Steer(ctx, "run-1", "input-2", wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "late"}}}}),
		harness.ErrRunInactive, "the Turn is over")
}

// Permissions: an approved Bash command runs in the workspace, a denied one
// does not; each is asked as a permission_request and observed as
// tool_call before and after.
func TestHarnessClaudePermissions(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approve], func(t *testing.T) {
			r := newRig(t, modeltest.WithTurns(
				modeltest.Reply(modeltest.ClaudeBash("echo agentwire-proof > proof.txt", "write proof.txt")),
				modeltest.Reply(modeltest.Text("Done."))))
			ws := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), cliWait)
			defer cancel()
			exe, err := r.a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "ses-1", Declaration: r.a.Declaration(), WorkspaceDir: ws,
				Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: r.key, StrictResume: true, ObserveToolObservations: true}})
			require.NoError(t, err)
			e := exe.(*executor)
			defer func() { require.NoError(t, e.Close(ctx)) }()

			decided := make(chan error, 1)
			rec := &recorder{}
			emit := func(ctx context.Context, p wire.Payload) error {
				_ = rec.emit(ctx, p)
				if q, ok := p.(wire.PermissionRequest); ok {
					assert.Equal(t, "Bash", q.Tool)
					assert.Equal(t, "echo agentwire-proof > proof.txt", q.Detail)
					go func() {
						decided <- e.Decide(ctx, "run-1", harness.Answer{InteractionID: q.RequestID,
							Permission: &wire.PermissionDecision{DeliveryID: "d-1", Approved: &approve}})
					}()
				}
				return nil
			}
			turn := harness.Turn{RunID: "run-1", Declaration: r.a.Declaration(),
				Input: wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "write the proof"}}}}}
			done, err := e.Run(ctx, turn, emit)
			require.NoError(t, err)
			require.NoError(t, <-decided, "the answer was applied")
			assert.Equal(t, "Done.", done.Content)
			_, statErr := os.Stat(filepath.Join(ws, "proof.txt"))
			assert.Equal(t, approve, statErr == nil, "the command ran only when approved")
			var stages []string
			for _, f := range rec.all() {
				if c, ok := f.(wire.ToolCall); ok {
					stages = append(stages, c.Stage)
					require.NotNil(t, c.Observation)
					assert.Equal(t, "command", c.Observation.Kind)
					if c.Stage == wire.ToolStageAfter {
						assert.Equal(t, map[bool]string{true: "completed", false: "failed"}[approve], c.Observation.Status)
					}
				}
			}
			assert.Equal(t, []string{wire.ToolStageBefore, wire.ToolStageAfter}, stages)
			last, err := r.srv.Await(ctx, 2)
			require.NoError(t, err)
			res, ok := last.LastToolResult()
			require.True(t, ok)
			assert.Equal(t, !approve, res.IsError, "the model saw the verdict")
		})
	}
}

// Execution controls: with web search disabled and subagents off, the
// model is offered neither the search and fetch tools nor Task.
func TestHarnessClaudeExecutionControls(t *testing.T) {
	r := newRig(t, modeltest.WithFallback(modeltest.Always(modeltest.Reply(modeltest.Text("ok")))))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	exe, err := r.a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "ses-1", Declaration: r.a.Declaration(),
		Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: r.key, StrictResume: true, DisableSubagents: true,
			ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium}}})
	require.NoError(t, err)
	e := exe.(*executor)
	defer func() { require.NoError(t, e.Close(ctx)) }()
	run(t, e, ctx, "run-1", "hi", &recorder{})
	req, err := r.srv.Await(ctx, 1)
	require.NoError(t, err)
	require.NotEmpty(t, req.ToolNames(), "the CLI offers its tools")
	for _, off := range []string{"WebSearch", "WebFetch", "Task"} {
		assert.False(t, req.HasTool(off), "%s is offered", off)
	}
	assert.True(t, req.HasTool("Bash"))
}

// The Agent's model and instructions (agent_options) reach the CLI: the
// model call names that model, and the instructions are part of the
// system prompt, after Claude Code's own.
func TestHarnessClaudeAgentOptions(t *testing.T) {
	r := newRig(t, modeltest.WithFallback(modeltest.Always(modeltest.Reply(modeltest.Text("ok")))))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	model, instructions := "agent-model", "Always answer like a pirate."
	exe, err := r.a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "ses-1", Declaration: r.a.Declaration(),
		Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: r.key, StrictResume: true,
			AgentOptions: &wire.AgentOptions{Model: &model, SystemPrompt: &instructions}}})
	require.NoError(t, err)
	e := exe.(*executor)
	defer func() { require.NoError(t, e.Close(ctx)) }()
	done := run(t, e, ctx, "run-1", "hi", &recorder{})
	req, err := r.srv.Await(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, model, req.Model())
	system, err := json.Marshal(req.Body["system"])
	require.NoError(t, err)
	assert.Contains(t, string(system), instructions)
	assert.Contains(t, string(system), "Claude", "Claude Code's own prompt stays")
	assert.Equal(t, model, done.Usage.Model, "usage names the model that ran")
}

// A question to the user: AskUserQuestion becomes prompt_for_user_choice
// with minted question IDs, and the answer reaches the model by the
// question's text.
func TestHarnessClaudeUserChoice(t *testing.T) {
	r := newRig(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.ClaudeAskUserQuestion(modeltest.Question{Header: "Colour", Question: "Which colour?",
			Choices: []modeltest.Choice{{Label: "red"}, {Label: "blue"}}})),
		modeltest.Reply(modeltest.Text("Blue it is."))))
	e := r.executor("", false)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	decided := make(chan error, 1)
	rec := &recorder{}
	emit := func(ctx context.Context, p wire.Payload) error {
		_ = rec.emit(ctx, p)
		if q, ok := p.(wire.PromptForUserChoice); ok {
			require.Len(t, q.Questions, 1)
			assert.Equal(t, "q1", q.Questions[0].ID)
			assert.Equal(t, "Which colour?", q.Questions[0].Question)
			assert.Equal(t, []wire.UserChoiceOption{{Label: "red"}, {Label: "blue"}}, q.Questions[0].Options)
			go func() {
				decided <- e.Decide(ctx, "run-1", harness.Answer{InteractionID: q.AskID, Choice: &wire.PromptForUserChoiceDecision{
					DeliveryID: "d-1", QuestionAnswers: []wire.UserChoiceAnswer{{QuestionID: "q1", Answers: []string{"blue"}}}}})
			}()
		}
		return nil
	}
	turn := harness.Turn{RunID: "run-1", Declaration: r.a.Declaration(),
		Input: wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "ask me"}}}}}
	done, err := e.Run(ctx, turn, emit)
	require.NoError(t, err)
	require.NoError(t, <-decided)
	assert.Equal(t, "Blue it is.", done.Content)
	last, err := r.srv.Await(ctx, 2)
	require.NoError(t, err)
	res, ok := last.LastToolResult()
	require.True(t, ok)
	assert.Contains(t, res.Output, "blue", "the model got the answer")
}

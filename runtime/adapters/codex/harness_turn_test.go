package codex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/nettrace"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// A streamed answer: thinking, deltas with the message's item ID, the
// message's start and completion, a per-Run usage snapshot, done with the
// thread ID; and the request Codex sent.
func TestHarnessCodexHello(t *testing.T) {
	r := newRig(t, nil)
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	res := wait(t, start(ctx, e, "run-hello", text("Say hello"), rec, nil))
	require.NoError(t, res.err)

	assert.Equal(t, "Hello from the scripted model.", res.done.Content)
	assert.Equal(t, res.done.Content, contentOf(rec), "the deltas add up to done.content")
	deltas := of[wire.Delta](rec)
	require.NotEmpty(t, deltas)
	itemID := deltas[0].ItemID
	require.NotEmpty(t, itemID, "observe_messages: deltas carry the native item ID")
	for i, d := range deltas {
		assert.Equal(t, itemID, d.ItemID)
		assert.Equal(t, uint64(i+1), d.Sequence)
	}
	msgs := of[wire.OutputMessage](rec)
	require.Len(t, msgs, 2)
	assert.Equal(t, wire.OutputMessage{ID: itemID, Status: wire.OutputInProgress}, msgs[0])
	assert.Equal(t, itemID, msgs[1].ID)
	assert.Equal(t, wire.OutputCompleted, msgs[1].Status)
	require.NotNil(t, msgs[1].Text)
	assert.Equal(t, res.done.Content, *msgs[1].Text)

	var thinking strings.Builder
	for _, th := range of[wire.Thinking](rec) {
		thinking.WriteString(th.Text)
	}
	assert.Equal(t, "The user greets me; answer briefly.", thinking.String())

	usage := of[wire.Usage](rec)
	require.NotEmpty(t, usage)
	u := modeltest.DefaultUsage()
	assert.Equal(t, [5]int64{u.InputTokens, u.CachedTokens, u.OutputTokens, u.ReasoningTokens, u.TotalTokens()}, tokens(t, usage[len(usage)-1]))
	assert.Equal(t, usage[len(usage)-1], res.done.Usage, "done carries the last snapshot")
	require.NotNil(t, res.done.Metadata)
	assert.Equal(t, e.threadID, res.done.Metadata.AgentSessionID)
	assert.Empty(t, of[wire.ErrorFrame](rec))

	reqs := r.srv.TurnRequests()
	require.Len(t, reqs, 1)
	q := reqs[0]
	assert.Equal(t, "Say hello", q.LastUserText())
	assert.Equal(t, "Bearer [redacted]", q.Header.Get("Authorization"), "the key from the named variable reached the provider")
	assert.Equal(t, "gpt-5.5", q.Model())
	// Execution controls: no web search, no subagents, no goals; the
	// verbosity Core resolved.
	for _, name := range q.ToolNames() {
		assert.NotContains(t, []string{"web_search", "multi_agent_v1", "create_goal", "get_goal", "update_goal"}, name)
	}
	textCfg, _ := q.Body["text"].(map[string]any)
	assert.Equal(t, "medium", textCfg["verbosity"], "text verbosity reaches the model request")
}

// The ordered input of several messages keeps its order, and Unicode
// passes through unchanged.
func TestHarnessCodexInputOrderAndUnicode(t *testing.T) {
	const answer = "e\u0301 👩‍💻 שלום"
	r := newRig(t, nil, modeltest.WithTurns(modeltest.Reply(modeltest.Text("e\u0301 ", "👩‍💻 ", "שלום"))))
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	res := wait(t, start(ctx, e, "run-order", text("first", "second ✓", "third"), rec, nil))
	require.NoError(t, res.err)
	assert.Equal(t, answer, res.done.Content)
	assert.Equal(t, answer, contentOf(rec))
	q := r.srv.TurnRequests()[0]
	all := strings.Join(q.UserTexts(), "\n")
	i, j, k := strings.Index(all, "first"), strings.Index(all, "second ✓"), strings.Index(all, "third")
	require.True(t, i >= 0 && j > i && k > j, "the messages keep their order: %q", all)
}

// An image on this text-only Harness is refused explicitly, never
// dropped, before anything reaches the model.
func TestHarnessCodexRefusesImages(t *testing.T) {
	r := newRig(t, nil)
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	in := wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "look"}, {Type: wire.ContentImage, ImageURL: "https://example.com/a.png"}}}}
	res := wait(t, start(ctx, e, "run-image", in, rec, nil))
	require.NoError(t, res.err)
	errs := of[wire.ErrorFrame](rec)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error, "image")
	assert.Empty(t, r.srv.TurnRequests(), "nothing reached the model")
}

// An approved escalated command really runs in the workspace; the tool
// observation reports it, and the model saw its result.
func TestHarnessCodexApprovedCommandRuns(t *testing.T) {
	r := newRig(t, nil, modeltest.WithTurns(modeltest.Reply(modeltest.CodexExecEscalated("echo agentwire-proof > proof.txt && echo wrote", "write the proof"))))
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	ch := start(ctx, e, "run-approve", text("write the proof"), rec, nil)
	f, ok := rec.await(ctx, func(p wire.Payload) bool { _, ok := p.(wire.PermissionRequest); return ok })
	require.True(t, ok, "a permission request")
	pr := f.(wire.PermissionRequest)
	assert.Equal(t, toolCommand, pr.Tool)
	assert.Equal(t, "write the proof", pr.Title, "the model's justification")
	assert.Contains(t, pr.Detail, "echo agentwire-proof")
	yes := true
	require.NoError(t, e.Decide(ctx, "run-approve", harnessAnswer(pr.RequestID, &wire.PermissionDecision{DeliveryID: "d1", Approved: &yes})))
	res := wait(t, ch)
	require.NoError(t, res.err)

	b, err := os.ReadFile(filepath.Join(r.ws, "proof.txt"))
	require.NoError(t, err, "the command ran in the workspace")
	assert.Equal(t, "agentwire-proof\n", string(b))

	calls := of[wire.ToolCall](rec)
	require.Len(t, calls, 2)
	before, after := calls[0], calls[1]
	assert.Equal(t, wire.ToolStageBefore, before.Stage)
	assert.Equal(t, wire.ToolStageAfter, after.Stage)
	assert.Equal(t, before.ID, after.ID)
	assert.Equal(t, toolCommand, before.Name)
	require.NotNil(t, after.Observation)
	assert.Equal(t, "command", after.Observation.Kind)
	assert.Equal(t, "completed", after.Observation.Status)
	require.NotNil(t, after.Observation.ExitCode)
	assert.Equal(t, int64(0), *after.Observation.ExitCode)
	require.NotNil(t, after.Observation.Cwd)
	assert.Equal(t, evalDir(t, r.ws), evalDir(t, *after.Observation.Cwd))
	assert.Contains(t, string(after.Observation.Output), "wrote")
	assert.Contains(t, res.done.Content, "Tool said:")
	// The permission request came between the tool's two stages.
	order := kinds(rec)
	assert.Less(t, strings.Index(order, "tool_call:before"), strings.Index(order, "permission_request"))
	assert.Less(t, strings.Index(order, "permission_request"), strings.Index(order, "tool_call:after"))
	// Deciding again: the request is settled.
	assert.Error(t, e.Decide(ctx, "run-approve", harnessAnswer(pr.RequestID, &wire.PermissionDecision{DeliveryID: "d2", Approved: &yes})))
}

// A denied command does not run; Codex reports it declined and the model
// is told.
func TestHarnessCodexDeniedCommandDoesNotRun(t *testing.T) {
	r := newRig(t, nil, modeltest.WithTurns(modeltest.Reply(modeltest.CodexExecEscalated("echo no > denied.txt", "write a file"))))
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	ch := start(ctx, e, "run-deny", text("write a file"), rec, nil)
	f, ok := rec.await(ctx, func(p wire.Payload) bool { _, ok := p.(wire.PermissionRequest); return ok })
	require.True(t, ok)
	no := false
	require.NoError(t, e.Decide(ctx, "run-deny", harnessAnswer(f.(wire.PermissionRequest).RequestID, &wire.PermissionDecision{DeliveryID: "d1", Approved: &no})))
	res := wait(t, ch)
	require.NoError(t, res.err)
	_, err := os.Stat(filepath.Join(r.ws, "denied.txt"))
	assert.True(t, os.IsNotExist(err), "the denied command did not run")
	calls := of[wire.ToolCall](rec)
	require.NotEmpty(t, calls)
	last := calls[len(calls)-1]
	require.NotNil(t, last.Observation)
	assert.Equal(t, "declined", last.Observation.Status)
	tr, ok := r.srv.TurnRequests()[1].LastToolResult()
	require.True(t, ok, "the model got the denial back")
	assert.Contains(t, strings.ToLower(tr.Output), "rejected")
}

// Only the scripted endpoint on 127.0.0.1 is contacted: the app-server
// runs under strace, and every address it connects or sends to is checked
// (nettrace). Without strace this fails under AGENTWIRE_REQUIRE_HARNESSES=1.
func TestHarnessCodexContactsOnlyLoopback(t *testing.T) {
	var tr *nettrace.Trace
	r := newRig(t, func(c *Config) {
		tr = nettrace.Wrap(t, c.Binary)
		c.Binary = tr.Binary
	})
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	res := wait(t, start(ctx, e, "run-net", text("Say hello"), rec, nil))
	require.NoError(t, res.err)
	require.NoError(t, e.Close(ctx))
	tr.RequireOnly(t, r.srv.URL())
	assert.Len(t, r.srv.TurnRequests(), 1)
}

func evalDir(t *testing.T, p string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return d
}

// kinds lists the frames' types (a tool call with its stage), for order
// checks.
func kinds(rec *recorder) string {
	var out []string
	for _, f := range rec.all() {
		k := f.MessageType()
		if tc, ok := f.(wire.ToolCall); ok {
			k += ":" + tc.Stage
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

// Structured output: the json_schema output format goes to the model as
// the turn's output schema.
func TestHarnessCodexStructuredOutput(t *testing.T) {
	const answer = `{"answer":"yes"}`
	r := newRig(t, nil, modeltest.WithTurns(modeltest.Reply(modeltest.Text(answer))))
	cfg := hcfg(r.a, r.ws)
	schema := `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`
	cfg.Configuration.ExecutionControls.OutputFormat = &wire.OutputFormat{Type: wire.OutputFormatJSONSchema, Schema: wire.NativeJSON(schema)}
	e := r.executor(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	res := wait(t, start(ctx, e, "run-json", text("answer in JSON"), rec, nil))
	require.NoError(t, res.err)
	assert.Equal(t, answer, res.done.Content)
	q := r.srv.TurnRequests()[0]
	textCfg, _ := q.Body["text"].(map[string]any)
	format, _ := textCfg["format"].(map[string]any)
	require.NotNil(t, format, "text.format in %s", q.RawBody)
	assert.Equal(t, "json_schema", format["type"])
	got, err := json.Marshal(format["schema"])
	require.NoError(t, err)
	assert.JSONEq(t, schema, string(got))
}

// The controls are honoured both ways: the tools Codex offers change with
// them (web search and subagents on, then off as Core sends them).
func TestHarnessCodexControlsChangeTheTools(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	on := hcfg(r.a, r.ws)
	on.Configuration.ExecutionControls.WebSearch = wire.WebSearchLive
	on.Configuration.DisableSubagents = false
	on.Configuration.ExecutionControls.TextVerbosity = wire.TextVerbosityLow
	e := r.executor(on)
	require.NoError(t, wait(t, start(ctx, e, "run-on", text("Say hello"), newRecorder(), nil)).err)
	require.NoError(t, e.Close(ctx))
	off := r.executor(hcfg(r.a, r.ws))
	require.NoError(t, wait(t, start(ctx, off, "run-off", text("Say hello"), newRecorder(), nil)).err)
	reqs := r.srv.TurnRequests()
	require.Len(t, reqs, 2)
	has := func(q *modeltest.Request, part string) bool {
		for _, n := range q.ToolNames() {
			if strings.Contains(n, part) {
				return true
			}
		}
		return strings.Contains(string(q.RawBody), `"type":"`+part)
	}
	assert.True(t, has(reqs[0], "web_search"), "web search on: %v", reqs[0].ToolNames())
	verbosity := func(q *modeltest.Request) any { m, _ := q.Body["text"].(map[string]any); return m["verbosity"] }
	assert.Equal(t, "low", verbosity(reqs[0]))
	assert.Equal(t, "medium", verbosity(reqs[1]))
	// Subagents are a deferred tool namespace, offered through tool_search.
	assert.Contains(t, string(reqs[0].RawBody), "multi_agent_v1", "subagents on")
	assert.NotContains(t, string(reqs[1].RawBody), "multi_agent_v1", "subagents off")
	assert.False(t, has(reqs[1], "web_search"), "web search off: %v", reqs[1].ToolNames())
}

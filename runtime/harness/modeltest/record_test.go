package modeltest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// textOf is the concatenated text deltas of a stream of either API.
func textOf(t *testing.T, events []modeltest.Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range decoded(t, events) {
		switch ev["type"] {
		case "response.output_text.delta":
			b.WriteString(ev["delta"].(string))
		case "content_block_delta":
			if d := ev["delta"].(map[string]any); d["type"] == "text_delta" {
				b.WriteString(d["text"].(string))
			}
		}
	}
	return b.String()
}

func TestRequestsAreRecordedWithCredentialsRedacted(t *testing.T) {
	srv := modeltest.New(t)
	resp := post(t, srv, "/v1/responses", codexBody("Say hello"),
		"Authorization", "Bearer sk-secret", "Session-Id", "thread-1", "Originator", "codex_exec")
	_, err := modeltest.ReadEvents(resp.Body)
	require.NoError(t, err)
	resp = post(t, srv, "/v1/messages?beta=true", claudeBody(userText("hi")),
		"X-Api-Key", "sk-ant-secret", "Anthropic-Version", "2023-06-01")
	_, err = modeltest.ReadEvents(resp.Body)
	require.NoError(t, err)

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	codex := reqs[0]
	assert.Equal(t, 1, codex.Seq)
	assert.Equal(t, 1, codex.TurnSeq)
	assert.Equal(t, modeltest.APIResponses, codex.API)
	assert.Equal(t, http.MethodPost, codex.Method)
	assert.Equal(t, "/v1/responses", codex.Path)
	assert.Equal(t, "Bearer [redacted]", codex.Header.Get("Authorization"))
	assert.Equal(t, "thread-1", codex.Header.Get("Session-Id"))
	assert.Equal(t, "codex_exec", codex.Header.Get("Originator"))
	assert.Equal(t, "gpt-5.5", codex.Model())
	assert.True(t, codex.Stream())
	assert.Equal(t, "You are Codex.", codex.Body["instructions"])
	assert.NotContains(t, string(mustJSON(t, codex.Header)), "sk-secret")

	claude := reqs[1]
	assert.Equal(t, 2, claude.TurnSeq)
	assert.Equal(t, "beta=true", claude.RawQuery)
	assert.Equal(t, modeltest.Redacted, claude.Header.Get("X-Api-Key"))
	assert.Equal(t, "2023-06-01", claude.Header.Get("Anthropic-Version"))
	assert.NotContains(t, string(mustJSON(t, claude.Header)), "sk-ant-secret")
	assert.Equal(t, srv.Requests(), srv.TurnRequests())
}

func TestRequestAccessorsResponses(t *testing.T) {
	srv := modeltest.New(t)
	call := map[string]any{"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": `{"cmd":"ls"}`}
	out := map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"}
	steer := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "and then stop"}}}
	custom := map[string]any{"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"}
	customOut := map[string]any{"type": "custom_tool_call_output", "call_id": "call_2",
		"output": []any{map[string]any{"type": "input_text", "text": "Success."}}}

	for _, body := range []map[string]any{
		codexBody("TOOL", call, out),
		codexBody("TOOL", call, out, steer),
		codexBody("EDIT", custom, customOut),
	} {
		events := stream(t, srv, "/v1/responses", body)
		require.NotEmpty(t, events)
	}
	reqs := srv.TurnRequests()
	require.Len(t, reqs, 3)

	r := reqs[0]
	assert.Equal(t, []string{"<environment_context>cwd</environment_context>", "TOOL"}, r.UserTexts())
	assert.Equal(t, "TOOL", r.LastUserText())
	assert.Equal(t, []string{"exec_command", "apply_patch", "web_search"}, r.ToolNames())
	assert.True(t, r.HasTool("apply_patch"))
	assert.False(t, r.HasTool("Bash"))
	assert.Equal(t, "custom", r.Tools()[1].Type)
	tr, ok := r.LastToolResult()
	require.True(t, ok)
	assert.Equal(t, "call_1", tr.CallID)
	assert.Equal(t, "exec_command", tr.Name)
	assert.Equal(t, "function_call_output", tr.Type)
	assert.Equal(t, "a.txt\nb.txt", tr.Output)

	r = reqs[1]
	assert.Equal(t, "and then stop", r.LastUserText())
	_, ok = r.LastToolResult()
	assert.False(t, ok, "a steered message follows the tool result")
	assert.Len(t, r.ToolResults(), 1)

	tr, ok = reqs[2].LastToolResult()
	require.True(t, ok)
	assert.Equal(t, "custom_tool_call_output", tr.Type)
	assert.Equal(t, "apply_patch", tr.Name)
	assert.Equal(t, "Success.", tr.Output)
}

func TestRequestAccessorsMessages(t *testing.T) {
	srv := modeltest.New(t)
	toolUse := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}},
	}}
	result := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
			"content": []any{map[string]any{"type": "text", "text": "denied"}}},
		map[string]any{"type": "text", "text": "<system-reminder>remember</system-reminder>"},
	}}
	first := userText("<system-reminder>ctx</system-reminder>", "TOOL")
	events := stream(t, srv, "/v1/messages", claudeBody(first, toolUse, result))
	assert.Equal(t, "Tool said: denied", textOf(t, events), "the default turn echoes a tool result")
	events = stream(t, srv, "/v1/messages", claudeBody(map[string]any{"role": "user", "content": "plain string"}))
	assert.Equal(t, "Hello from the scripted model.", textOf(t, events))

	reqs := srv.TurnRequests()
	r := reqs[0]
	assert.Equal(t, "TOOL", r.LastUserText(), "tool-result-only messages add no text, and reminders are not the user's text")
	assert.Equal(t, []string{"Bash", "Write", "mcp__aw__aw_weather"}, r.ToolNames())
	assert.Equal(t, "custom", r.Tools()[0].Type)
	tr, ok := r.LastToolResult()
	require.True(t, ok)
	assert.Equal(t, modeltest.ToolResult{CallID: "toolu_1", Name: "Bash", Type: "tool_result", Output: "denied", IsError: true,
		Raw: tr.Raw}, tr)
	assert.Equal(t, "plain string", reqs[1].LastUserText())
	_, ok = reqs[1].LastToolResult()
	assert.False(t, ok)
}

func TestScriptOrderFallbackAndResponders(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("one"))),
		modeltest.WithResponders(func(r *modeltest.Request) modeltest.Turn {
			return modeltest.Reply(modeltest.Text("you said " + r.LastUserText()))
		}))
	srv.Enqueue(modeltest.Reply(modeltest.Text("three")))
	srv.EnqueueFunc(modeltest.EchoToolResult("result: %s"))
	assert.Equal(t, 4, srv.Pending())

	out := map[string]any{"type": "function_call_output", "call_id": "c", "output": "42"}
	assert.Equal(t, "one", textOf(t, stream(t, srv, "/v1/responses", codexBody("a"))))
	assert.Equal(t, "you said b", textOf(t, stream(t, srv, "/v1/responses", codexBody("b"))))
	assert.Equal(t, "three", textOf(t, stream(t, srv, "/v1/messages", claudeBody(userText("c")))))
	assert.Equal(t, "result: 42", textOf(t, stream(t, srv, "/v1/responses", codexBody("d", out))))
	assert.Equal(t, 0, srv.Pending())
	assert.Equal(t, "Tool said: 42", textOf(t, stream(t, srv, "/v1/responses", codexBody("e", out))))

	srv.SetFallback(modeltest.Always(modeltest.Reply(modeltest.Text("fallback"))))
	assert.Equal(t, "fallback", textOf(t, stream(t, srv, "/v1/responses", codexBody("f"))))
}

func TestStrictScriptAndMisusedToolResultResponder(t *testing.T) {
	tb := &recordingTB{TB: t}
	srv := modeltest.New(tb, modeltest.WithStrictScript(), modeltest.WithResponders(modeltest.EchoToolResult("%s")))

	resp := post(t, srv, "/v1/responses", codexBody("no tool result here"))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	resp = post(t, srv, "/v1/responses", codexBody("script is empty now"))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, readJSON(t, resp)["error"].(map[string]any)["message"], "found the script empty")

	errs := tb.errors()
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0], "the last input is not a tool result")
	assert.Contains(t, errs[1], "turn request 2 found the script empty")
}

func TestBadScriptsAndBodies(t *testing.T) {
	tb := &recordingTB{TB: t}
	srv := modeltest.New(tb, modeltest.WithTurns(modeltest.Reply(modeltest.FunctionCall("f", "not json"))))
	resp := post(t, srv, "/v1/responses", codexBody("x"))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Len(t, tb.errors(), 1)
	assert.Contains(t, tb.errors()[0], "arguments are not JSON")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.OpenAIBaseURL()+"/responses", strings.NewReader("{oops"))
	require.NoError(t, err)
	resp, err = srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "invalid_request_error", readJSON(t, resp)["error"].(map[string]any)["type"])
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Nil(t, reqs[1].Body)
	assert.NotEmpty(t, reqs[1].DecodeError)
	assert.Equal(t, 0, reqs[1].TurnSeq, "a body that is not JSON takes no turn")
	assert.Len(t, tb.errors(), 1, "a client's bad body is not a scripting mistake")
}

func TestAwaitWaitsForTheNthTurnRequest(t *testing.T) {
	gate := modeltest.NewGate()
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Text("first")),
		modeltest.Reply(modeltest.Hold(gate), modeltest.Text("second")),
	))
	got := make(chan *modeltest.Request, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := srv.Await(t.Context(), 2)
		errc <- err
		got <- r
	}()

	resp, err := srv.Client().Get(srv.OpenAIBaseURL() + "/models")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	stream(t, srv, "/v1/responses", codexBody("one"))

	held := post(t, srv, "/v1/responses", codexBody("two"))
	require.NoError(t, <-errc)
	r := <-got
	assert.Equal(t, "two", r.LastUserText(), "recorded while its answer is held")
	assert.Equal(t, 3, r.Seq)
	assert.Equal(t, 2, r.TurnSeq)
	gate.Open()
	events, err := modeltest.ReadEvents(held.Body)
	require.NoError(t, err)
	assert.Equal(t, "second", textOf(t, events))

	any1, err := srv.AwaitRequest(t.Context(), 1)
	require.NoError(t, err)
	assert.Equal(t, modeltest.APIModels, any1.API)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = srv.Await(ctx, 3)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "2 received")
	_, err = srv.Await(t.Context(), 0)
	assert.Error(t, err)
}

func TestStartOutsideATest(t *testing.T) {
	srv, err := modeltest.Start(modeltest.WithTurns(modeltest.Reply(modeltest.CustomToolCall("apply_patch", "x"))))
	require.NoError(t, err)
	defer srv.Close()
	resp := post(t, srv, "/v1/messages", claudeBody(userText("x")))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Len(t, srv.Problems(), 1)
	assert.True(t, strings.HasPrefix(srv.Problems()[0], "modeltest: POST /v1/messages (request 1)"), srv.Problems()[0])
	assert.True(t, strings.HasPrefix(srv.URL(), "http://127.0.0.1:"), srv.URL())
	assert.Equal(t, srv.URL()+"/v1", srv.OpenAIBaseURL())
}

package modeltest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// geminiBody is a Gemini API request body as Gemini CLI sends one: its
// context message, then the contents given.
func geminiBody(contents ...any) map[string]any {
	all := append([]any{map[string]any{"role": "user", "parts": []any{
		map[string]any{"text": "This is the Gemini CLI. We are setting up the context for our chat."},
	}}}, contents...)
	return map[string]any{
		"contents":          all,
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "You are an agent."}}},
		"tools": []any{map[string]any{"functionDeclarations": []any{
			map[string]any{"name": "run_shell_command", "parametersJsonSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "read_file", "parametersJsonSchema": map[string]any{"type": "object"}},
		}}},
		"generationConfig": map[string]any{"temperature": 0},
	}
}

func geminiUser(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}
}

const geminiStreamPath = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"

// chunkParts is the parts of a streamed chunk's first candidate.
func chunkParts(t *testing.T, ev map[string]any) []any {
	t.Helper()
	cands := ev["candidates"].([]any)
	require.Len(t, cands, 1)
	return cands[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
}

func TestGeminiDefaultTurnStreamsThoughtsTextAndTheFinish(t *testing.T) {
	srv := modeltest.New(t)
	events := stream(t, srv, geminiStreamPath, geminiBody(geminiUser("Say hello")))
	evs := decoded(t, events)
	require.Len(t, evs, 7, "three thought deltas, three text deltas, the finish")
	var thought, text strings.Builder
	for i, ev := range evs[:6] {
		assert.Empty(t, events[i].Name, "the Gemini API names no events")
		parts := chunkParts(t, ev)
		require.Len(t, parts, 1)
		p := parts[0].(map[string]any)
		if p["thought"] == true {
			thought.WriteString(p["text"].(string))
		} else {
			text.WriteString(p["text"].(string))
		}
		assert.NotContains(t, ev["candidates"].([]any)[0], "finishReason", "only the last chunk finishes")
		assert.Equal(t, "gemini-2.5-pro", ev["modelVersion"], "the model the path named")
	}
	assert.Equal(t, "The user greets me; answer briefly.", thought.String())
	assert.Equal(t, "Hello from the scripted model.", text.String())
	last := evs[6]
	assert.Empty(t, chunkParts(t, last))
	assert.Equal(t, "STOP", last["candidates"].([]any)[0].(map[string]any)["finishReason"])
	assert.Equal(t, map[string]any{"promptTokenCount": 120.0, "cachedContentTokenCount": 20.0, "candidatesTokenCount": 22.0,
		"thoughtsTokenCount": 8.0, "totalTokenCount": 150.0}, last["usageMetadata"])

	reqs := srv.TurnRequests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, modeltest.APIGemini, r.API)
	assert.Equal(t, "gemini-2.5-pro", r.Model())
	assert.True(t, r.Stream())
	assert.Equal(t, "alt=sse", r.RawQuery)
	assert.Equal(t, "Say hello", r.LastUserText())
	assert.Equal(t, []string{"run_shell_command", "read_file"}, r.ToolNames())
}

func TestGeminiFunctionCallThenTextAfterTheFunctionResponse(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Text("Running it."), modeltest.GeminiShell("echo hi > proof.txt", "writes the proof").WithCallID("call-1")),
	))
	evs := decoded(t, stream(t, srv, geminiStreamPath, geminiBody(geminiUser("TOOL"))))
	require.Len(t, evs, 3, "the text, the call, the finish")
	call := chunkParts(t, evs[1])[0].(map[string]any)["functionCall"].(map[string]any)
	assert.Equal(t, map[string]any{"id": "call-1", "name": "run_shell_command",
		"args": map[string]any{"command": "echo hi > proof.txt", "description": "writes the proof"}}, call)

	// The CLI sends the model's call back and the command's outcome as a
	// function response; the default turn quotes it.
	second := geminiBody(geminiUser("TOOL"),
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": call}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
			"id": "call-1", "name": "run_shell_command", "response": map[string]any{"output": "Output: hi"}}}}})
	evs = decoded(t, stream(t, srv, geminiStreamPath, second))
	var text strings.Builder
	for _, ev := range evs {
		for _, p := range chunkParts(t, ev) {
			text.WriteString(p.(map[string]any)["text"].(string))
		}
	}
	assert.Equal(t, "Tool said: Output: hi", text.String())
	r := srv.TurnRequests()[1]
	tr, ok := r.LastToolResult()
	require.True(t, ok)
	assert.Equal(t, modeltest.ToolResult{CallID: "call-1", Name: "run_shell_command", Type: "functionResponse", Output: "Output: hi", Raw: tr.Raw}, tr)
	assert.Len(t, r.ToolResults(), 1)
	assert.Equal(t, "TOOL", r.LastUserText(), "a function response is not user text")
}

func TestGeminiDeniedFunctionResponseIsAnError(t *testing.T) {
	srv := modeltest.New(t)
	body := geminiBody(geminiUser("TOOL"),
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{}}}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
			"name": "run_shell_command", "response": map[string]any{"error": "the user denied it"}}}}})
	_ = stream(t, srv, geminiStreamPath, body)
	tr, ok := srv.TurnRequests()[0].LastToolResult()
	require.True(t, ok)
	assert.True(t, tr.IsError)
	assert.Equal(t, "the user denied it", tr.Output)
}

func TestGeminiGenerateContentAnswersWhole(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Reasoning("hm"), modeltest.Text(`{"model_choice":`, `"pro"}`))))
	resp := post(t, srv, "/v1beta/models/gemini-2.5-flash-lite:generateContent", geminiBody(geminiUser("route me")))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := readJSON(t, resp)
	cand := body["candidates"].([]any)[0].(map[string]any)
	assert.Equal(t, "STOP", cand["finishReason"])
	assert.Equal(t, []any{
		map[string]any{"text": "hm", "thought": true},
		map[string]any{"text": `{"model_choice":"pro"}`},
	}, cand["content"].(map[string]any)["parts"])
	assert.Equal(t, "gemini-2.5-flash-lite", body["modelVersion"])
	r := srv.TurnRequests()[0]
	assert.False(t, r.Stream())
	assert.Equal(t, "gemini-2.5-flash-lite", r.Model())
}

func TestGeminiErrorsHaveTheGoogleShape(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Fail(http.StatusNotFound, ""), modeltest.ContextLengthExceeded(),
		modeltest.Reply(modeltest.Text("partial"), modeltest.StreamError(modeltest.HTTPError{Status: 503, Message: "overloaded"}))))
	resp := post(t, srv, geminiStreamPath, geminiBody(geminiUser("FAIL404")))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, map[string]any{"error": map[string]any{"code": 404.0, "message": "not found", "status": "NOT_FOUND"}}, readJSON(t, resp))

	resp = post(t, srv, "/v1beta/models/m:generateContent", geminiBody(geminiUser("CTX")))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	e := readJSON(t, resp)["error"].(map[string]any)
	assert.Equal(t, "INVALID_ARGUMENT", e["status"])
	assert.Contains(t, e["message"], "exceeds the maximum number of tokens")

	evs := decoded(t, stream(t, srv, geminiStreamPath, geminiBody(geminiUser("go"))))
	require.Len(t, evs, 2)
	assert.Equal(t, map[string]any{"error": map[string]any{"code": 503.0, "message": "overloaded", "status": "UNAVAILABLE"}}, evs[1])
}

func TestGeminiUnknownMethodAndCountTokens(t *testing.T) {
	srv := modeltest.New(t)
	resp := post(t, srv, "/v1beta/models/gemini-2.5-pro:embedContent", geminiBody())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "NOT_FOUND", readJSON(t, resp)["error"].(map[string]any)["status"])
	resp = post(t, srv, "/v1beta/models/gemini-2.5-pro", geminiBody())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a model without a method")
	resp = post(t, srv, "/v1beta/models/gemini-2.5-pro:countTokens", geminiBody(geminiUser("count me")))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Positive(t, readJSON(t, resp)["totalTokens"])
	assert.Empty(t, srv.TurnRequests(), "none of these asks for a turn")
}

func TestGeminiCallWithNonObjectArgumentsIsAScriptingMistake(t *testing.T) {
	rec := &recordingTB{TB: t}
	srv := modeltest.New(rec, modeltest.WithTurns(modeltest.Reply(modeltest.FunctionCall("run_shell_command", `"not an object"`))))
	resp := post(t, srv, geminiStreamPath, geminiBody(geminiUser("go")))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Len(t, rec.errors(), 1)
	assert.Contains(t, rec.errors()[0], "not a JSON object")
}

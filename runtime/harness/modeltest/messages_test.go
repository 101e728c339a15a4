package modeltest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

func TestMessagesDefaultTurnEventOrderAndShapes(t *testing.T) {
	srv := modeltest.New(t)
	events := stream(t, srv, "/v1/messages?beta=true", claudeBody(userText("Say hello")))
	require.Equal(t, []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	}, eventNames(events))
	evs := decoded(t, events)
	for i, ev := range evs {
		assert.Equal(t, events[i].Name, ev["type"], "event %d names its type", i)
	}

	msg := evs[0]["message"].(map[string]any)
	assert.Equal(t, "message", msg["type"])
	assert.Equal(t, "assistant", msg["role"])
	assert.Equal(t, "scripted-model", msg["model"])
	assert.Equal(t, []any{}, msg["content"])
	assert.Nil(t, msg["stop_reason"])
	assert.True(t, strings.HasPrefix(msg["id"].(string), "msg_"))
	assert.Equal(t, map[string]any{
		"input_tokens": 120.0, "cache_creation_input_tokens": 0.0, "cache_read_input_tokens": 20.0, "output_tokens": 0.0,
	}, msg["usage"])

	assert.Equal(t, map[string]any{"type": "content_block_start", "index": 0.0,
		"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}, evs[2])
	var thinking strings.Builder
	for _, ev := range evs[3:6] {
		assert.EqualValues(t, 0, ev["index"])
		d := ev["delta"].(map[string]any)
		assert.Equal(t, "thinking_delta", d["type"])
		thinking.WriteString(d["thinking"].(string))
	}
	assert.Equal(t, "The user greets me; answer briefly.", thinking.String())
	sig := evs[6]["delta"].(map[string]any)
	assert.Equal(t, "signature_delta", sig["type"])
	assert.NotEmpty(t, sig["signature"])
	assert.Equal(t, map[string]any{"type": "content_block_stop", "index": 0.0}, evs[7])

	assert.Equal(t, map[string]any{"type": "content_block_start", "index": 1.0,
		"content_block": map[string]any{"type": "text", "text": ""}}, evs[8])
	var text strings.Builder
	for _, ev := range evs[9:12] {
		assert.EqualValues(t, 1, ev["index"])
		d := ev["delta"].(map[string]any)
		assert.Equal(t, "text_delta", d["type"])
		text.WriteString(d["text"].(string))
	}
	assert.Equal(t, "Hello from the scripted model.", text.String())

	assert.Equal(t, map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": 120.0, "cache_creation_input_tokens": 0.0, "cache_read_input_tokens": 20.0, "output_tokens": 30.0},
	}, evs[13])
	assert.Equal(t, map[string]any{"type": "message_stop"}, evs[14])
}

func TestMessagesToolUseStreamsInputJSON(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.ClaudeBash("echo agentwire-proof > proof.txt && cat proof.txt", "Write the proof")).
			WithUsage(modeltest.Usage{InputTokens: 10, CachedTokens: 4, CacheWriteTokens: 2, OutputTokens: 5}),
		modeltest.Reply(modeltest.ClaudeWrite("/w/a.txt", "hi\n").WithCallID("toolu_fixed")),
	))
	evs := decoded(t, stream(t, srv, "/v1/messages", claudeBody(userText("TOOL"))))

	start := evs[2]
	require.Equal(t, "content_block_start", start["type"])
	block := start["content_block"].(map[string]any)
	assert.Equal(t, "tool_use", block["type"])
	assert.Equal(t, "Bash", block["name"])
	assert.Equal(t, map[string]any{}, block["input"])
	assert.True(t, strings.HasPrefix(block["id"].(string), "toolu_"), block["id"])

	var partial strings.Builder
	for _, ev := range evs {
		if ev["type"] == "content_block_delta" {
			d := ev["delta"].(map[string]any)
			assert.Equal(t, "input_json_delta", d["type"])
			partial.WriteString(d["partial_json"].(string))
		}
	}
	var input map[string]any
	require.NoError(t, json.Unmarshal([]byte(partial.String()), &input))
	assert.Equal(t, map[string]any{"command": "echo agentwire-proof > proof.txt && cat proof.txt", "description": "Write the proof"}, input)

	delta := evs[len(evs)-2]
	assert.Equal(t, "tool_use", delta["delta"].(map[string]any)["stop_reason"])
	assert.Equal(t, map[string]any{
		"input_tokens": 10.0, "cache_creation_input_tokens": 2.0, "cache_read_input_tokens": 4.0, "output_tokens": 5.0,
	}, delta["usage"])

	evs = decoded(t, stream(t, srv, "/v1/messages", claudeBody(userText("EDIT"))))
	assert.Equal(t, "toolu_fixed", evs[2]["content_block"].(map[string]any)["id"])
	assert.Equal(t, "Write", evs[2]["content_block"].(map[string]any)["name"])
}

func TestMessagesHTTPErrors(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Fail(529, ""),
		modeltest.Fail(http.StatusUnauthorized, "invalid x-api-key"),
		modeltest.ContextLengthExceeded(),
	))
	resp := post(t, srv, "/v1/messages", claudeBody(userText("FAIL529")))
	assert.Equal(t, 529, resp.StatusCode)
	body := readJSON(t, resp)
	assert.Equal(t, "error", body["type"])
	assert.Equal(t, "overloaded_error", body["error"].(map[string]any)["type"])
	assert.NotEmpty(t, body["error"].(map[string]any)["message"])
	assert.NotEmpty(t, body["request_id"])

	resp = post(t, srv, "/v1/messages", claudeBody(userText("FAIL401")))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, map[string]any{"type": "authentication_error", "message": "invalid x-api-key"}, readJSON(t, resp)["error"])

	resp = post(t, srv, "/v1/messages", claudeBody(userText("CTX")))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	e := readJSON(t, resp)["error"].(map[string]any)
	assert.Equal(t, "invalid_request_error", e["type"])
	assert.True(t, strings.HasPrefix(e["message"].(string), "prompt is too long"), e["message"])
}

func TestMessagesStreamErrorAndDrop(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Text("par"), modeltest.StreamError(modeltest.HTTPError{Status: 529})),
		modeltest.Reply(modeltest.Reasoning("hmm"), modeltest.Drop()),
	))
	events := stream(t, srv, "/v1/messages", claudeBody(userText("x")))
	last := decoded(t, events)[len(events)-1]
	assert.Equal(t, map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}}, last)
	assert.NotContains(t, eventNames(events), "message_stop")

	resp := post(t, srv, "/v1/messages", claudeBody(userText("y")))
	events, err := modeltest.ReadEvents(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, []string{"message_start", "ping", "content_block_start", "content_block_delta"}, eventNames(events))
}

func TestMessagesNotStreamedAndCountTokens(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(
		modeltest.Reasoning("think").WithSignature("sig-1"), modeltest.Text("ok"), modeltest.FunctionCall("mcp__aw__aw_weather", `{"city":"Oslo"}`),
	)))
	body := claudeBody(userText("x"))
	body["stream"] = false
	resp := post(t, srv, "/v1/messages", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := readJSON(t, resp)
	assert.Equal(t, "tool_use", got["stop_reason"])
	content := got["content"].([]any)
	require.Len(t, content, 3)
	assert.Equal(t, map[string]any{"type": "thinking", "thinking": "think", "signature": "sig-1"}, content[0])
	assert.Equal(t, map[string]any{"type": "text", "text": "ok"}, content[1])
	assert.Equal(t, map[string]any{"city": "Oslo"}, content[2].(map[string]any)["input"])

	resp = post(t, srv, "/v1/messages/count_tokens", claudeBody(userText("count me")))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	n := readJSON(t, resp)["input_tokens"].(float64)
	assert.Greater(t, n, 0.0)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, modeltest.APICountTokens, reqs[1].API)
	assert.Equal(t, 0, reqs[1].TurnSeq, "count_tokens takes no turn")
	assert.Equal(t, "count me", reqs[1].LastUserText())
}

// A custom tool call has no Messages API form: the test that scripts one
// fails, and the client gets a 500 with the reason.
func TestMessagesCustomToolCallIsAScriptingMistake(t *testing.T) {
	tb := &recordingTB{TB: t}
	srv := modeltest.New(tb, modeltest.WithTurns(modeltest.Reply(modeltest.CodexApplyPatch("*** Begin Patch\n*** End Patch\n"))))
	resp := post(t, srv, "/v1/messages", claudeBody(userText("EDIT")))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	e := readJSON(t, resp)["error"].(map[string]any)
	assert.Contains(t, e["message"], "no custom tool calls")
	require.Len(t, tb.errors(), 1)
	assert.Contains(t, tb.errors()[0], "custom tool call apply_patch")
	assert.Equal(t, tb.errors(), srv.Problems())
}

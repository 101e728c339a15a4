package modeltest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

func TestResponsesDefaultTurnEventOrderAndShapes(t *testing.T) {
	srv := modeltest.New(t)
	events := stream(t, srv, "/v1/responses", codexBody("Say hello"))

	require.Equal(t, []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed",
	}, eventNames(events))

	evs := decoded(t, events)
	for i, ev := range evs {
		assert.Equal(t, events[i].Name, ev["type"], "event %d names its type", i)
		assert.EqualValues(t, i, ev["sequence_number"], "event %d", i)
	}

	created := evs[0]["response"].(map[string]any)
	assert.Equal(t, "response", created["object"])
	assert.Equal(t, "in_progress", created["status"])
	assert.Equal(t, "gpt-5.5", created["model"])
	assert.Equal(t, []any{}, created["output"])
	respID := created["id"].(string)
	assert.NotEmpty(t, respID)

	// The reasoning item at output_index 0.
	added := evs[2]["item"].(map[string]any)
	rsID := added["id"].(string)
	assert.Equal(t, "reasoning", added["type"])
	assert.Equal(t, []any{}, added["summary"])
	assert.EqualValues(t, 0, evs[2]["output_index"])
	for _, ev := range evs[3:9] {
		assert.Equal(t, rsID, ev["item_id"])
		assert.EqualValues(t, 0, ev["output_index"])
		assert.EqualValues(t, 0, ev["summary_index"])
	}
	assert.Equal(t, "The user ", evs[4]["delta"])
	assert.Equal(t, "The user greets me; answer briefly.", evs[7]["text"])
	rsDone := evs[9]["item"].(map[string]any)
	assert.Equal(t, []any{map[string]any{"type": "summary_text", "text": "The user greets me; answer briefly."}}, rsDone["summary"])
	assert.NotEmpty(t, rsDone["encrypted_content"])

	// The message item at output_index 1.
	msg := evs[10]["item"].(map[string]any)
	msgID := msg["id"].(string)
	assert.NotEqual(t, rsID, msgID)
	assert.Equal(t, map[string]any{"id": msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}, msg)
	for _, ev := range evs[11:17] {
		assert.Equal(t, msgID, ev["item_id"])
		assert.EqualValues(t, 1, ev["output_index"])
		assert.EqualValues(t, 0, ev["content_index"])
	}
	var text strings.Builder
	for _, ev := range evs[12:15] {
		text.WriteString(ev["delta"].(string))
		assert.Equal(t, []any{}, ev["logprobs"])
	}
	assert.Equal(t, "Hello from the scripted model.", text.String())
	assert.Equal(t, "Hello from the scripted model.", evs[15]["text"])
	part := evs[16]["part"].(map[string]any)
	assert.Equal(t, "output_text", part["type"])
	assert.Equal(t, "Hello from the scripted model.", part["text"])
	msgDone := evs[17]["item"].(map[string]any)
	assert.Equal(t, "completed", msgDone["status"])
	assert.Equal(t, "Hello from the scripted model.", msgDone["content"].([]any)[0].(map[string]any)["text"])

	completed := evs[18]["response"].(map[string]any)
	assert.Equal(t, respID, completed["id"])
	assert.Equal(t, "completed", completed["status"])
	assert.Len(t, completed["output"], 2)
	assert.Equal(t, map[string]any{
		"input_tokens":          120.0,
		"input_tokens_details":  map[string]any{"cached_tokens": 20.0},
		"output_tokens":         30.0,
		"output_tokens_details": map[string]any{"reasoning_tokens": 8.0},
		"total_tokens":          150.0,
	}, completed["usage"])
}

func TestResponsesFunctionCallStreamsArguments(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(
			modeltest.Text("Running it."),
			modeltest.CodexExecEscalated("echo agentwire-proof > proof.txt", "write the proof file"),
		).WithUsage(modeltest.Usage{InputTokens: 7, CachedTokens: 1, OutputTokens: 3, ReasoningTokens: 2}),
	))
	evs := decoded(t, stream(t, srv, "/v1/responses", codexBody("TOOL")))

	var added, done map[string]any
	var deltas strings.Builder
	var argsDone map[string]any
	for _, ev := range evs {
		switch ev["type"] {
		case "response.output_item.added":
			if it := ev["item"].(map[string]any); it["type"] == "function_call" {
				added = ev
			}
		case "response.output_item.done":
			if it := ev["item"].(map[string]any); it["type"] == "function_call" {
				done = ev
			}
		case "response.function_call_arguments.delta":
			deltas.WriteString(ev["delta"].(string))
		case "response.function_call_arguments.done":
			argsDone = ev
		}
	}
	require.NotNil(t, added)
	require.NotNil(t, done)
	item := added["item"].(map[string]any)
	assert.EqualValues(t, 1, added["output_index"], "after the message item")
	assert.Equal(t, "", item["arguments"], "added carries empty arguments")
	assert.Equal(t, "exec_command", item["name"])
	callID := item["call_id"].(string)
	assert.NotEmpty(t, callID)

	doneItem := done["item"].(map[string]any)
	assert.Equal(t, callID, doneItem["call_id"])
	assert.Equal(t, item["id"], doneItem["id"])
	assert.Equal(t, "completed", doneItem["status"])
	args := doneItem["arguments"].(string)
	assert.Equal(t, args, deltas.String())
	assert.Equal(t, args, argsDone["arguments"])
	assert.Equal(t, item["id"], argsDone["item_id"])
	var decodedArgs map[string]any
	require.NoError(t, json.Unmarshal([]byte(args), &decodedArgs))
	assert.Equal(t, map[string]any{
		"cmd": "echo agentwire-proof > proof.txt", "sandbox_permissions": "require_escalated", "justification": "write the proof file",
	}, decodedArgs)

	last := evs[len(evs)-1]
	assert.Equal(t, "response.completed", last["type"])
	assert.Equal(t, map[string]any{
		"input_tokens": 7.0, "input_tokens_details": map[string]any{"cached_tokens": 1.0},
		"output_tokens": 3.0, "output_tokens_details": map[string]any{"reasoning_tokens": 2.0}, "total_tokens": 10.0,
	}, last["response"].(map[string]any)["usage"])
}

func TestResponsesCustomToolCall(t *testing.T) {
	patch := modeltest.AddFilePatch("hello.txt", "hello\nworld\n")
	assert.Equal(t, "*** Begin Patch\n*** Add File: hello.txt\n+hello\n+world\n*** End Patch\n", patch)
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.CodexApplyPatch(patch).WithCallID("call_edit"))))
	events := stream(t, srv, "/v1/responses", codexBody("EDIT"))
	require.Equal(t, []string{
		"response.created", "response.in_progress", "response.output_item.added",
		"response.custom_tool_call_input.delta", "response.custom_tool_call_input.delta",
		"response.custom_tool_call_input.done", "response.output_item.done", "response.completed",
	}, eventNames(events))
	evs := decoded(t, events)
	added := evs[2]["item"].(map[string]any)
	assert.Equal(t, "custom_tool_call", added["type"])
	assert.Equal(t, "", added["input"])
	assert.Equal(t, evs[3]["delta"].(string)+evs[4]["delta"].(string), patch)
	assert.Equal(t, patch, evs[5]["input"])
	done := evs[6]["item"].(map[string]any)
	assert.Equal(t, map[string]any{
		"id": added["id"], "type": "custom_tool_call", "status": "completed", "call_id": "call_edit", "name": "apply_patch", "input": patch,
	}, done)
}

func TestResponsesHTTPErrors(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Fail(http.StatusTooManyRequests, "slow down"),
		modeltest.ContextLengthExceeded(),
		modeltest.FailWith(modeltest.HTTPError{Status: 503, Header: http.Header{"Retry-After": {"0"}}}),
	))

	resp := post(t, srv, "/v1/responses", codexBody("FAIL429"))
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, map[string]any{"error": map[string]any{
		"message": "slow down", "type": "requests", "param": nil, "code": "rate_limit_exceeded",
	}}, readJSON(t, resp))

	resp = post(t, srv, "/v1/responses", codexBody("CTX"))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	body := readJSON(t, resp)["error"].(map[string]any)
	assert.Equal(t, "context_length_exceeded", body["code"])
	assert.Equal(t, "invalid_request_error", body["type"])
	assert.NotEmpty(t, body["message"])

	resp = post(t, srv, "/v1/responses", codexBody("FAIL503"))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "0", resp.Header.Get("Retry-After"))
	body = readJSON(t, resp)["error"].(map[string]any)
	assert.Equal(t, "server_error", body["type"])
	assert.Nil(t, body["code"])
	assert.Equal(t, "service unavailable", body["message"])
}

func TestResponsesStreamError(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(
		modeltest.Text("partial"),
		modeltest.StreamError(modeltest.HTTPError{Code: "context_length_exceeded", Message: "too long"}),
	)))
	events := stream(t, srv, "/v1/responses", codexBody("x"))
	last, err := events[len(events)-1].Object()
	require.NoError(t, err)
	assert.Equal(t, "response.failed", last["type"])
	resp := last["response"].(map[string]any)
	assert.Equal(t, "failed", resp["status"])
	assert.Equal(t, "context_length_exceeded", resp["error"].(map[string]any)["code"])
	assert.Equal(t, "too long", resp["error"].(map[string]any)["message"])
	assert.NotContains(t, eventNames(events), "response.completed")
}

func TestResponsesDropCutsTheConnection(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("Hel", "lo"), modeltest.Drop(), modeltest.Text("never"))))
	resp := post(t, srv, "/v1/responses", codexBody("x"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events, err := modeltest.ReadEvents(resp.Body)
	require.Error(t, err, "the stream is cut, not ended")
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	names := eventNames(events)
	assert.Equal(t, []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
	}, names)
}

// A held stream sends nothing after the gate until the test opens it; the
// check uses no clock: every event after the gate is read after Open was
// called.
func TestResponsesHeldStreamWaitsForTheGate(t *testing.T) {
	gate := modeltest.NewGate()
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(
		modeltest.Text("Hel"), modeltest.Hold(gate), modeltest.Text("lo"),
	)))
	resp := post(t, srv, "/v1/responses", codexBody("SLOW"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ch, errc := asyncEvents(resp.Body)

	<-gate.Reached()
	var before []string
	for ev := range ch {
		before = append(before, ev.Name)
		if ev.Name == "response.output_text.delta" {
			break
		}
	}
	assert.Equal(t, []string{
		"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta",
	}, before)

	var opened atomic.Bool
	opened.Store(true)
	gate.Open()
	var after []modeltest.Event
	for ev := range ch {
		assert.True(t, opened.Load())
		after = append(after, ev)
	}
	require.NoError(t, <-errc)
	require.Equal(t, []string{
		"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed",
	}, eventNames(after))
	done, err := after[1].Object()
	require.NoError(t, err)
	assert.Equal(t, "Hello", done["text"], "one message item across the gate")
}

func TestResponsesClosingTheServerEndsAHeldStream(t *testing.T) {
	gate := modeltest.NewGate()
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("a"), modeltest.Hold(gate))))
	resp := post(t, srv, "/v1/responses", codexBody("x"))
	ch, errc := asyncEvents(resp.Body)
	<-gate.Reached()
	srv.Close()
	var names []string
	for ev := range ch {
		names = append(names, ev.Name)
	}
	assert.ErrorIs(t, <-errc, io.ErrUnexpectedEOF)
	assert.NotContains(t, names, "response.completed")
}

func TestResponsesNotStreamed(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("Hi ", "there"), modeltest.FunctionCall("aw_weather", map[string]any{"city": "Oslo"}))))
	body := codexBody("x")
	body["stream"] = false
	resp := post(t, srv, "/v1/responses", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := readJSON(t, resp)
	assert.Equal(t, "completed", got["status"])
	out := got["output"].([]any)
	require.Len(t, out, 2)
	assert.Equal(t, "Hi there", out[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
	assert.Equal(t, `{"city":"Oslo"}`, out[1].(map[string]any)["arguments"])
	assert.EqualValues(t, 150, got["usage"].(map[string]any)["total_tokens"])
}

func TestModelsAndUnknownPaths(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithModels("gpt-5.5", "scripted-model"))
	resp, err := srv.Client().Get(srv.OpenAIBaseURL() + "/models?client_version=0.171.0")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := readJSON(t, resp)
	assert.Equal(t, "list", got["object"])
	assert.Equal(t, []any{}, got["models"], "Codex reads an empty remote model list")
	data := got["data"].([]any)
	require.Len(t, data, 2)
	assert.Equal(t, "gpt-5.5", data[0].(map[string]any)["id"])
	assert.Equal(t, "model", data[0].(map[string]any)["object"])

	resp2 := post(t, srv, "/v1/chat/completions", map[string]any{"model": "m"})
	assert.Equal(t, http.StatusNotFound, resp2.StatusCode)
	assert.Equal(t, "unknown_url", readJSON(t, resp2)["error"].(map[string]any)["code"])

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, modeltest.APIModels, reqs[0].API)
	assert.Equal(t, "client_version=0.171.0", reqs[0].RawQuery)
	assert.Equal(t, modeltest.APIUnknown, reqs[1].API)
	assert.Empty(t, srv.TurnRequests())
}

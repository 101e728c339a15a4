package modeltest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// calls answers one unstreamed request with parts and returns each call's
// name and decoded arguments.
func calls(t *testing.T, api modeltest.API, parts ...modeltest.Part) (names []string, args []map[string]any) {
	t.Helper()
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(parts...)))
	var body map[string]any
	path := "/v1/responses"
	if api == modeltest.APIMessages {
		body, path = claudeBody(userText("x")), "/v1/messages"
	} else {
		body = codexBody("x")
	}
	body["stream"] = false
	resp := post(t, srv, path, body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := readJSON(t, resp)
	if api == modeltest.APIMessages {
		for _, b := range got["content"].([]any) {
			block := b.(map[string]any)
			names = append(names, block["name"].(string))
			args = append(args, block["input"].(map[string]any))
		}
		return names, args
	}
	for _, it := range got["output"].([]any) {
		item := it.(map[string]any)
		names = append(names, item["name"].(string))
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(item["arguments"].(string)), &a))
		args = append(args, a)
	}
	return names, args
}

func TestCodexToolHelpers(t *testing.T) {
	names, args := calls(t, modeltest.APIResponses,
		modeltest.CodexExec("ls -la"),
		modeltest.CodexRequestUserInput(modeltest.Question{
			ID: "color", Header: "Color", Question: "Which color?",
			Choices: []modeltest.Choice{{Label: "red", Description: "warm"}, {Label: "blue", Description: "cold"}},
		}),
	)
	assert.Equal(t, []string{"exec_command", "request_user_input"}, names)
	assert.Equal(t, map[string]any{"cmd": "ls -la"}, args[0])
	assert.Equal(t, map[string]any{"questions": []any{map[string]any{
		"id": "color", "header": "Color", "question": "Which color?",
		"options": []any{
			map[string]any{"label": "red", "description": "warm"},
			map[string]any{"label": "blue", "description": "cold"},
		},
	}}}, args[1])
}

func TestClaudeToolHelpers(t *testing.T) {
	names, args := calls(t, modeltest.APIMessages,
		modeltest.ClaudeWrite("/w/notes.txt", "hello\n"),
		modeltest.ClaudeAskUserQuestion(modeltest.Question{
			Header: "Color", Question: "Which color?", MultiSelect: true,
			Choices: []modeltest.Choice{{Label: "red", Description: "warm"}},
		}),
		modeltest.FunctionCall("mcp__aw__aw_weather", map[string]any{"city": "Oslo"}),
	)
	assert.Equal(t, []string{"Write", "AskUserQuestion", "mcp__aw__aw_weather"}, names)
	assert.Equal(t, map[string]any{"file_path": "/w/notes.txt", "content": "hello\n"}, args[0])
	assert.Equal(t, map[string]any{"questions": []any{map[string]any{
		"question": "Which color?", "header": "Color", "multiSelect": true,
		"options": []any{map[string]any{"label": "red", "description": "warm"}},
	}}}, args[1])
	assert.Equal(t, map[string]any{"city": "Oslo"}, args[2])
}

// SlowText interleaves pauses between its deltas; with no delay it needs
// no clock and still streams one message item.
func TestSlowTextIsOneMessage(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.SlowText(0, "a", "b", "c"))))
	events := stream(t, srv, "/v1/responses", codexBody("SLOW"))
	assert.Equal(t, "abc", textOf(t, events))
	added := 0
	for _, name := range eventNames(events) {
		if name == "response.output_item.added" {
			added++
		}
	}
	assert.Equal(t, 1, added)
}

// A function call's arguments that are not an object have no tool_use form.
func TestMessagesToolUseNeedsAnObject(t *testing.T) {
	tb := &recordingTB{TB: t}
	srv := modeltest.New(tb, modeltest.WithTurns(modeltest.Reply(modeltest.FunctionCall("f", []string{"a"}))))
	resp := post(t, srv, "/v1/messages", claudeBody(userText("x")))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Len(t, tb.errors(), 1)
	assert.Contains(t, tb.errors()[0], "not a JSON object")
}

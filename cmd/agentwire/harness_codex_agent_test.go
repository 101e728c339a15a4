package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// TestHarnessCodexAgentFunctionTool runs real processes end to end:
// `agentwire core serve`, `agentwire runtime --harness codex` with the
// real Codex CLI and the scripted model endpoint. An Agent of the project
// declares one function tool and its instructions; a Session runs it; the
// model calls the tool; `agentwire turn run --functions` answers the call
// from a shell command; the Turn completes, and the model's next request
// carries the command's output as the call's result. The model saw the
// tool the Agent declared and the Agent's instructions.
func TestHarnessCodexAgentFunctionTool(t *testing.T) {
	codexBin := install.RequireCodex(t)
	e := newCrashEnv(t)
	srv := modeltest.New(t,
		modeltest.WithTurns(modeltest.Reply(modeltest.Text("Let me look. "), modeltest.FunctionCall("lookup", map[string]string{"city": "Paris"}))),
		modeltest.WithResponders(modeltest.EchoToolResult("The tool said: %s")),
	)
	workspace := filepath.Join(e.dir, "workspace")
	require.NoError(t, os.MkdirAll(workspace, 0o700))
	envID := e.environment(nil)
	const keyEnv = "AGENTWIRE_E2E_CODEX_KEY"
	t.Setenv(keyEnv, "sk-e2e-dummy")
	rt := e.runtime("--harness", "codex="+codexBin, "--codex-model", "scripted-model", "--codex-base-url", srv.OpenAIBaseURL(),
		"--codex-key-env", keyEnv, "--codex-state", filepath.Join(e.dir, "codex-state"), "--environment", envID+"="+workspace)
	e.waitConnected(1)

	code, ag := e.api.do("POST", "/api/v1/agents", map[string]any{
		"name": "weather", "agent_kind": "codex", "instructions": "Answer about the weather in one line.",
		"function_tools": []any{map[string]any{"name": "lookup", "description": "Today's weather in a city.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required": []string{"city"}, "additionalProperties": false}}},
	})
	require.Equal(t, 201, code, "%v", ag)
	code, ses := e.api.do("POST", "/api/v1/sessions", map[string]any{"agent_id": ag["id"], "environment_id": envID})
	require.Equal(t, 201, code, "%v", ses)

	run := exec.Command(e.bin, "turn", "run", "--core", e.base, "--session", ses["id"].(string),
		"--functions", `printf 'sunny in '; grep -o Paris`, "weather in Paris?")
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+e.proj.Secret)
	out, err := run.Output()
	require.NoError(t, err, "turn run: %s\nruntime: %s", out, rt.logs.String())
	assert.Contains(t, string(out), `function_call {"interaction_id":`)
	assert.Contains(t, string(out), `"name":"lookup"`)
	assert.Contains(t, string(out), `"outcome":"applied"`, "the Runtime applied the function result")
	assert.Contains(t, string(out), `The tool said: sunny in Paris`)
	assert.Contains(t, string(out), `status {"state":"completed"}`)

	reqs := srv.TurnRequests()
	require.Len(t, reqs, 2, "the call, then the answer to its result")
	assert.True(t, reqs[0].HasTool("lookup"), "the model was offered the Agent's tool: %v", reqs[0].ToolNames())
	body, err := json.Marshal(reqs[0].Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "Answer about the weather in one line.", "the Agent's instructions reached the model")
	tr, ok := reqs[1].LastToolResult()
	require.True(t, ok, "the second request carries the tool result")
	assert.Equal(t, "sunny in Paris", strings.TrimSpace(tr.Output))
}

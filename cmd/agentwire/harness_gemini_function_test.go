package main

import (
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

// TestHarnessGeminiAgentFunctionTool runs real processes end to end:
// `agentwire core serve`, `agentwire runtime --harness gemini` with the
// real Gemini CLI (`gemini --acp`) and the scripted Gemini API on
// 127.0.0.1. An Agent of the gemini kind declares one function tool; the
// model calls it as Gemini CLI shows it (mcp_aw_lookup, a tool of the MCP
// server the Runtime's ACP adapter hosts); Gemini CLI calls that server
// without asking; the call reaches the API client as a function_call;
// `agentwire turn run --functions` answers it from a shell command; the
// answer goes back to the model as the tool's result, and the Turn
// completes with an answer that carries it.
func TestHarnessGeminiAgentFunctionTool(t *testing.T) {
	geminiBin := install.RequireGemini(t)
	e := newCrashEnv(t)
	srv := modeltest.New(t,
		modeltest.WithTurns(modeltest.Reply(modeltest.Text("Let me look. "), modeltest.FunctionCall("mcp_aw_lookup", map[string]string{"city": "Paris"}))),
		modeltest.WithResponders(modeltest.EchoToolResult("The tool said: %s")),
	)
	workspace := filepath.Join(e.dir, "workspace")
	require.NoError(t, os.MkdirAll(workspace, 0o700))
	envID := e.environment(nil)
	const keyEnv = "AGENTWIRE_E2E_GEMINI_KEY"
	t.Setenv(keyEnv, "e2e-dummy")
	rt := e.runtime("--harness", "gemini="+geminiBin, "--gemini-model", "gemini-2.5-pro", "--gemini-base-url", srv.URL(),
		"--gemini-key-env", keyEnv, "--acp-state", filepath.Join(e.dir, "acp-state"), "--environment", envID+"="+workspace)
	e.waitConnected(1)

	code, ag := e.api.do("POST", "/api/v1/agents", map[string]any{
		"name": "weather", "agent_kind": "gemini",
		"function_tools": []any{map[string]any{"name": "lookup", "description": "Today's weather in a city.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required": []string{"city"}}}},
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
	assert.Contains(t, string(out), `"name":"lookup"`, "the call names the Agent's function, not Gemini CLI's name for it")
	assert.Contains(t, string(out), `"outcome":"applied"`, "the Runtime applied the function result")
	assert.Contains(t, string(out), `The tool said: `)
	assert.Contains(t, string(out), `sunny in Paris`, "the answer carries the function's output")
	assert.NotContains(t, string(out), `permission_request`, "Gemini CLI called Core's function without asking")
	assert.Contains(t, string(out), `status {"state":"completed"}`)

	reqs := srv.TurnRequests()
	require.Len(t, reqs, 2, "the call, then the answer to its result")
	assert.True(t, reqs[0].HasTool("mcp_aw_lookup"), "the model was offered the Agent's tool: %v", reqs[0].ToolNames())
	tr, ok := reqs[1].LastToolResult()
	require.True(t, ok, "the second request carries the tool result")
	assert.Equal(t, "mcp_aw_lookup", tr.Name)
	assert.True(t, strings.Contains(tr.Output, "sunny in Paris"), "the model got the function's output: %q", tr.Output)
	assert.False(t, tr.IsError)
	assert.NotContains(t, rt.logs.String(), "Bearer ", "the MCP server's token is never logged")
}

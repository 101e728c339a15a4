package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// docsMCP is a streamable-HTTP MCP server on 127.0.0.1 with one tool,
// search; it records the Authorization header of every request.
type docsMCP struct {
	mu   sync.Mutex
	auth []string
	asks []string // the q of each tools/call
}

func (m *docsMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no server-sent stream
		return
	}
	m.mu.Lock()
	m.auth = append(m.auth, r.Header.Get("Authorization"))
	m.mu.Unlock()
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		answer["result"] = map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "docs", "version": "1"}}
	case "tools/list":
		answer["result"] = map[string]any{"tools": []map[string]any{{"name": "search", "description": "Search the docs.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}}}
	case "tools/call":
		var p struct {
			Arguments struct {
				Q string `json:"q"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(req.Params, &p)
		m.mu.Lock()
		m.asks = append(m.asks, p.Arguments.Q)
		m.mu.Unlock()
		answer["result"] = map[string]any{"content": []map[string]any{{"type": "text", "text": "the docs say " + p.Arguments.Q + " is fine"}}}
	default:
		answer["error"] = map[string]any{"code": -32601, "message": "method not found"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// TestHarnessClaudeAgentMCPThroughCore runs real processes end to end:
// `agentwire core serve`, `agentwire runtime --harness claude` with the
// real Claude Code CLI, the scripted model endpoint and an HTTP MCP server
// on 127.0.0.1. The project keeps the server's token in its Vault
// (`agentwire vault put`); its Agent names the server and the secret; the
// model calls the server's tool, approved at `turn run --approve-all`; the
// server sees the token, the model's next request carries the tool's
// answer, and the token is in none of Core's transcript, the Runtime's
// log or the CLI's output.
func TestHarnessClaudeAgentMCPThroughCore(t *testing.T) {
	claudeBin := install.RequireClaude(t)
	e := newCrashEnv(t)
	mcp := &docsMCP{}
	mcpSrv := httptest.NewServer(mcp)
	t.Cleanup(mcpSrv.Close)
	srv := modeltest.New(t,
		modeltest.WithTurns(modeltest.Reply(modeltest.Text("Let me check. "), modeltest.FunctionCall("mcp__docs__search", map[string]string{"q": "retries"}))),
		modeltest.WithResponders(modeltest.EchoToolResult("Checked: %s")),
	)
	const keyEnv = "AGENTWIRE_E2E_CLAUDE_KEY"
	t.Setenv(keyEnv, "sk-ant-e2e-dummy")
	rt := e.runtime("--harness", "claude="+claudeBin, "--claude-model", "scripted-model", "--claude-base-url", srv.URL(),
		"--claude-key-env", keyEnv, "--claude-state", filepath.Join(e.dir, "claude-state"), "--claude-retries", "0")
	e.waitConnected(1)

	const token = "tok-e2e-4f1d"
	put := exec.Command(e.bin, "vault", "put", "--core", e.base, "docs-token")
	put.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+e.proj.Secret)
	put.Stdin = strings.NewReader(token + "\n")
	out, err := put.CombinedOutput()
	require.NoError(t, err, "%s", out)
	code, ag := e.api.do("POST", "/api/v1/agents", map[string]any{"agent_kind": "claude",
		"mcp_servers": []any{map[string]any{"server_label": "docs", "server_url": mcpSrv.URL + "/mcp", "bearer_secret": "docs-token", "required": true}}})
	require.Equal(t, 201, code, "%v", ag)
	code, ses := e.api.do("POST", "/api/v1/sessions", map[string]any{"agent_id": ag["id"]})
	require.Equal(t, 201, code, "%v", ses)

	run := exec.Command(e.bin, "turn", "run", "--approve-all", "--core", e.base, "--session", ses["id"].(string), "are retries safe?")
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+e.proj.Secret)
	got, err := run.Output()
	require.NoError(t, err, "turn run: %s\nruntime: %s", got, rt.logs.String())
	assert.Contains(t, string(got), "Checked: the docs say retries is fine", "the tool's answer reached the model")
	assert.Contains(t, string(got), `status {"state":"completed"}`)

	mcp.mu.Lock()
	auth, asks := append([]string(nil), mcp.auth...), append([]string(nil), mcp.asks...)
	mcp.mu.Unlock()
	assert.Equal(t, []string{"retries"}, asks, "the server ran the call once")
	require.NotEmpty(t, auth)
	for _, a := range auth {
		assert.Equal(t, "Bearer "+token, a, "every request carried the Vault's token")
	}
	transcript, err := os.ReadFile(e.transcript())
	require.NoError(t, err)
	assert.Contains(t, string(transcript), `"bearer_token":"[redacted]"`, "the configuration went out with a token")
	for what, text := range map[string]string{"Core's transcript": string(transcript), "the Runtime's log": rt.logs.String(),
		"Core's log": e.core.logs.String(), "turn run's output": string(got)} {
		assert.NotContains(t, text, token, "%s shows the token", what)
	}
}

package claude

// HTTP MCP servers against the REAL Claude Code CLI: a small
// streamable-HTTP MCP server in the test (JSON-RPC 2.0 over POST, answered
// as application/json) on 127.0.0.1, and the scripted model endpoint
// making the model call its tools.

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// mcpTestServer is a streamable-HTTP MCP server offering search and
// delete; it records every Authorization header and tool call it got.
type mcpTestServer struct {
	srv   *httptest.Server
	token string // the bearer token it demands ("" = none)
	// readOnly annotates every tool readOnlyHint, which Claude Code could
	// take as a reason not to ask before calling it.
	readOnly bool

	mu    sync.Mutex
	auth  []string
	calls []mcpTestCall
}

type mcpTestCall struct {
	Name      string
	Arguments map[string]any
}

func newMCPTestServer(t *testing.T, token string) *mcpTestServer {
	m := &mcpTestServer{token: token}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mcpTestServer) URL() string { return m.srv.URL + "/mcp" }

func (m *mcpTestServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// No server-sent stream and no session to delete: the client falls
		// back to plain POSTs.
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	m.mu.Lock()
	m.auth = append(m.auth, r.Header.Get("Authorization"))
	m.mu.Unlock()
	if m.token != "" && r.Header.Get("Authorization") != "Bearer "+m.token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	var result any
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		result = map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "docs", "version": "1"}}
	case "tools/list":
		result = map[string]any{"tools": []map[string]any{
			{"name": "search", "description": "Search the docs.", "inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"q": map[string]any{"type": "string"}}}},
			{"name": "delete", "description": "Delete a doc.", "inputSchema": map[string]any{"type": "object"}},
		}}
		if m.readOnly {
			for _, tool := range result.(map[string]any)["tools"].([]map[string]any) {
				tool["annotations"] = map[string]any{"readOnlyHint": true, "destructiveHint": false}
			}
		}
	case "tools/call":
		var p mcpTestCall
		_ = json.Unmarshal(req.Params, &struct {
			Name      *string         `json:"name"`
			Arguments *map[string]any `json:"arguments"`
		}{&p.Name, &p.Arguments})
		m.mu.Lock()
		m.calls = append(m.calls, p)
		m.mu.Unlock()
		q, _ := p.Arguments["q"].(string)
		result = map[string]any{"content": []map[string]any{{"type": "text", "text": "docs say " + q + " is fine"}}, "isError": false}
	default:
		// Claude Code probes newer methods first (server/discover) and
		// falls back on method-not-found.
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		return
	}
	writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (m *mcpTestServer) seen() ([]string, []mcpTestCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.auth...), append([]mcpTestCall(nil), m.calls...)
}

// syncBuffer is a log sink the CLI's reader goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mcpRig is a rig whose adapter logs everything, at debug level, into log.
type mcpRig struct {
	*rig
	log   *syncBuffer
	state string
}

func newMCPRig(t *testing.T, opts ...modeltest.Option) *mcpRig {
	bin := install.RequireClaude(t)
	t.Setenv(keyEnv, testKey)
	srv := modeltest.New(t, opts...)
	log := &syncBuffer{}
	state := t.TempDir()
	a, err := New(Config{Binary: bin, Model: "scripted-model", BaseURL: srv.URL(), APIKeyEnv: keyEnv, StateDir: state,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	require.True(t, a.Declaration().Available)
	return &mcpRig{rig: &rig{t: t, srv: srv, a: a, key: "agents-api-ses-1"}, log: log, state: state}
}

// prepare starts an Executor with servers, observing tools.
func (r *mcpRig) prepare(ctx context.Context, servers ...wire.MCPHTTPServer) (*executor, error) {
	exe, err := r.a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "ses-1", Declaration: mcpDeclaration(),
		Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: r.key, StrictResume: true, ObserveToolObservations: true,
			DisableExecutionEnvironment: true, MCPHTTPServers: &servers}})
	if exe == nil {
		return nil, err
	}
	return exe.(*executor), err
}

// answering runs one Turn, answering each permission request with
// approve and recording the frames.
func answering(t *testing.T, ctx context.Context, e *executor, runID, text string, approve bool) (wire.Done, []wire.Payload) {
	rec := &recorder{}
	var wg sync.WaitGroup
	emit := func(ctx context.Context, p wire.Payload) error {
		_ = rec.emit(ctx, p)
		if q, ok := p.(wire.PermissionRequest); ok {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, e.Decide(ctx, runID, harness.Answer{InteractionID: q.RequestID,
					Permission: &wire.PermissionDecision{DeliveryID: "d-" + q.RequestID, Approved: &approve}}))
			}()
		}
		return nil
	}
	turn := harness.Turn{RunID: runID, Declaration: mcpDeclaration(),
		Input: wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: text}}}}}
	done, err := e.Run(ctx, turn, emit)
	require.NoError(t, err)
	wg.Wait()
	return done, rec.all()
}

// mcpDeclaration is the adapter's declaration with the HTTP MCP
// capabilities these tests prove.
func mcpDeclaration() harness.Declaration {
	c := capabilities()
	c.MCPHTTPTools, c.MCPHTTPRequired, c.MCPHTTPBearerAuth = wire.Supported, wire.Supported, wire.Supported
	return harness.Declaration{Kind: Kind, Available: true, Version: PinnedVersion, Capabilities: c}
}

// The model calls a tool of an HTTP MCP server: Core is asked first (a
// permission_request for mcp__docs__search), the server runs the call with
// the bearer token, the result reaches the model's next request, and the
// call is observed as tool_call before and after. The token reaches the
// server and nothing else: not the CLI's command line, a frame, the log,
// or a file the Executor leaves behind.
func TestHarnessClaudeMCPToolCall(t *testing.T) {
	const token = "mcp-bearer-secret-7f3a"
	docs := newMCPTestServer(t, token)
	r := newMCPRig(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.FunctionCall("mcp__docs__search", map[string]any{"q": "wire"})),
		modeltest.Reply(modeltest.Text("Found it."))))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	tok := token
	e, err := r.prepare(ctx, wire.MCPHTTPServer{ConnectionOrigin: wire.MCPOriginService, ServerLabel: "docs", ServerURL: docs.URL(),
		Required: true, BearerToken: &tok})
	require.NoError(t, err)

	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(e.proc.Pid()) + "/cmdline")
	require.NoError(t, err)
	assert.NotContains(t, string(cmdline), token, "the token is on the CLI's command line")
	require.NotEmpty(t, e.mcp.file)
	assert.Contains(t, string(cmdline), e.mcp.file, "the CLI reads the servers from the file")
	info, err := os.Stat(e.mcp.file)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "only the Runtime's user reads the token")
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(e.proc.Pid()) + "/environ")
	require.NoError(t, err)
	assert.NotContains(t, string(environ), token, "the token is in the CLI's environment")

	done, frames := answering(t, ctx, e, "run-1", "search the docs", true)
	assert.Equal(t, "Found it.", done.Content)

	auth, calls := docs.seen()
	require.NotEmpty(t, auth)
	for _, a := range auth {
		assert.Equal(t, "Bearer "+token, a, "every request to the server carries the token")
	}
	require.Len(t, calls, 1)
	assert.Equal(t, mcpTestCall{Name: "search", Arguments: map[string]any{"q": "wire"}}, calls[0])

	last, err := r.srv.Await(ctx, 2)
	require.NoError(t, err)
	res, ok := last.LastToolResult()
	require.True(t, ok)
	assert.False(t, res.IsError)
	assert.Contains(t, res.Output, "docs say wire is fine", "the model got the server's result")

	var asked []string
	var stages []string
	for _, f := range frames {
		switch p := f.(type) {
		case wire.PermissionRequest:
			asked = append(asked, p.Tool)
		case wire.ToolCall:
			assert.Equal(t, "mcp__docs__search", p.Name)
			stages = append(stages, p.Stage)
			require.NotNil(t, p.Observation)
			assert.Equal(t, "mcp", p.Observation.Kind)
			if p.Stage == wire.ToolStageAfter {
				assert.Equal(t, "completed", p.Observation.Status)
				assert.Contains(t, string(p.Observation.Output), "docs say wire is fine")
			}
		case wire.ErrorFrame:
			t.Errorf("an error frame: %+v", p)
		}
	}
	assert.Equal(t, []string{"mcp__docs__search"}, asked, "Core decides whether the tool runs")
	assert.Equal(t, []string{wire.ToolStageBefore, wire.ToolStageAfter}, stages)
	framesJSON, err := json.Marshal(frames)
	require.NoError(t, err)
	assert.NotContains(t, string(framesJSON), token, "the token is in a frame")

	file := e.mcp.file
	require.NoError(t, e.Close(ctx))
	_, err = os.Stat(file)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the token's file outlived the Executor")
	assert.NotContains(t, r.log.String(), token, "the token is in the log")
	assert.NotEmpty(t, r.log.String(), "the log was written (at debug level)")
	// Nothing the CLI or the adapter keeps for the Session holds it either.
	require.NoError(t, filepath.WalkDir(r.state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(b), token, "%s holds the token", path)
		return nil
	}))
}

// allowed_tools: a tool outside the list is denied by the adapter without
// asking Core, and the server never runs it; the model is told. It holds
// for a tool the server says is read-only too: Claude Code still asks
// can_use_tool for it, which is where the adapter refuses it.
func TestHarnessClaudeMCPAllowedTools(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "read_only_hint"}[readOnly], func(t *testing.T) {
			docs := newMCPTestServer(t, "")
			docs.readOnly = readOnly
			r := newMCPRig(t, modeltest.WithTurns(
				modeltest.Reply(modeltest.FunctionCall("mcp__docs__delete", map[string]any{"id": "1"})),
				modeltest.Reply(modeltest.Text("Could not delete."))))
			ctx, cancel := context.WithTimeout(context.Background(), cliWait)
			defer cancel()
			allowed := []string{"search"}
			e, err := r.prepare(ctx, wire.MCPHTTPServer{ConnectionOrigin: wire.MCPOriginService, ServerLabel: "docs", ServerURL: docs.URL(), AllowedTools: &allowed})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close(ctx)) }()

			done, frames := answering(t, ctx, e, "run-1", "delete doc 1", true)
			assert.Equal(t, "Could not delete.", done.Content)
			_, calls := docs.seen()
			assert.Empty(t, calls, "the server ran a tool outside allowed_tools")
			for _, f := range frames {
				_, asked := f.(wire.PermissionRequest)
				assert.False(t, asked, "Core was asked about a tool it cannot allow: %+v", f)
			}
			last, err := r.srv.Await(ctx, 2)
			require.NoError(t, err)
			res, ok := last.LastToolResult()
			require.True(t, ok)
			assert.True(t, res.IsError, "the model was told the tool did not run")
			assert.Contains(t, res.Output, "not in the Agent's allowed tools")
		})
	}
}

// A required server that is down fails the preparation, naming the
// server, before any model request; an optional one that is down is
// logged and the Turn runs without it.
func TestHarnessClaudeMCPRequiredServerDown(t *testing.T) {
	// A port nothing listens on: it was just released.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	downURL := "http://" + l.Addr().String() + "/mcp"
	require.NoError(t, l.Close())

	t.Run("required", func(t *testing.T) {
		r := newMCPRig(t, modeltest.WithFallback(modeltest.Always(modeltest.Reply(modeltest.Text("never")))))
		ctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		tok := "mcp-token-of-a-down-server"
		e, err := r.prepare(ctx, wire.MCPHTTPServer{ConnectionOrigin: wire.MCPOriginService, ServerLabel: "vault-docs", ServerURL: downURL,
			Required: true, BearerToken: &tok})
		require.Error(t, err)
		assert.Nil(t, e, "the failed start closed its CLI")
		var down *MCPServerError
		require.ErrorAs(t, err, &down)
		assert.Contains(t, err.Error(), `"vault-docs"`, "the error names the server")
		assert.NotContains(t, err.Error(), tok)
		assert.NotContains(t, r.log.String(), tok)
		assert.Empty(t, r.srv.TurnRequests(), "the model was called for a Run that cannot have its server")
		left, err := filepath.Glob(filepath.Join(r.state, "config", "*", "mcp-*.json"))
		require.NoError(t, err)
		assert.Empty(t, left, "the configuration file outlived the failed start")
	})
	t.Run("required_token_refused", func(t *testing.T) {
		// The server is up but refuses the token (401): Claude Code does
		// not connect, and the preparation fails as for a server that is
		// down, never showing the token.
		docs := newMCPTestServer(t, "the-right-token")
		r := newMCPRig(t, modeltest.WithFallback(modeltest.Always(modeltest.Reply(modeltest.Text("never")))))
		ctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		wrong := "a-wrong-token-5c2e"
		e, err := r.prepare(ctx, wire.MCPHTTPServer{ConnectionOrigin: wire.MCPOriginService, ServerLabel: "docs", ServerURL: docs.URL(),
			Required: true, BearerToken: &wrong})
		require.Error(t, err)
		assert.Nil(t, e)
		t.Logf("the preparation failed: %v", err)
		assert.Contains(t, err.Error(), `"docs"`)
		assert.NotContains(t, err.Error(), wrong)
		assert.NotContains(t, r.log.String(), wrong)
		auth, calls := docs.seen()
		require.NotEmpty(t, auth, "Claude Code tried the server")
		assert.Empty(t, calls)
		assert.Empty(t, r.srv.TurnRequests())
	})
	t.Run("optional", func(t *testing.T) {
		r := newMCPRig(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("Without docs."))))
		ctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		e, err := r.prepare(ctx, wire.MCPHTTPServer{ConnectionOrigin: wire.MCPOriginService, ServerLabel: "maybe-docs", ServerURL: downURL})
		require.NoError(t, err)
		defer func() { require.NoError(t, e.Close(ctx)) }()
		done, frames := answering(t, ctx, e, "run-1", "hi", true)
		assert.Equal(t, "Without docs.", done.Content)
		for _, f := range frames {
			_, isErr := f.(wire.ErrorFrame)
			assert.False(t, isErr, "an optional server's failure is no error of the Turn: %+v", f)
		}
		logged := r.log.String()
		assert.Contains(t, logged, "server_label=maybe-docs")
		assert.True(t, strings.Contains(logged, "status=failed"), "the log says the server failed: %s", logged)
	})
}

// Refused before any process: a label Claude Code would rewrite, and the
// adapter's own server's label.
func TestClaudeMCPLabels(t *testing.T) {
	assert.NoError(t, checkMCPServers([]wire.MCPHTTPServer{{ConnectionOrigin: wire.MCPOriginEnvironment, ServerLabel: "docs_2-x"}}))
	for _, bad := range []wire.MCPHTTPServer{
		{ConnectionOrigin: wire.MCPOriginService, ServerLabel: "my docs"},
		{ConnectionOrigin: wire.MCPOriginService, ServerLabel: mcpServerName},
		{ConnectionOrigin: "runtime", ServerLabel: "docs"},
	} {
		assert.Error(t, checkMCPServers([]wire.MCPHTTPServer{bad}), "%+v", bad)
	}
	m := &mcpHTTP{servers: []wire.MCPHTTPServer{{ServerLabel: "a"}, {ServerLabel: "a__b"}}}
	s, tool, ok := m.server("mcp__a__b__t")
	require.True(t, ok)
	assert.Equal(t, "a__b", s.ServerLabel, "the longest label is the server")
	assert.Equal(t, "t", tool)
	_, _, ok = m.server("mcp__aw__f")
	assert.False(t, ok, "a function of the adapter's own server is none of Core's HTTP servers")
	dir := t.TempDir()
	tok := "t0k"
	file, err := writeMCPConfig(dir, []wire.MCPHTTPServer{{ServerLabel: "docs", ServerURL: "http://127.0.0.1:1/mcp", BearerToken: &tok}})
	require.NoError(t, err)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.JSONEq(t, `{"mcpServers":{"docs":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer t0k"}}}}`, string(b))
	args := Config{Model: "m"}.args(launch{session: "s", functions: true, mcpFile: file})
	assert.NotContains(t, strings.Join(args, " "), tok)
	assert.Contains(t, args, file)
	assert.Contains(t, args, "--strict-mcp-config")
}

package acp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// mcpFixture is an MCP server on 127.0.0.1 that demands token.
func mcpFixture(t *testing.T, token string) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String() + "/mcp"
	require.NoError(t, l.Close())
	return url
}

func coreServer(label, url string, required bool, token string) wire.MCPHTTPServer {
	s := wire.MCPHTTPServer{ConnectionOrigin: wire.MCPOriginEnvironment, ServerLabel: label, ServerURL: url, Required: required}
	if token != "" {
		s.BearerToken = &token
	}
	return s
}

func TestRequiredMCPServerCheckedWithItsToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), fakeWait)
	defer cancel()
	const token = "tok-3f9a1c"
	up := mcpFixture(t, token)
	require.NoError(t, awaitRequired(ctx, []wire.MCPHTTPServer{coreServer("docs", up, true, token)}))

	err := awaitRequired(ctx, []wire.MCPHTTPServer{coreServer("docs", up, true, "wrong-"+token)})
	require.Error(t, err, "a credential the server refuses")
	assert.Contains(t, err.Error(), `"docs"`, "the failure names the server")
	assert.NotContains(t, err.Error(), token)

	err = awaitRequired(ctx, []wire.MCPHTTPServer{coreServer("down", closedURL(t), true, "")})
	assert.ErrorContains(t, err, `a required MCP server is not reachable: "down"`)
	assert.NoError(t, awaitRequired(ctx, []wire.MCPHTTPServer{coreServer("optional", closedURL(t), false, "")}),
		"an optional server is not checked")
}

func TestCoreMCPServersInSessionNew(t *testing.T) {
	tok := "secret"
	got := coreServers([]wire.MCPHTTPServer{coreServer("a", "http://127.0.0.1:1/mcp", false, tok), coreServer("b", "http://127.0.0.1:2/mcp", false, "")})
	require.Len(t, got, 2)
	assert.Equal(t, "a", got[0].Http.Name)
	assert.Equal(t, "http", got[0].Http.Type)
	require.Len(t, got[0].Http.Headers, 1)
	assert.Equal(t, "Bearer secret", got[0].Http.Headers[0].Value)
	assert.Empty(t, got[1].Http.Headers, "no token, no header")
}

func TestCoreMCPServersRefusedWhenTheyCannotBePassed(t *testing.T) {
	ag := Agent{Kind: "k", MCPHTTP: true, MCPToolName: geminiMCPToolName}
	allowed := []string{"bad name"}
	for _, c := range []struct {
		s    wire.MCPHTTPServer
		want string
	}{
		{coreServer("aw", "http://x", false, ""), "reserved for the adapter's function tools"},
		{coreServer("my_docs", "http://x", false, ""), `mcp_http_servers[0] ("my_docs"): gemini: the MCP server name`},
		{wire.MCPHTTPServer{ConnectionOrigin: "elsewhere", ServerLabel: "d", ServerURL: "http://x"}, "connection_origin"},
		{wire.MCPHTTPServer{ConnectionOrigin: wire.MCPOriginService, ServerLabel: "d", ServerURL: "http://x", AllowedTools: &allowed}, "allowed_tools"},
	} {
		err := checkMCPServers(ag, []wire.MCPHTTPServer{c.s})
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	err := checkMCPServers(ag, []wire.MCPHTTPServer{coreServer("d", "http://x", false, ""), coreServer("d", "http://y", false, "")})
	assert.ErrorContains(t, err, "given twice")
	assert.ErrorContains(t, checkMCPServers(Agent{Kind: "k"}, []wire.MCPHTTPServer{coreServer("d", "http://x", false, "")}),
		"does not take HTTP MCP servers")
}

// The fake agent gets Core's server in session/new and calls it with the
// header it was given.
func TestFakeAgentCallsCoresMCPServer(t *testing.T) {
	const token = "tok-77c2"
	url := mcpFixture(t, token)
	a := fakeFunctionAdapter(t)
	a.cfg.Agent.MCPHTTP = true
	ctx, cancel := context.WithTimeout(t.Context(), fakeWait)
	defer cancel()
	servers := []wire.MCPHTTPServer{coreServer("docs", url, true, token)}
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000fc",
		Configuration: wire.PromptRequest{MCPHTTPServers: &servers, ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}},
		Declaration:   a.Declaration(), WorkspaceDir: t.TempDir()})
	require.NoError(t, err)
	e := exe.(*executor)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), fakeWait)
		defer cancel()
		assert.NoError(t, e.Close(cctx))
	})
	ft := runFake(t, e, "run-core-mcp", "CALL nosuchtool")
	require.NoError(t, ft.wait(t))
	// The fixture has no tools: the call reached it (authorized) and was
	// answered as an unknown tool, which only an initialized session gets.
	assert.Contains(t, ft.done.Content, "nosuchtool")
	assert.NotContains(t, ft.done.Content, "Unauthorized")

	// A required server that is down fails the preparation.
	down := []wire.MCPHTTPServer{coreServer("gone", closedURL(t), true, "")}
	_, err = a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000fd",
		Configuration: wire.PromptRequest{MCPHTTPServers: &down, ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}},
		Declaration:   a.Declaration(), WorkspaceDir: t.TempDir()})
	assert.ErrorContains(t, err, `"gone"`)
}

func TestGeminiPoliciesForCoresServers(t *testing.T) {
	dir := t.TempDir()
	allowed := []string{"lookup"}
	servers := []wire.MCPHTTPServer{coreServer("docs", "http://x", false, ""), coreServer("kit", "http://y", false, "")}
	servers[1].AllowedTools = &allowed
	_, err := geminiSettings(dir, "gemini-2.5-pro", wire.PromptRequest{MCPHTTPServers: &servers, FunctionTools: lookupFunction})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, ".gemini", "policies", geminiPolicyFile))
	require.NoError(t, err)
	assert.Equal(t, `[[rule]]
mcpName = "docs"
toolName = ["*"]
decision = "ask_user"
priority = 900

[[rule]]
mcpName = "kit"
toolName = ["*"]
decision = "deny"
priority = 900

[[rule]]
mcpName = "kit"
toolName = ["lookup"]
decision = "ask_user"
priority = 950

`, string(b))
	settings, err := os.ReadFile(filepath.Join(dir, ".gemini", "settings.json"))
	require.NoError(t, err)
	assert.Contains(t, string(settings), `"allowed": [
      "aw",
      "docs",
      "kit"
    ]`, "only the adapter's and Core's servers connect")
	assert.Contains(t, string(settings), `"mcp_aw_lookup"`, "Core's functions run unasked")

	// Without servers the policy file goes.
	_, err = geminiSettings(dir, "gemini-2.5-pro", wire.PromptRequest{})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(dir, ".gemini", "policies", geminiPolicyFile))
}

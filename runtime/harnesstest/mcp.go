package harnesstest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

// HTTP MCP servers (mcp_http_tools, mcp_http_required,
// mcp_http_bearer_auth). MCP over streamable HTTP is an open protocol, not
// a Harness's native side, so the kit serves it itself: a small server on
// 127.0.0.1 (JSON-RPC 2.0 over POST, answered as application/json) that
// records every Authorization header and tool call it gets. The hook only
// makes the model call the tool (Step.MCP); what the server ran, with
// which credential, is the kit's to check.

// MCPCall is a call of a tool of one of the Turn's HTTP MCP servers.
type MCPCall struct {
	// Server is the server's label (server_label), Tool the tool's name
	// as the server lists it.
	Server string
	Tool   string
	Args   json.RawMessage
	// Outside: the tool is not in the server's allowed_tools. The native
	// side tries to call it, must not run it, and goes on with the plan
	// without saying anything for it.
	Outside bool
}

// mcpLabel is the label of the kit's server.
const mcpLabel = "kit"

// mcpLookup is the kit server's tool that answers (mcpResult), mcpErase
// one the scenarios leave outside allowed_tools.
const (
	mcpLookup = "lookup"
	mcpErase  = "erase"
)

// mcpResult is what lookup answers for q.
func mcpResult(q string) string { return "kit-mcp found " + q }

// mcpServer is the kit's MCP server.
type mcpServer struct {
	srv   *httptest.Server
	token string // the bearer token it demands ("" = none)

	mu    sync.Mutex
	auth  []string
	calls []string // tool name and arguments, "lookup {"q":"wire"}"
}

func newMCPServer(t *testing.T, token string) *mcpServer {
	m := &mcpServer{token: token}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mcpServer) url() string { return m.srv.URL + "/mcp" }

func (m *mcpServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// No server-sent stream and no session: plain POSTs only.
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
	if len(req.ID) == 0 || string(req.ID) == "null" {
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
			"serverInfo": map[string]any{"name": "harnesstest", "version": "1"}}
	case "ping":
		result = map[string]any{}
	case "tools/list":
		result = map[string]any{"tools": []map[string]any{
			{"name": mcpLookup, "description": "Look a word up.", "inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"q": map[string]any{"type": "string"}}}},
			{"name": mcpErase, "description": "Erase a word.", "inputSchema": map[string]any{"type": "object"}},
		}}
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(req.Params, &p)
		var args struct {
			Q string `json:"q"`
		}
		_ = json.Unmarshal(p.Arguments, &args)
		m.mu.Lock()
		m.calls = append(m.calls, p.Name+" "+compact(p.Arguments))
		m.mu.Unlock()
		text := mcpResult(args.Q)
		if p.Name == mcpErase {
			text = "erased"
		}
		result = map[string]any{"content": []map[string]any{{"type": "text", "text": text}}, "isError": false}
	default:
		// Any other method (a client may probe newer ones first) is not
		// found, as JSON-RPC says.
		mcpWrite(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		return
	}
	mcpWrite(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

func mcpWrite(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (m *mcpServer) seen() (auth, calls []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.auth...), append([]string(nil), m.calls...)
}

// mcpEntry is the server as Core sends it: the connection origin that
// matches the Turn's Environment (wire.PromptRequest's validation pairs
// service with no Environment and environment with a bound one).
func mcpEntry(c *wire.PromptRequest, url string, required bool, token string, allowed []string) wire.MCPHTTPServer {
	origin := wire.MCPOriginEnvironment
	if c.DisableExecutionEnvironment || c.LocalEnvironment == nil {
		origin = wire.MCPOriginService
	}
	s := wire.MCPHTTPServer{ConnectionOrigin: origin, ServerLabel: mcpLabel, ServerURL: url, Required: required}
	if allowed != nil {
		s.AllowedTools = &allowed
	}
	if token != "" {
		s.BearerToken = &token
	}
	return s
}

// downURL is an MCP URL on 127.0.0.1 where nothing listens: the port was
// just released.
func downURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String() + "/mcp"
	require.NoError(t, l.Close())
	return url
}

// lookupPlan calls lookup on the kit's server; the native side then says
// the result.
func lookupPlan(q string) Plan {
	return Plan{{MCP: &MCPCall{Server: mcpLabel, Tool: mcpLookup, Args: json.RawMessage(fmt.Sprintf(`{"q":%q}`, q))}}}
}

// mcpTurn runs a Turn with one kit server and the plan, and checks that
// the server ran the lookup and the model got its result.
func (k *kit) mcpTurn(t *testing.T, name, capability string, srv *mcpServer, required bool, token string) *Result {
	plan := lookupPlan(name)
	s := k.scenario(t, name, capability, plan, nil, func(s *Scenario) {
		s.Config.MCPHTTPServers = &[]wire.MCPHTTPServer{mcpEntry(&s.Config, srv.url(), required, token, nil)}
	})
	r, _ := k.turn(s, nil, drive{answer: answerPlan(s.Plan)})
	completed(t, r)
	_, calls := srv.seen()
	assert.Equal(t, []string{mcpLookup + " " + compact(plan[0].MCP.Args)}, calls, "the server ran the tool the model called, once")
	k.checkText(t, r, mcpResult(name))
	var after int
	for _, c := range OfType[wire.ToolCall](r) {
		if c.Stage == wire.ToolStageAfter {
			after++
		}
	}
	assert.Positive(t, after, "the MCP tool call is reported as a tool_call")
	verify(t, r, false)
	return r
}

// mcpTools (mcp_http_tools): the model calls a tool of the Agent's HTTP
// MCP server and says the result it got; a tool outside allowed_tools is
// never run, even when Core approves everything it is asked.
func (k *kit) mcpTools(t *testing.T) {
	k.mcpTurn(t, "mcp_http_tools", "mcp_http_tools", newMCPServer(t, ""), false, "")

	k.run(t, "harness", "mcp_http_tools/allowed_tools", "mcp_http_tools", func(t *testing.T) {
		srv := newMCPServer(t, "")
		plan := Plan{{MCP: &MCPCall{Server: mcpLabel, Tool: mcpErase, Args: json.RawMessage(`{"q":"wire"}`), Outside: true}},
			{Say: []string{"It was not allowed."}}}
		s := k.scenario(t, "mcp_http_tools/allowed_tools", "mcp_http_tools", plan, nil, func(s *Scenario) {
			s.Config.MCPHTTPServers = &[]wire.MCPHTTPServer{mcpEntry(&s.Config, srv.url(), false, "", []string{mcpLookup})}
		})
		r, _ := k.turn(s, nil, drive{answer: answerPlan(s.Plan)})
		completed(t, r)
		_, calls := srv.seen()
		assert.Empty(t, calls, "the server ran a tool outside allowed_tools")
		k.checkText(t, r, plan.Text())
		verify(t, r, false)
	})
}

// mcpRequired (mcp_http_required): a required server that is up serves
// the Turn; one that is down fails it finitely, naming the server, before
// the model says anything; an optional one that is down does not.
func (k *kit) mcpRequired(t *testing.T) {
	k.mcpTurn(t, "mcp_http_required", "mcp_http_required", newMCPServer(t, ""), true, "")

	k.run(t, "harness", "mcp_http_required/down", "mcp_http_required", func(t *testing.T) {
		url := downURL(t)
		s := k.scenario(t, "mcp_http_required/down", "mcp_http_required", Plan{{Say: []string{"This is never said."}}}, nil, func(s *Scenario) {
			s.Config.MCPHTTPServers = &[]wire.MCPHTTPServer{mcpEntry(&s.Config, url, true, "", nil)}
			s.Refused = true
		})
		r, _ := k.turn(s, nil, drive{answer: answerPlan(s.Plan)})
		failedFinitely(t, r)
		var said []string
		for _, err := range []error{r.Prepared, r.Err} {
			if err != nil {
				said = append(said, err.Error())
			}
		}
		for _, e := range r.Errors() {
			said = append(said, e.Error)
		}
		assert.Contains(t, strings.Join(said, "\n"), mcpLabel, "the failure names the server")
	})

	k.run(t, "harness", "mcp_http_required/optional_down", "mcp_http_required", func(t *testing.T) {
		url := downURL(t)
		plan := Plan{{Say: []string{"Without the server."}}}
		s := k.scenario(t, "mcp_http_required/optional_down", "mcp_http_required", plan, nil, func(s *Scenario) {
			s.Config.MCPHTTPServers = &[]wire.MCPHTTPServer{mcpEntry(&s.Config, url, false, "", nil)}
		})
		r, _ := k.turn(s, nil, drive{answer: answerPlan(s.Plan)})
		completed(t, r)
		k.checkText(t, r, plan.Text())
		verify(t, r, false)
	})
}

// kitBearer is the token of the bearer scenario; it must reach the server
// and no frame.
const kitBearer = "kit-bearer-7d1e9a"

// mcpBearer (mcp_http_bearer_auth): the Vault credential reaches the
// server as a Bearer Authorization header on every request, and appears
// in no frame or error of the Turn.
func (k *kit) mcpBearer(t *testing.T) {
	srv := newMCPServer(t, kitBearer)
	r := k.mcpTurn(t, "mcp_http_bearer_auth", "mcp_http_bearer_auth", srv, false, kitBearer)
	auth, _ := srv.seen()
	require.NotEmpty(t, auth)
	for _, a := range auth {
		assert.Equal(t, "Bearer "+kitBearer, a, "a request to the server without the credential")
	}
	frames, err := json.Marshal(r.Events)
	require.NoError(t, err)
	assert.NotContains(t, string(frames), kitBearer, "the credential is in a frame")
	if r.Err != nil {
		assert.NotContains(t, r.Err.Error(), kitBearer)
	}
}

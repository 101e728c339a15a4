package acp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Function tools. ACP has no function tools of its own; an agent gets
// tools from the MCP servers its client names in session/new (and
// session/load). So each Executor whose configuration carries function
// tools hosts one MCP server for its agent, over streamable HTTP on
// 127.0.0.1 at a random port, and names it in mcpServers with a bearer
// token of its own in an Authorization header. Every tools/call becomes
// the running Turn's function_call, and Core's function_result becomes the
// call's MCP result.
//
// decision: streamable HTTP, not stdio. ACP lets a client name a stdio
// server (a command the agent starts), but the tool calls must reach this
// process, so a stdio server would be a helper executable relaying the
// agent's stdio to the Executor over another local channel: one more
// process per Session and a second transport to secure, for no agent that
// needs it (Gemini CLI declares mcpCapabilities.http). An agent that does
// not declare http is refused at preparation, naming the reason.
//
// Security: the server listens on the loopback interface only, and every
// request must carry the Executor's token (32 random bytes), compared in
// constant time; any other local process gets 401. The token is sent only
// inside session/new and session/load on the agent's stdin, never on a
// command line, in the environment or a log. The SDK's own protection
// against DNS rebinding (a localhost request with a foreign Host header is
// refused) stays on.

// fnServerName is the MCP server's name in mcpServers: Gemini CLI shows
// the model a function f as the tool mcp_aw_f.
const fnServerName = "aw"

// fnHost is an Executor's MCP server of Core's function tools.
type fnHost struct {
	e     *executor
	srv   *http.Server
	url   string
	token string
	done  chan struct{} // closed when Serve returned
}

// checkFunctions refuses function tools the agent cannot be shown
// faithfully, naming the tool: a parameters schema that is not a JSON
// object schema (MCP's inputSchema is one), a tool loaded on demand
// (tool_search), a name the agent would rewrite, or a name given twice.
func checkFunctions(a Agent, tools []wire.FunctionTool) error {
	seen := map[string]bool{}
	for i, f := range tools {
		what := fmt.Sprintf("acp adapter: function_tools[%d] (%q)", i, f.Name)
		if f.Name == "" {
			return fmt.Errorf("%s: the name is empty", what)
		}
		if seen[f.Name] {
			return fmt.Errorf("%s: the name is given twice", what)
		}
		seen[f.Name] = true
		if f.DeferLoading {
			return fmt.Errorf("%s: defer_loading needs tool_search, which this kind does not declare", what)
		}
		if _, err := inputSchema(f); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if a.MCPToolName == nil {
			return fmt.Errorf("%s: kind %s: the adapter does not know how this agent names MCP tools", what, a.Kind)
		}
		if _, err := a.MCPToolName(fnServerName, f.Name); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// inputSchema is the function's parameters as an MCP inputSchema: a JSON
// object whose type is "object" (none given: any object).
func inputSchema(f wire.FunctionTool) (json.RawMessage, error) {
	raw := bytes.TrimSpace(f.Parameters)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New("parameters is not a JSON object (MCP takes an object schema)")
	}
	if m["type"] != "object" {
		return nil, fmt.Errorf("parameters has type %v; an MCP tool's input schema must have type \"object\"", m["type"])
	}
	return json.RawMessage(raw), nil
}

// startFunctions starts the Executor's MCP server on 127.0.0.1.
func (e *executor) startFunctions(tools []wire.FunctionTool) (*fnHost, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("acp adapter: minting the MCP server's token: %w", err)
	}
	h := &fnHost{e: e, token: hex.EncodeToString(key), done: make(chan struct{})}
	server := mcp.NewServer(&mcp.Implementation{Name: "agentwire", Version: "1"}, nil)
	for _, f := range tools {
		schema, err := inputSchema(f) // checked by checkFunctions: never panics AddTool
		if err != nil {
			return nil, fmt.Errorf("acp adapter: function %q: %w", f.Name, err)
		}
		server.AddTool(&mcp.Tool{Name: f.Name, Description: f.Description, InputSchema: schema}, h.call(f.Name))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("acp adapter: the function tools' MCP server: %w", err)
	}
	mux := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	h.srv = &http.Server{Handler: h.authorize(mux), ReadHeaderTimeout: 10 * time.Second}
	h.url = "http://" + ln.Addr().String() + "/mcp"
	go func() {
		defer close(h.done)
		_ = h.srv.Serve(ln) // ErrServerClosed once closed
	}()
	return h, nil
}

// authorize lets through only requests that carry the Executor's token.
func (h *fnHost) authorize(next http.Handler) http.Handler {
	want := []byte("Bearer " + h.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "agentwire: this MCP server serves only the agent it was made for", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mcpServer is the server as session/new names it.
func (h *fnHost) mcpServer() sdk.McpServer {
	return sdk.McpServer{Http: &sdk.McpServerHttpInline{Type: "http", Name: fnServerName, Url: h.url,
		Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer " + h.token}}}}
}

// close stops the server; a call still waiting ended with its Turn.
func (h *fnHost) close() {
	if h == nil {
		return
	}
	_ = h.srv.Close() // also ends the agent's open event streams
	<-h.done
}

// call is the handler of the function name's tools/call.
func (h *fnHost) call(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t := h.e.running()
		if t == nil {
			// decision: a call outside a Run has no Turn to become the
			// function_call of (daemon-protocol.txt:72); the model is told.
			return failedCall("agentwire: no Turn is running; " + name + " cannot be called now"), nil
		}
		args := bytes.TrimSpace(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		if args[0] != '{' || !json.Valid(args) {
			// decision: a function's arguments are a JSON object
			// (wire.FunctionCall); anything else fails the call natively.
			return failedCall("agentwire: the arguments of " + name + " must be a JSON object"), nil
		}
		return t.callFunction(ctx, name, wire.NativeJSON(args)), nil
	}
}

// pendingCall is one function call waiting for Core's result.
type pendingCall struct {
	result chan *wire.FunctionResult // buffered 1
}

// callFunction emits the function_call and waits for its result, the
// Turn's end (a cancellation ends it) or the agent giving up the call.
func (t *turn) callFunction(ctx context.Context, name string, args wire.NativeJSON) *mcp.CallToolResult {
	if !t.caps.FunctionTools.Supports() {
		return failedCall("agentwire: function tools are not part of this Turn")
	}
	t.mu.Lock()
	t.called++
	// decision: the call ID carries the Run ID, so it is unique on the
	// connection (daemon-protocol.txt:76) across the Session's Turns.
	id := fmt.Sprintf("acp-fn-%s-%d", t.runID, t.called)
	c := &pendingCall{result: make(chan *wire.FunctionResult, 1)}
	t.calls[id] = c
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.calls, id)
		t.mu.Unlock()
	}()
	t.send(wire.FunctionCall{CallID: id, Name: name, Arguments: args})
	select {
	case r := <-c.result:
		return callResult(r)
	case <-t.ended:
		return failedCall("agentwire: the Turn ended before " + name + " returned")
	case <-ctx.Done():
		return failedCall("agentwire: the call of " + name + " was withdrawn")
	}
}

// callResult is Core's function result as an MCP tool result: one text
// block per text part, an error when it did not succeed.
func callResult(r *wire.FunctionResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{}, IsError: r.Success == nil || !*r.Success}
	for _, c := range r.Content {
		out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
	}
	return out
}

func failedCall(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// answerFunction hands Core's result to the waiting call.
func (t *turn) answerFunction(a harness.Answer) error {
	for _, c := range a.Result.Content {
		if c.Type != wire.ContentText {
			// function_result_images is false, and CheckAnswer refused
			// images already; one that gets here is never dropped.
			return &harness.UnsupportedError{Capability: "function_result_images", What: "function_result.content"}
		}
	}
	t.mu.Lock()
	c := t.calls[a.InteractionID]
	if c != nil {
		delete(t.calls, a.InteractionID)
	}
	t.mu.Unlock()
	if c == nil {
		return harness.ErrRunInactive // not (or no longer) pending
	}
	c.result <- a.Result
	return nil
}

// running is the running Turn, nil between Runs.
func (e *executor) running() *turn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

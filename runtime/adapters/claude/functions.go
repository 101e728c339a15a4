package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Function tools. Core's functions reach the model as the tools of an MCP
// server the adapter serves itself over the control channel: the CLI is
// started with an "sdk" server in --mcp-config and forwards that server's
// MCP JSON-RPC to the host as mcp_message control requests. The
// handshake (initialize, notifications, tools/list) is answered at once,
// on any goroutine, because the CLI asks it while it starts; a tools/call
// belongs to the running Turn and becomes its function_call, answered with
// Core's function_result.

// mcpServerName is the server's name; the model sees a function f as the
// tool mcp__aw__f.
const mcpServerName = "aw"

// mcpToolPrefix is what Claude Code puts before a function's name.
const mcpToolPrefix = "mcp__" + mcpServerName + "__"

// mcpConfig is the --mcp-config value naming the adapter's server.
func mcpConfig() string {
	return `{"mcpServers":{"` + mcpServerName + `":{"type":"sdk","name":"` + mcpServerName + `"}}}`
}

// mcpRequest is an mcp_message control request.
type mcpRequest struct {
	Subtype    string `json:"subtype"`
	ServerName string `json:"server_name"`
	Message    struct {
		ID     json.RawMessage `json:"id,omitempty"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params,omitempty"`
	} `json:"message"`
}

// mcpMessage decodes ev as an mcp_message control request.
func mcpMessage(ev event) (mcpRequest, bool) {
	if ev.Type != "control_request" {
		return mcpRequest{}, false
	}
	var r mcpRequest
	if json.Unmarshal(ev.Request, &r) != nil || r.Subtype != "mcp_message" {
		return mcpRequest{}, false
	}
	return r, true
}

// interceptMCP is the channel's hook for the MCP handshake: everything of
// the adapter's server but tools/call is answered here, off the reader
// goroutine, and never queued for a Turn.
func (e *executor) interceptMCP(ev event) bool {
	r, ok := mcpMessage(ev)
	if !ok || r.Message.Method == "tools/call" && r.ServerName == mcpServerName {
		return false
	}
	go e.answerMCP(ev.RequestID, r)
	return true
}

// answerMCP answers one MCP request or notification that is not a call.
func (e *executor) answerMCP(requestID string, r mcpRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.StartTimeout)
	defer cancel()
	var reply map[string]any
	switch {
	case r.ServerName != mcpServerName:
		reply = mcpError(r.Message.ID, -32601, "agentwire: no MCP server "+r.ServerName)
	case len(r.Message.ID) == 0 || string(r.Message.ID) == "null":
		// A notification (notifications/initialized, …) wants no result,
		// but the control request still takes an answer.
		reply = map[string]any{"jsonrpc": "2.0", "result": map[string]any{}}
	case r.Message.Method == "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(r.Message.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		reply = mcpResult(r.Message.ID, map[string]any{"protocolVersion": p.ProtocolVersion,
			"capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo":   map[string]any{"name": "agentwire", "version": "1"}})
	case r.Message.Method == "tools/list":
		tools := []map[string]any{}
		for _, f := range e.functions {
			schema := json.RawMessage(f.Parameters)
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			tools = append(tools, map[string]any{"name": f.Name, "description": f.Description, "inputSchema": schema})
		}
		reply = mcpResult(r.Message.ID, map[string]any{"tools": tools})
	case r.Message.Method == "ping":
		reply = mcpResult(r.Message.ID, map[string]any{})
	default:
		reply = mcpError(r.Message.ID, -32601, "agentwire: method not found: "+r.Message.Method)
	}
	if err := e.ch.Answer(ctx, requestID, map[string]any{"mcp_response": reply}); err != nil {
		e.log.Info("claude adapter: answering an MCP request", "method", r.Message.Method, "err", err)
	}
}

func mcpResult(id json.RawMessage, result any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
}

func mcpError(id json.RawMessage, code int, message string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}}
}

// mcpToolResult is a tools/call result with one text block per part.
func mcpToolResult(id json.RawMessage, texts []string, failed bool) map[string]any {
	content := []map[string]any{}
	for _, t := range texts {
		content = append(content, map[string]any{"type": "text", "text": t})
	}
	return map[string]any{"mcp_response": mcpResult(id, map[string]any{"content": content, "isError": failed})}
}

// function is the declared function named name, if any.
func (e *executor) function(name string) (wire.FunctionTool, bool) {
	for _, f := range e.functions {
		if f.Name == name {
			return f, true
		}
	}
	return wire.FunctionTool{}, false
}

// functionCall turns a tools/call into the Run's function_call, or fails
// the call natively (so the model can go on) when it cannot reach Core.
func (l *turnLoop) functionCall(ev event, r mcpRequest) error {
	fail := func(text string) error {
		return l.e.ch.Answer(l.bg, ev.RequestID, mcpToolResult(r.Message.ID, []string{text}, true))
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(r.Message.Params, &p); err != nil {
		return fail("agentwire: the call does not decode")
	}
	if _, ok := l.e.function(p.Name); !ok || !l.turn.Declaration.Capabilities.FunctionTools.Supports() {
		return fail("agentwire: no function " + p.Name + " in this turn")
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		// decision: a function's arguments are a JSON object
		// (wire.FunctionCall); anything else fails the call natively.
		return fail("agentwire: the arguments of " + p.Name + " must be a JSON object")
	}
	// decision: the call's interaction ID is minted from the CLI's request
	// ID, unique on the connection (daemon-protocol.txt:76), as the
	// permission requests' are; the model's tool_use ID may repeat across
	// native Sessions.
	q := &question{interactionID: "claude-fn-" + ev.RequestID, requestID: ev.RequestID, function: true, mcpID: r.Message.ID}
	l.t.mu.Lock()
	l.t.questions[q.interactionID] = q
	l.t.byRequest[ev.RequestID] = q
	l.t.mu.Unlock()
	return l.send(wire.FunctionCall{CallID: q.interactionID, Name: p.Name, Arguments: wire.NativeJSON(args)})
}

// allowFunction: the CLI asks permission before it calls one of Core's
// functions. decision: a declared function is allowed without asking
// Core, which answers the call itself (its function_result is the
// decision that matters); asking twice would only stall the Turn.
func (l *turnLoop) allowFunction(requestID, tool string, input json.RawMessage) (bool, error) {
	name, ok := strings.CutPrefix(tool, mcpToolPrefix)
	if !ok {
		return false, nil
	}
	if _, declared := l.e.function(name); !declared {
		return true, l.e.ch.Answer(l.bg, requestID, map[string]any{"behavior": "deny", "message": "agentwire: no function " + name + " in this turn"})
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	return true, l.e.ch.Answer(l.bg, requestID, map[string]any{"behavior": "allow", "updatedInput": input})
}

// answerFunction answers a function call with Core's result.
func (e *executor) answerFunction(ctx context.Context, q *question, res *wire.FunctionResult) error {
	var texts []string
	for _, c := range res.Content {
		if c.Type != wire.ContentText {
			// function_result_images is false; the gate refuses images
			// before this, and one that gets here is never dropped.
			return &harness.UnsupportedError{Capability: "function_result_images", What: "function_result.content"}
		}
		texts = append(texts, c.Text)
	}
	failed := res.Success == nil || !*res.Success
	if err := e.ch.Answer(ctx, q.requestID, mcpToolResult(q.mcpID, texts, failed)); err != nil {
		return fmt.Errorf("claude adapter: %w", err)
	}
	return nil
}

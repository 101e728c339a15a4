package modeltest

import (
	"encoding/json"
	"net/http"
	"strings"
)

// API names the endpoint a request reached.
type API string

// The endpoints the server knows.
const (
	// APIResponses is POST /v1/responses (OpenAI Responses API).
	APIResponses API = "responses"
	// APIMessages is POST /v1/messages (Anthropic Messages API).
	APIMessages API = "messages"
	// APICountTokens is POST /v1/messages/count_tokens.
	APICountTokens API = "count_tokens"
	// APIGemini is POST /v1beta/models/{model}:streamGenerateContent (a
	// stream) or :generateContent (one answer), the Gemini API; its
	// :countTokens is recorded under it too, though it asks for no turn.
	APIGemini API = "gemini"
	// APIModels is GET /v1/models.
	APIModels API = "models"
	// APIUnknown is any other method or path (answered 404).
	APIUnknown API = "unknown"
)

// Redacted replaces the secret of a redacted header.
const Redacted = "[redacted]"

// secretHeaders are redacted when a request is recorded.
var secretHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie"}

// Request is one recorded request. It is not changed after it was
// recorded; treat it as read-only.
type Request struct {
	// Seq counts every request the server received, from 1.
	Seq int
	// TurnSeq counts the requests that asked for a turn (Responses and
	// Messages API), from 1; it is 0 for the others.
	TurnSeq  int
	API      API
	Method   string
	Path     string
	RawQuery string
	// Header is the request's header with the credentials redacted: an
	// Authorization value keeps its scheme ("Bearer [redacted]").
	Header http.Header
	// RawBody is the body as received.
	RawBody []byte
	// Body is the body decoded as a JSON object; nil when it is not one.
	Body map[string]any
	// DecodeError says why Body is nil for a non-empty body.
	DecodeError string
}

// newRequest records r with its body b.
func newRequest(r *http.Request, api API, b []byte) *Request {
	rec := &Request{
		API:      api,
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   redact(r.Header),
		RawBody:  b,
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &rec.Body); err != nil {
			rec.Body = nil
			rec.DecodeError = err.Error()
		}
	}
	return rec
}

func redact(h http.Header) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, name := range secretHeaders {
		vals := out.Values(name)
		if len(vals) == 0 {
			continue
		}
		red := make([]string, len(vals))
		for i, v := range vals {
			red[i] = Redacted
			if scheme, _, ok := strings.Cut(v, " "); ok && (name == "Authorization" || name == "Proxy-Authorization") {
				red[i] = scheme + " " + Redacted
			}
		}
		out[http.CanonicalHeaderKey(name)] = red
	}
	return out
}

// Model is the body's "model"; for the Gemini API, the model the path
// names.
func (r *Request) Model() string {
	if r.API == APIGemini {
		model, _, _ := geminiPath(strings.TrimPrefix(r.Path, "/v1beta/models/"))
		return model
	}
	s, _ := r.Body["model"].(string)
	return s
}

// Stream is the body's "stream"; for the Gemini API, whether the path
// asks for streamGenerateContent.
func (r *Request) Stream() bool {
	if r.API == APIGemini {
		return strings.HasSuffix(r.Path, ":"+geminiStream)
	}
	b, _ := r.Body["stream"].(bool)
	return b
}

// inputItems is the Responses API input as a list of items (a string input
// is one user message).
func (r *Request) inputItems() []map[string]any {
	switch in := r.Body["input"].(type) {
	case string:
		return []map[string]any{{"type": "message", "role": "user", "content": in}}
	case []any:
		return objects(in)
	}
	return nil
}

// messages is the Messages API conversation.
func (r *Request) messages() []map[string]any {
	in, _ := r.Body["messages"].([]any)
	return objects(in)
}

func objects(in []any) []map[string]any {
	out := make([]map[string]any, 0, len(in))
	for _, v := range in {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// itemType is a Responses API input item's type; an item without one
// that has a role is a message.
func itemType(item map[string]any) string {
	if t, ok := item["type"].(string); ok {
		return t
	}
	if _, ok := item["role"]; ok {
		return "message"
	}
	return ""
}

// contentTexts is the text of a content value: a string, or the "text" of
// each text part (input_text, output_text or text) of a list.
func contentTexts(content any) []string {
	switch c := content.(type) {
	case string:
		return []string{c}
	case []any:
		var out []string
		for _, part := range objects(c) {
			switch part["type"] {
			case "input_text", "output_text", "text":
				if s, ok := part["text"].(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	return nil
}

// UserTexts is the text of every user message in order, one entry per
// text part: input_text parts of user messages (Responses API), string
// contents and text blocks of user messages (Messages API), leaving out
// the blocks that are only a <system-reminder> Claude Code adds; text
// parts of user contents (Gemini API).
func (r *Request) UserTexts() []string {
	var out []string
	switch r.API {
	case APIGemini:
		return r.geminiUserTexts()
	case APIResponses:
		for _, item := range r.inputItems() {
			if itemType(item) == "message" && item["role"] == "user" {
				out = append(out, contentTexts(item["content"])...)
			}
		}
	case APIMessages, APICountTokens:
		for _, m := range r.messages() {
			if m["role"] != "user" {
				continue
			}
			for _, text := range contentTexts(m["content"]) {
				if !isReminder(text) {
					out = append(out, text)
				}
			}
		}
	}
	return out
}

// LastUserText is the last entry of UserTexts, "" when there is none.
func (r *Request) LastUserText() string {
	texts := r.UserTexts()
	if len(texts) == 0 {
		return ""
	}
	return texts[len(texts)-1]
}

// Tool is one tool offered to the model.
type Tool struct {
	// Name is the tool's name; a built-in tool without one (web_search,
	// say) is named by its type.
	Name string
	// Type is the tool's type: "function" or "custom" (Responses API; or a
	// built-in's type), "custom" or a server tool's type (Messages API).
	Type string
	// Spec is the tool's whole declaration.
	Spec map[string]any
}

// Tools is the tools the request offers, in order.
func (r *Request) Tools() []Tool {
	if r.API == APIGemini {
		return r.geminiTools()
	}
	in, _ := r.Body["tools"].([]any)
	var out []Tool
	for _, spec := range objects(in) {
		name, _ := spec["name"].(string)
		typ, _ := spec["type"].(string)
		if typ == "" && r.API != APIResponses {
			typ = "custom"
		}
		if name == "" {
			name = typ
		}
		out = append(out, Tool{Name: name, Type: typ, Spec: spec})
	}
	return out
}

// ToolNames is the names of Tools.
func (r *Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools() {
		out = append(out, t.Name)
	}
	return out
}

// HasTool reports whether the request offers a tool named name.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools() {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ToolResult is one tool result sent back to the model.
type ToolResult struct {
	// CallID is the call it answers: call_id (Responses API), tool_use_id
	// (Messages API).
	CallID string
	// Name is the name of the tool called, when the request also carries
	// the call.
	Name string
	// Type is the item or block type: function_call_output,
	// custom_tool_call_output (Responses API), tool_result (Messages API).
	Type string
	// Output is the result's text: a string output, or its text parts
	// joined by "\n".
	Output string
	// IsError is the Messages API is_error (or a Responses API output
	// object's success false).
	IsError bool
	// Raw is the whole item or block.
	Raw map[string]any
}

// ToolResults is every tool result in the request, in order.
func (r *Request) ToolResults() []ToolResult {
	var out []ToolResult
	switch r.API {
	case APIGemini:
		return r.geminiToolResults()
	case APIResponses:
		items := r.inputItems()
		names := map[string]string{}
		for _, item := range items {
			switch itemType(item) {
			case "function_call", "custom_tool_call":
				id, _ := item["call_id"].(string)
				names[id], _ = item["name"].(string)
			}
		}
		for _, item := range items {
			if tr, ok := responsesToolResult(item, names); ok {
				out = append(out, tr)
			}
		}
	case APIMessages, APICountTokens:
		names := r.toolUseNames()
		for _, m := range r.messages() {
			if m["role"] != "user" {
				continue
			}
			blocks, _ := m["content"].([]any)
			for _, b := range objects(blocks) {
				if tr, ok := messagesToolResult(b, names); ok {
					out = append(out, tr)
				}
			}
		}
	}
	return out
}

func responsesToolResult(item map[string]any, names map[string]string) (ToolResult, bool) {
	typ := itemType(item)
	switch typ {
	case "function_call_output", "custom_tool_call_output":
	default:
		return ToolResult{}, false
	}
	tr := ToolResult{Type: typ, Raw: item}
	tr.CallID, _ = item["call_id"].(string)
	tr.Name = names[tr.CallID]
	switch out := item["output"].(type) {
	case map[string]any:
		tr.Output = strings.Join(contentTexts(out["content"]), "\n")
		if ok, isBool := out["success"].(bool); isBool && !ok {
			tr.IsError = true
		}
	default:
		tr.Output = strings.Join(contentTexts(out), "\n")
	}
	return tr, true
}

func messagesToolResult(block map[string]any, names map[string]string) (ToolResult, bool) {
	if block["type"] != "tool_result" {
		return ToolResult{}, false
	}
	tr := ToolResult{Type: "tool_result", Raw: block}
	tr.CallID, _ = block["tool_use_id"].(string)
	tr.Name = names[tr.CallID]
	tr.Output = strings.Join(contentTexts(block["content"]), "\n")
	tr.IsError, _ = block["is_error"].(bool)
	return tr, true
}

func (r *Request) toolUseNames() map[string]string {
	names := map[string]string{}
	for _, m := range r.messages() {
		if m["role"] != "assistant" {
			continue
		}
		blocks, _ := m["content"].([]any)
		for _, b := range objects(blocks) {
			if b["type"] == "tool_use" {
				id, _ := b["id"].(string)
				names[id], _ = b["name"].(string)
			}
		}
	}
	return names
}

// LastToolResult is the tool result the request ends with, if it ends with
// one: its last input item (Responses API); the last block of its last
// message, a user message, leaving out text blocks that are only a
// <system-reminder> (Messages API).
func (r *Request) LastToolResult() (ToolResult, bool) {
	switch r.API {
	case APIGemini:
		return r.geminiLastToolResult()
	case APIResponses:
		items := r.inputItems()
		if len(items) == 0 {
			return ToolResult{}, false
		}
		results := r.ToolResults()
		if _, ok := responsesToolResult(items[len(items)-1], nil); !ok || len(results) == 0 {
			return ToolResult{}, false
		}
		return results[len(results)-1], true
	case APIMessages:
		msgs := r.messages()
		if len(msgs) == 0 || msgs[len(msgs)-1]["role"] != "user" {
			return ToolResult{}, false
		}
		blocks, _ := msgs[len(msgs)-1]["content"].([]any)
		objs := objects(blocks)
		for i := len(objs) - 1; i >= 0; i-- {
			b := objs[i]
			if s, _ := b["text"].(string); b["type"] == "text" && isReminder(s) {
				continue
			}
			return messagesToolResult(b, r.toolUseNames())
		}
	}
	return ToolResult{}, false
}

// isReminder reports whether a text block is a <system-reminder> that
// Claude Code adds, rather than the user's words.
func isReminder(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>")
}

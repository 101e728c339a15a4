package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// This file speaks the Gemini API (generativelanguage, v1beta), the wire
// Gemini CLI uses: POST /v1beta/models/{model}:streamGenerateContent?alt=sse
// streams GenerateContentResponse chunks as server-sent events with data
// lines only (no event names), and POST …:generateContent answers one
// whole GenerateContentResponse. A chunk carries candidates[0].content
// with the new parts (text, text with thought:true for reasoning, or a
// functionCall); the last one carries finishReason and usageMetadata.
//
// Gemini does not stream a function call's arguments: the call is one
// part, sent whole when the plan's call item ends.

// The Gemini API's methods, the part of the path after the model's ':'.
const (
	geminiStream = "streamGenerateContent"
	geminiWhole  = "generateContent"
	geminiCount  = "countTokens"
)

// geminiPath splits the {model}:{method} path segment.
func geminiPath(seg string) (model, method string, ok bool) {
	model, method, ok = strings.Cut(seg, ":")
	return model, method, ok && model != "" && method != ""
}

// serveGemini routes POST /v1beta/models/{model}: a turn for
// streamGenerateContent and generateContent, a count for countTokens,
// 404 for anything else.
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	_, method, ok := geminiPath(r.PathValue("model"))
	switch {
	case ok && (method == geminiStream || method == geminiWhole):
		s.serveTurn(APIGemini)(w, r)
	case ok && method == geminiCount:
		rec, _, err := s.record(r, APIGemini, false)
		if err != nil {
			s.writeError(w, APIGemini, HTTPError{Status: http.StatusBadRequest, Message: err.Error()})
			return
		}
		n := int64(len(rec.RawBody) / 4)
		writeJSON(w, http.StatusOK, nil, map[string]any{"totalTokens": max(n, 1)})
	default:
		_, _, _ = s.record(r, APIUnknown, false)
		s.writeError(w, APIGemini, HTTPError{Status: http.StatusNotFound,
			Message: fmt.Sprintf("modeltest: no Gemini method in %s", r.URL.Path)})
	}
}

// geminiStreamer writes one streamed Gemini answer: a chunk per text or
// reasoning delta and per function call, then the closing chunk.
type geminiStreamer struct {
	sw    *sseWriter
	p     *plan
	model string
	id    string
}

// chunk is one GenerateContentResponse with parts (nil: none) and,
// when final, the finish reason and usage.
func (g *geminiStreamer) chunk(parts []any, final bool) map[string]any {
	return geminiResponse(parts, g.p, g.model, g.id, final)
}

func geminiResponse(parts []any, p *plan, model, id string, final bool) map[string]any {
	if parts == nil {
		parts = []any{}
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	resp := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": id}
	if final {
		cand["finishReason"] = "STOP"
		resp["usageMetadata"] = geminiUsage(p.usage)
	}
	return resp
}

// geminiUsage is usageMetadata: the prompt counts every input token,
// cached ones included (cachedContentTokenCount is their share), and
// thoughts are counted apart from the candidates.
func geminiUsage(u Usage) map[string]any {
	prompt := u.InputTokens + u.CacheWriteTokens
	return map[string]any{
		"promptTokenCount":        prompt,
		"cachedContentTokenCount": u.CachedTokens,
		"candidatesTokenCount":    u.OutputTokens - u.ReasoningTokens,
		"thoughtsTokenCount":      u.ReasoningTokens,
		"totalTokenCount":         prompt + u.OutputTokens,
	}
}

// geminiPart is it's part as a whole answer (or a call's one chunk)
// carries it.
func geminiPart(it *planItem) (map[string]any, error) {
	switch it.kind {
	case itemMessage:
		return map[string]any{"text": it.text}, nil
	case itemReasoning:
		return map[string]any{"text": it.text, "thought": true}, nil
	case itemFunctionCall:
		args := map[string]any{}
		if err := json.Unmarshal([]byte(it.text), &args); err != nil {
			return nil, fmt.Errorf("modeltest: functionCall %s: arguments are not a JSON object: %w", it.name, err)
		}
		return map[string]any{"functionCall": map[string]any{"id": it.callID, "name": it.name, "args": args}}, nil
	}
	return nil, fmt.Errorf("modeltest: item of kind %d has no Gemini API part", it.kind)
}

func (g *geminiStreamer) start() error                { return nil }
func (g *geminiStreamer) begin(*planItem) error       { return nil }
func (g *geminiStreamer) send(v map[string]any) error { return g.sw.send("", v) }

func (g *geminiStreamer) delta(it *planItem, d string) error {
	switch it.kind {
	case itemMessage:
		return g.send(g.chunk([]any{map[string]any{"text": d}}, false))
	case itemReasoning:
		return g.send(g.chunk([]any{map[string]any{"text": d, "thought": true}}, false))
	}
	return nil // a call is sent whole when it ends
}

func (g *geminiStreamer) end(it *planItem) error {
	if it.kind != itemFunctionCall {
		return nil
	}
	part, err := geminiPart(it)
	if err != nil {
		return err
	}
	return g.send(g.chunk([]any{part}, false))
}

// fail ends the stream with an error object as the data of the last
// event, as the API does when a stream breaks after it started.
func (g *geminiStreamer) fail(e HTTPError) error {
	return g.send(geminiError(e))
}

func (g *geminiStreamer) finish() error { return g.send(g.chunk(nil, true)) }

// validateGemini checks that every item of p has a Gemini part, before
// anything is streamed.
func validateGemini(p *plan) error {
	for _, it := range p.items {
		if _, err := geminiPart(it); err != nil {
			return err
		}
	}
	return nil
}

// geminiFinal is the body of a generateContent answer.
func geminiFinal(p *plan, model, id string) (map[string]any, error) {
	parts := make([]any, 0, len(p.items))
	for _, it := range p.items {
		part, err := geminiPart(it)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return geminiResponse(parts, p, model, id, true), nil
}

// geminiError is the Google API error body: the status code, the message
// and the canonical status name.
func geminiError(e HTTPError) map[string]any {
	return map[string]any{"error": map[string]any{"code": e.Status, "message": e.Message, "status": e.Type}}
}

// geminiStatus is the canonical status name Google APIs give an HTTP
// status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// The request side.

// geminiContents is the conversation of a Gemini request.
func (r *Request) geminiContents() []map[string]any {
	in, _ := r.Body["contents"].([]any)
	return objects(in)
}

// geminiParts is a content's parts.
func geminiParts(c map[string]any) []map[string]any {
	in, _ := c["parts"].([]any)
	return objects(in)
}

// geminiUserTexts is the text parts of the user contents, in order
// (function responses, which are user contents too, are not text).
func (r *Request) geminiUserTexts() []string {
	var out []string
	for _, c := range r.geminiContents() {
		if c["role"] != "user" {
			continue
		}
		for _, p := range geminiParts(c) {
			if s, ok := p["text"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// geminiTools is every function declaration of every tool, in order.
func (r *Request) geminiTools() []Tool {
	in, _ := r.Body["tools"].([]any)
	var out []Tool
	for _, tool := range objects(in) {
		decls, _ := tool["functionDeclarations"].([]any)
		for _, d := range objects(decls) {
			name, _ := d["name"].(string)
			out = append(out, Tool{Name: name, Type: "function", Spec: d})
		}
		for k := range tool {
			if k != "functionDeclarations" {
				out = append(out, Tool{Name: k, Type: k, Spec: tool}) // googleSearch, codeExecution, …
			}
		}
	}
	return out
}

// geminiToolResult reads a functionResponse part: the response's
// "output" when it is a string (Gemini CLI's shape), else its "error",
// else the whole response as JSON.
func geminiToolResult(p map[string]any) (ToolResult, bool) {
	fr, ok := p["functionResponse"].(map[string]any)
	if !ok {
		return ToolResult{}, false
	}
	tr := ToolResult{Type: "functionResponse", Raw: p}
	tr.CallID, _ = fr["id"].(string)
	tr.Name, _ = fr["name"].(string)
	resp, _ := fr["response"].(map[string]any)
	switch {
	case resp == nil:
	case resp["output"] != nil:
		if s, ok := resp["output"].(string); ok {
			tr.Output = s
		} else {
			b, _ := json.Marshal(resp["output"])
			tr.Output = string(b)
		}
	case resp["error"] != nil:
		tr.IsError = true
		if s, ok := resp["error"].(string); ok {
			tr.Output = s
		} else {
			b, _ := json.Marshal(resp["error"])
			tr.Output = string(b)
		}
	default:
		b, _ := json.Marshal(resp)
		tr.Output = string(b)
	}
	return tr, true
}

// geminiToolResults is every function response, in order.
func (r *Request) geminiToolResults() []ToolResult {
	var out []ToolResult
	for _, c := range r.geminiContents() {
		if c["role"] != "user" {
			continue
		}
		for _, p := range geminiParts(c) {
			if tr, ok := geminiToolResult(p); ok {
				out = append(out, tr)
			}
		}
	}
	return out
}

// geminiLastToolResult is the function response the request ends with:
// the last part of its last content, a user content.
func (r *Request) geminiLastToolResult() (ToolResult, bool) {
	cs := r.geminiContents()
	if len(cs) == 0 || cs[len(cs)-1]["role"] != "user" {
		return ToolResult{}, false
	}
	parts := geminiParts(cs[len(cs)-1])
	for i := len(parts) - 1; i >= 0; i-- {
		if tr, ok := geminiToolResult(parts[i]); ok {
			return tr, true
		}
		return ToolResult{}, false
	}
	return ToolResult{}, false
}

package modeltest

import (
	"encoding/base64"
	"time"
)

// This file speaks the OpenAI Responses API (POST /v1/responses), the wire
// Codex uses: a streamed answer is server-sent events whose data carries
// "type" and a "sequence_number" counted from 0, and each output item is
// announced by response.output_item.added and closed by
// response.output_item.done at its output_index.

// responsesStream writes one streamed Responses API answer.
type responsesStream struct {
	sw      *sseWriter
	p       *plan
	id      string
	model   string
	created int64
	seq     int64
	output  []any
}

func newResponsesStream(sw *sseWriter, p *plan, id, model string, created time.Time) *responsesStream {
	return &responsesStream{sw: sw, p: p, id: id, model: model, created: created.Unix()}
}

func (rs *responsesStream) emit(typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["sequence_number"] = rs.seq
	rs.seq++
	return rs.sw.send(typ, fields)
}

// response is the response object in the given status, with the output
// items completed so far.
func (rs *responsesStream) response(status string) map[string]any {
	return responseObject(rs.id, rs.model, rs.created, status, rs.output)
}

func responseObject(id, model string, created int64, status string, output []any) map[string]any {
	if output == nil {
		output = []any{}
	}
	return map[string]any{
		"id":                  id,
		"object":              "response",
		"created_at":          created,
		"status":              status,
		"model":               model,
		"output":              output,
		"usage":               nil,
		"error":               nil,
		"incomplete_details":  nil,
		"instructions":        nil,
		"metadata":            map[string]any{},
		"parallel_tool_calls": false,
		"temperature":         1.0,
		"top_p":               1.0,
		"tool_choice":         "auto",
		"tools":               []any{},
		"text":                map[string]any{"format": map[string]any{"type": "text"}},
		"reasoning":           map[string]any{"effort": nil, "summary": nil},
		"store":               false,
		"background":          false,
	}
}

func responsesUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CachedTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens":          u.TotalTokens(),
	}
}

func (rs *responsesStream) start() error {
	if err := rs.emit("response.created", map[string]any{"response": rs.response("in_progress")}); err != nil {
		return err
	}
	return rs.emit("response.in_progress", map[string]any{"response": rs.response("in_progress")})
}

// outputItem is it as output_item.added (done false) or .done shows it.
func outputItem(it *planItem, done bool) map[string]any {
	status := "in_progress"
	text := ""
	if done {
		status, text = "completed", it.text
	}
	switch it.kind {
	case itemMessage:
		content := []any{}
		if done {
			content = append(content, outputTextPart(text))
		}
		return map[string]any{"id": it.id, "type": "message", "status": status, "role": "assistant", "content": content}
	case itemReasoning:
		summary := []any{}
		item := map[string]any{"id": it.id, "type": "reasoning", "summary": summary}
		if done {
			item["summary"] = append(summary, map[string]any{"type": "summary_text", "text": text})
			item["encrypted_content"] = base64.StdEncoding.EncodeToString([]byte("modeltest:" + it.text))
		}
		return item
	case itemFunctionCall:
		return map[string]any{"id": it.id, "type": "function_call", "status": status, "call_id": it.callID, "name": it.name, "arguments": text}
	default:
		return map[string]any{"id": it.id, "type": "custom_tool_call", "status": status, "call_id": it.callID, "name": it.name, "input": text}
	}
}

func outputTextPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func (rs *responsesStream) at(it *planItem, fields map[string]any) map[string]any {
	fields["item_id"] = it.id
	fields["output_index"] = it.index
	return fields
}

func (rs *responsesStream) begin(it *planItem) error {
	if err := rs.emit("response.output_item.added", map[string]any{"output_index": it.index, "item": outputItem(it, false)}); err != nil {
		return err
	}
	switch it.kind {
	case itemMessage:
		return rs.emit("response.content_part.added", rs.at(it, map[string]any{"content_index": 0, "part": outputTextPart("")}))
	case itemReasoning:
		return rs.emit("response.reasoning_summary_part.added", rs.at(it, map[string]any{
			"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""},
		}))
	}
	return nil
}

func (rs *responsesStream) delta(it *planItem, d string) error {
	switch it.kind {
	case itemMessage:
		return rs.emit("response.output_text.delta", rs.at(it, map[string]any{"content_index": 0, "delta": d, "logprobs": []any{}}))
	case itemReasoning:
		return rs.emit("response.reasoning_summary_text.delta", rs.at(it, map[string]any{"summary_index": 0, "delta": d}))
	case itemFunctionCall:
		return rs.emit("response.function_call_arguments.delta", rs.at(it, map[string]any{"delta": d}))
	default:
		return rs.emit("response.custom_tool_call_input.delta", rs.at(it, map[string]any{"delta": d}))
	}
}

func (rs *responsesStream) end(it *planItem) error {
	var err error
	switch it.kind {
	case itemMessage:
		err = rs.emit("response.output_text.done", rs.at(it, map[string]any{"content_index": 0, "text": it.text, "logprobs": []any{}}))
		if err == nil {
			err = rs.emit("response.content_part.done", rs.at(it, map[string]any{"content_index": 0, "part": outputTextPart(it.text)}))
		}
	case itemReasoning:
		err = rs.emit("response.reasoning_summary_text.done", rs.at(it, map[string]any{"summary_index": 0, "text": it.text}))
		if err == nil {
			err = rs.emit("response.reasoning_summary_part.done", rs.at(it, map[string]any{
				"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": it.text},
			}))
		}
	case itemFunctionCall:
		err = rs.emit("response.function_call_arguments.done", rs.at(it, map[string]any{"arguments": it.text, "name": it.name}))
	default:
		err = rs.emit("response.custom_tool_call_input.done", rs.at(it, map[string]any{"input": it.text}))
	}
	if err != nil {
		return err
	}
	done := outputItem(it, true)
	rs.output = append(rs.output, done)
	return rs.emit("response.output_item.done", map[string]any{"output_index": it.index, "item": done})
}

func (rs *responsesStream) fail(e HTTPError) error {
	resp := rs.response("failed")
	resp["error"] = map[string]any{"code": nullable(e.Code), "message": e.Message, "type": e.Type}
	return rs.emit("response.failed", map[string]any{"response": resp})
}

func (rs *responsesStream) finish() error {
	resp := rs.response("completed")
	resp["usage"] = responsesUsage(rs.p.usage)
	return rs.emit("response.completed", map[string]any{"response": resp})
}

// responsesFinal is the body of an answer that is not streamed.
func responsesFinal(p *plan, id, model string, created time.Time) map[string]any {
	output := make([]any, 0, len(p.items))
	for _, it := range p.items {
		output = append(output, outputItem(it, true))
	}
	resp := responseObject(id, model, created.Unix(), "completed", output)
	resp["usage"] = responsesUsage(p.usage)
	return resp
}

// responsesError is the Responses API error body.
func responsesError(e HTTPError) map[string]any {
	return map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": nil, "code": nullable(e.Code),
	}}
}

// nullable is s, or JSON null when s is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

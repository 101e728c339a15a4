package modeltest

import (
	"encoding/json"
	"fmt"
)

// This file speaks the Anthropic Messages API (POST /v1/messages), the
// wire Claude Code uses: a streamed answer is server-sent events named as
// their data's "type": message_start, ping, content_block_start,
// content_block_delta and content_block_stop per block at its index,
// message_delta with the stop_reason and usage, and message_stop.

// messagesStream writes one streamed Messages API answer.
type messagesStream struct {
	sw    *sseWriter
	p     *plan
	id    string
	model string
}

func (ms *messagesStream) emit(typ string, fields map[string]any) error {
	fields["type"] = typ
	return ms.sw.send(typ, fields)
}

func messagesUsage(u Usage, output int64) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
		"cache_read_input_tokens":     u.CachedTokens,
		"output_tokens":               output,
	}
}

func messageObject(id, model string, content []any, stop any, usage map[string]any) map[string]any {
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id":            id,
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         usage,
	}
}

func (ms *messagesStream) start() error {
	msg := messageObject(ms.id, ms.model, nil, nil, messagesUsage(ms.p.usage, 0))
	if err := ms.emit("message_start", map[string]any{"message": msg}); err != nil {
		return err
	}
	return ms.emit("ping", map[string]any{})
}

// contentBlock is it as content_block_start (done false) or a finished
// message (done true) shows it.
func contentBlock(it *planItem, done bool) (map[string]any, error) {
	switch it.kind {
	case itemMessage:
		text := ""
		if done {
			text = it.text
		}
		return map[string]any{"type": "text", "text": text}, nil
	case itemReasoning:
		block := map[string]any{"type": "thinking", "thinking": "", "signature": ""}
		if done {
			block["thinking"], block["signature"] = it.text, it.signature
		}
		return block, nil
	case itemFunctionCall:
		input := map[string]any{}
		if done {
			if err := json.Unmarshal([]byte(it.text), &input); err != nil {
				return nil, fmt.Errorf("modeltest: tool_use %s: input is not a JSON object: %w", it.name, err)
			}
		}
		return map[string]any{"type": "tool_use", "id": it.callID, "name": it.name, "input": input}, nil
	}
	return nil, fmt.Errorf("modeltest: item of kind %d has no Messages API block", it.kind)
}

func (ms *messagesStream) begin(it *planItem) error {
	block, err := contentBlock(it, false)
	if err != nil {
		return err
	}
	return ms.emit("content_block_start", map[string]any{"index": it.index, "content_block": block})
}

func (ms *messagesStream) delta(it *planItem, d string) error {
	var delta map[string]any
	switch it.kind {
	case itemMessage:
		delta = map[string]any{"type": "text_delta", "text": d}
	case itemReasoning:
		delta = map[string]any{"type": "thinking_delta", "thinking": d}
	default:
		delta = map[string]any{"type": "input_json_delta", "partial_json": d}
	}
	return ms.emit("content_block_delta", map[string]any{"index": it.index, "delta": delta})
}

func (ms *messagesStream) end(it *planItem) error {
	if it.kind == itemReasoning {
		if err := ms.emit("content_block_delta", map[string]any{
			"index": it.index, "delta": map[string]any{"type": "signature_delta", "signature": it.signature},
		}); err != nil {
			return err
		}
	}
	return ms.emit("content_block_stop", map[string]any{"index": it.index})
}

func (ms *messagesStream) fail(e HTTPError) error {
	return ms.emit("error", map[string]any{"error": map[string]any{"type": e.Type, "message": e.Message}})
}

func (ms *messagesStream) finish() error {
	u := ms.p.usage
	if err := ms.emit("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": ms.p.stop, "stop_sequence": nil},
		"usage": messagesUsage(u, u.OutputTokens),
	}); err != nil {
		return err
	}
	return ms.emit("message_stop", map[string]any{})
}

// validateMessages checks that every item of p has a Messages API block,
// before anything is streamed.
func validateMessages(p *plan) error {
	for _, it := range p.items {
		if _, err := contentBlock(it, true); err != nil {
			return err
		}
	}
	return nil
}

// messagesFinal is the body of an answer that is not streamed.
func messagesFinal(p *plan, id, model string) (map[string]any, error) {
	content := make([]any, 0, len(p.items))
	for _, it := range p.items {
		block, err := contentBlock(it, true)
		if err != nil {
			return nil, err
		}
		content = append(content, block)
	}
	return messageObject(id, model, content, p.stop, messagesUsage(p.usage, p.usage.OutputTokens)), nil
}

// messagesError is the Messages API error body.
func messagesError(e HTTPError, requestID string) map[string]any {
	body := map[string]any{"type": "error", "error": map[string]any{"type": e.Type, "message": e.Message}}
	if requestID != "" {
		body["request_id"] = requestID
	}
	return body
}

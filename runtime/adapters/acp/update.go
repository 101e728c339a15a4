package acp

import (
	"encoding/json"
	"sort"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentwire/agentwire/wire"
)

// update maps one session/update of the running prompt. The SDK delivers
// notifications one at a time, in order, and before the prompt's answer
// that follows them.
func (t *turn) update(u sdk.SessionUpdate) {
	switch {
	case u.AgentMessageChunk != nil:
		if text := textOf(u.AgentMessageChunk.Content); text != "" {
			t.mu.Lock()
			t.seq++
			seq := t.seq
			t.content.WriteString(text)
			t.mu.Unlock()
			t.send(wire.Delta{Delta: text, Sequence: seq})
		}
	case u.AgentThoughtChunk != nil:
		text := thoughtText(textOf(u.AgentThoughtChunk.Content))
		t.mu.Lock()
		if t.thinkingSeq == 0 {
			// decision: line breaks before a Run's first reasoning text
			// carry nothing: codex-acp opens each reasoning summary part
			// with "\n\n", the first one included, and the Run's thinking
			// starts with what the model thought.
			text = strings.TrimLeft(text, "\r\n")
		}
		if text == "" {
			t.mu.Unlock()
			break
		}
		t.thinkingSeq++
		seq := t.thinkingSeq
		t.mu.Unlock()
		t.send(wire.Thinking{Text: text, Sequence: seq})
	case u.ToolCall != nil:
		c := u.ToolCall
		kind := string(c.Kind)
		st := c.Status
		t.tool(sdk.ToolCallUpdate{ToolCallId: c.ToolCallId, Title: &c.Title, Kind: (*sdk.ToolKind)(&kind), Status: &st,
			RawInput: c.RawInput, RawOutput: c.RawOutput, Content: c.Content})
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		t.tool(sdk.ToolCallUpdate{ToolCallId: c.ToolCallId, Title: c.Title, Kind: c.Kind, Status: c.Status,
			RawInput: c.RawInput, RawOutput: c.RawOutput, Content: c.Content})
	}
	// decision: plan, mode, command and other updates have no frame in
	// the protocol; they are not reported.
}

// emptySubject is the header Gemini CLI puts before a thought that has no
// bold subject: it renders each thought chunk as "**subject**\ndescription".
const emptySubject = "****\n"

// thoughtText is a thought chunk's reasoning text. An empty Markdown bold
// subject line carries nothing and is dropped, so a plain thought reads as
// the model wrote it; a real subject stays, as the agent rendered it.
// (Gemini CLI also trims each chunk's description, so whitespace between
// chunks is lost before it reaches the adapter.)
func thoughtText(s string) string { return strings.TrimPrefix(s, emptySubject) }

// textOf is a content block's text ("" for other content).
func textOf(c sdk.ContentBlock) string {
	if c.Text != nil {
		return c.Text.Text
	}
	return ""
}

// tool maps a tool call or its update: the tool_call before the first time
// the call is seen (an agent may announce it only with its permission
// request or its final update), the tool_call after once its status is
// completed or failed.
func (t *turn) tool(u sdk.ToolCallUpdate) {
	id := string(u.ToolCallId)
	if id == "" {
		return
	}
	t.mu.Lock()
	s := t.tools[id]
	if s == nil {
		s = &toolState{}
		t.tools[id] = s
	}
	if u.Title != nil && *u.Title != "" {
		s.title = *u.Title
	}
	if u.Kind != nil && *u.Kind != "" {
		s.kind = string(*u.Kind)
	}
	if raw := objectJSON(u.RawInput); raw != nil {
		s.input = raw
	}
	s.name = toolName(id, s.kind)
	before := !s.before
	s.before = true
	status := ""
	if u.Status != nil {
		status = string(*u.Status)
	}
	after := !s.after && (status == string(sdk.ToolCallStatusCompleted) || status == string(sdk.ToolCallStatusFailed))
	s.after = s.after || after
	snap := *s
	t.mu.Unlock()
	if before {
		call := wire.ToolCall{ID: id, Name: snap.name, Stage: wire.ToolStageBefore, Args: snap.input}
		if t.e.observeTools {
			call.Observation = observation(snap, "in_progress", nil)
		}
		t.send(call)
	}
	if after {
		call := wire.ToolCall{ID: id, Name: snap.name, Stage: wire.ToolStageAfter}
		if t.e.observeTools {
			call.Observation = observation(snap, status, outputOf(u))
		}
		t.send(call)
	}
}

// settleTools reports the end of every tool call of the prompt that was
// reported before but never after.
//
// decision: a prompt's end ends its tool calls (ACP runs them inside the
// prompt turn), so a call the agent never reported finished is reported
// after the prompt with the status "cancelled" when the prompt was, and
// "unknown" otherwise: codex-acp 0.16.0 sent no update at the end of a
// command it ran unasked (measured with its sandbox off), and a tool_call
// before without its
// after would leave Core's view of the call open (daemon-protocol.txt:56).
func (t *turn) settleTools(stop sdk.StopReason) {
	status := "unknown"
	if stop == sdk.StopReasonCancelled {
		status = "cancelled"
	}
	t.mu.Lock()
	var ids []string
	for id, s := range t.tools {
		if s.before && !s.after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids) // a stable order of frames
	open := make([]toolState, len(ids))
	for i, id := range ids {
		t.tools[id].after = true
		open[i] = *t.tools[id]
	}
	t.mu.Unlock()
	for i, s := range open {
		call := wire.ToolCall{ID: ids[i], Name: s.name, Stage: wire.ToolStageAfter}
		if t.e.observeTools {
			call.Observation = observation(s, status, nil)
		}
		t.send(call)
	}
}

// toolName is the tool's name: Gemini CLI prefixes its call IDs with the
// tool's name and "__"; otherwise the ACP kind stands for it.
func toolName(id, kind string) string {
	if name, _, ok := strings.Cut(id, "__"); ok && name != "" {
		return name
	}
	if kind != "" {
		return kind
	}
	return "tool"
}

// observation is the engine-neutral observation of a call.
func observation(s toolState, status string, output wire.NativeJSON) *wire.ToolObservation {
	o := &wire.ToolObservation{Kind: observedKind(s.kind), Status: status, Name: s.name, Arguments: s.input, Output: output}
	if o.Kind == "command" && s.title != "" {
		// decision: an execute call's title is its command line (Gemini
		// CLI's is); ACP has no command field.
		o.Command = s.title
	}
	return o
}

// observedKind maps ACP's tool kinds onto the observation's.
func observedKind(k string) string {
	switch sdk.ToolKind(k) {
	case sdk.ToolKindExecute:
		return "command"
	case sdk.ToolKindEdit, sdk.ToolKindDelete, sdk.ToolKindMove:
		return "file_change"
	}
	return "tool"
}

// outputOf is a finished call's output: its rawOutput, else the text of
// its content blocks, else nothing (Gemini CLI reports none).
func outputOf(u sdk.ToolCallUpdate) wire.NativeJSON {
	if u.RawOutput != nil {
		if b, err := json.Marshal(u.RawOutput); err == nil && string(b) != "null" {
			return wire.NativeJSON(b)
		}
	}
	var texts []string
	for _, c := range u.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			texts = append(texts, c.Content.Content.Text.Text)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	b, _ := json.Marshal(strings.Join(texts, "\n"))
	return wire.NativeJSON(b)
}

// objectJSON is v as JSON when it is an object (the wire's args), else nil.
func objectJSON(v any) wire.NativeJSON {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return nil
	}
	return wire.NativeJSON(b)
}

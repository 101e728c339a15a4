package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Tools and permissions. A tool the model calls comes as an assistant
// message's tool_use block (the tool_call before) and its result as a user
// message's tool_result block with the CLI's tool_use_result (the
// tool_call after). A call that needs permission is first a can_use_tool
// control request, which becomes the Run's permission_request under an
// interaction ID the adapter mints; Core's decision is the control
// request's answer (allow with the input, or deny with a message), and
// the CLI's control_cancel_request withdraws it.

// question is one open can_use_tool request.
type question struct {
	interactionID string
	requestID     string // the CLI's
	input         json.RawMessage
	// texts maps the question IDs the adapter minted to the questions'
	// text, for an AskUserQuestion (nil for a permission).
	texts map[string]string
	// function: a call of one of Core's functions (functions.go), whose
	// MCP request ID is mcpID.
	function bool
	mcpID    json.RawMessage
}

// askInput is AskUserQuestion's input.
type askInput struct {
	Questions []struct {
		Question    string `json:"question"`
		Header      string `json:"header"`
		MultiSelect bool   `json:"multiSelect"`
		Options     []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

// toolUse is the part of a tool_use block the adapter reads.
type toolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result members
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks is an assistant or user message's content, as blocks (a user
// message's content may also be a plain string, which has none).
type blocks struct {
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ToolUseResult json.RawMessage `json:"tool_use_result"`
}

func (b blocks) list() []toolUse {
	var out []toolUse
	_ = json.Unmarshal(b.Message.Content, &out)
	return out
}

// kindOf is the observation's kind for a Claude Code tool.
func kindOf(name string) string {
	switch {
	case name == "Bash":
		return "command"
	case name == "Write" || name == "Edit" || name == "MultiEdit" || name == "NotebookEdit":
		return "file_change"
	case strings.HasPrefix(name, mcpToolPrefix):
		return "function"
	case strings.HasPrefix(name, "mcp__"):
		return "mcp"
	}
	return "tool"
}

// toolsCalled emits the tool_call before of each tool_use block.
func (l *turnLoop) toolsCalled(raw json.RawMessage) error {
	var b blocks
	if json.Unmarshal(raw, &b) != nil {
		return nil
	}
	for _, u := range b.list() {
		if u.Type != "tool_use" || u.ID == "" {
			continue
		}
		l.tools[u.ID] = u
		call := wire.ToolCall{ID: u.ID, Name: u.Name, Stage: wire.ToolStageBefore, Args: objectOrNil(u.Input)}
		if l.observeTools {
			obs := &wire.ToolObservation{Kind: kindOf(u.Name), Status: "in_progress", Name: u.Name, Arguments: objectOrNil(u.Input)}
			if u.Name == "Bash" {
				var in struct {
					Command string `json:"command"`
				}
				_ = json.Unmarshal(u.Input, &in)
				obs.Command = in.Command
			}
			call.Observation = obs
		}
		if err := l.send(call); err != nil {
			return err
		}
	}
	return nil
}

// toolsReturned emits the tool_call after of each tool_result block.
func (l *turnLoop) toolsReturned(raw json.RawMessage) error {
	var b blocks
	if json.Unmarshal(raw, &b) != nil {
		return nil
	}
	for _, r := range b.list() {
		if r.Type != "tool_result" || r.ToolUseID == "" {
			continue
		}
		u, known := l.tools[r.ToolUseID]
		if !known {
			continue
		}
		delete(l.tools, r.ToolUseID)
		status := "completed"
		if r.IsError {
			status = "failed"
		}
		call := wire.ToolCall{ID: u.ID, Name: u.Name, Stage: wire.ToolStageAfter}
		if l.observeTools {
			obs := &wire.ToolObservation{Kind: kindOf(u.Name), Status: status, Name: u.Name, Arguments: objectOrNil(u.Input)}
			if len(b.ToolUseResult) > 0 && json.Valid(b.ToolUseResult) {
				obs.Output = wire.NativeJSON(b.ToolUseResult)
			} else if len(r.Content) > 0 {
				obs.Output = wire.NativeJSON(r.Content)
			}
			call.Observation = obs
		}
		if err := l.send(call); err != nil {
			return err
		}
	}
	return nil
}

// objectOrNil keeps raw only when it is a JSON object (the wire's args).
func objectOrNil(raw json.RawMessage) wire.NativeJSON {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return wire.NativeJSON(raw)
	}
	return nil
}

// canUseTool turns the CLI's permission prompt into the Run's
// permission_request, or refuses what the adapter does not serve.
func (l *turnLoop) canUseTool(ev event) error {
	var req struct {
		ToolName string          `json:"tool_name"`
		Input    json.RawMessage `json:"input"`
		ToolUse  string          `json:"tool_use_id"`
	}
	if err := json.Unmarshal(ev.Request, &req); err != nil {
		return l.e.ch.Refuse(l.bg, ev.RequestID, "the request does not decode")
	}
	if !l.turn.Declaration.Capabilities.Permissions.Supports() {
		// decision: without the permissions capability nothing asks Core,
		// and nothing runs unasked: the tool is denied.
		return l.e.ch.Answer(l.bg, ev.RequestID, map[string]any{"behavior": "deny", "message": "this Runtime does not take permission decisions for this agent"})
	}
	if req.ToolName == "AskUserQuestion" {
		return l.askUser(ev.RequestID, req.Input, req.ToolUse)
	}
	if handled, err := l.allowFunction(ev.RequestID, req.ToolName, req.Input); handled {
		return err
	}
	if handled, err := l.allowMCPTool(ev.RequestID, req.ToolName); handled {
		return err
	}
	q := &question{interactionID: "claude-perm-" + ev.RequestID, requestID: ev.RequestID, input: req.Input}
	l.t.mu.Lock()
	l.t.questions[q.interactionID] = q
	l.t.byRequest[ev.RequestID] = q
	l.t.mu.Unlock()
	title, detail := req.ToolName, ""
	if req.ToolName == "Bash" {
		var in struct {
			Command     string `json:"command"`
			Description string `json:"description"`
		}
		_ = json.Unmarshal(req.Input, &in)
		title, detail = in.Description, in.Command
	}
	return l.send(wire.PermissionRequest{RequestID: q.interactionID, Tool: req.ToolName, Title: title, Detail: detail, Payload: objectOrNil(req.Input)})
}

// askUser turns AskUserQuestion into prompt_for_user_choice.
//
// decision: Claude Code's questions carry no IDs and its answers are keyed
// by the question's text; the adapter mints q1, q2, … in the questions'
// order (unique within the ask, daemon-protocol.txt:82) and maps Core's
// answers back to the texts.
func (l *turnLoop) askUser(requestID string, raw json.RawMessage, toolUse string) error {
	var in askInput
	if err := json.Unmarshal(raw, &in); err != nil || len(in.Questions) == 0 {
		return l.e.ch.Answer(l.bg, requestID, map[string]any{"behavior": "deny", "message": "the question could not be read"})
	}
	q := &question{interactionID: "claude-ask-" + requestID, requestID: requestID, input: raw, texts: map[string]string{}}
	ask := wire.PromptForUserChoice{AskID: q.interactionID, ToolUseID: toolUse}
	for i, x := range in.Questions {
		id := fmt.Sprintf("q%d", i+1)
		q.texts[id] = x.Question
		uq := wire.UserChoiceQuestion{ID: id, Header: x.Header, Question: x.Question, MultiSelect: x.MultiSelect, Options: []wire.UserChoiceOption{}}
		for _, o := range x.Options {
			uq.Options = append(uq.Options, wire.UserChoiceOption{Label: o.Label, Description: o.Description})
		}
		ask.Questions = append(ask.Questions, uq)
	}
	l.t.mu.Lock()
	l.t.questions[q.interactionID] = q
	l.t.byRequest[requestID] = q
	l.t.mu.Unlock()
	return l.send(ask)
}

// withdrawn: the CLI cancelled its prompt (control_cancel_request).
func (l *turnLoop) withdrawn(requestID string) error {
	l.t.mu.Lock()
	q := l.t.byRequest[requestID]
	if q != nil {
		delete(l.t.byRequest, requestID)
		delete(l.t.questions, q.interactionID)
	}
	l.t.mu.Unlock()
	if q == nil {
		return nil
	}
	return l.send(harness.Withdrawal{RequestID: q.interactionID})
}

// Decide answers an open permission request of the running Turn; nil once
// the answer was written to the CLI, which is what applies it.
func (e *executor) Decide(ctx context.Context, runID string, a harness.Answer) error {
	e.mu.Lock()
	t := e.cur
	e.mu.Unlock()
	if t == nil || t.runID != runID {
		return harness.ErrRunInactive
	}
	if err := harness.CheckAnswer(t.caps, a); err != nil {
		return err
	}
	t.mu.Lock()
	q := t.questions[a.InteractionID]
	fits := q != nil && (a.Result != nil && q.function ||
		a.Permission != nil && q.texts == nil && !q.function || a.Choice != nil && q.texts != nil)
	if fits {
		delete(t.questions, a.InteractionID)
		delete(t.byRequest, q.requestID)
	}
	t.mu.Unlock()
	switch {
	case q == nil:
		return harness.ErrRunInactive // not (or no longer) pending: not_pending
	case !fits && q.function:
		return fmt.Errorf("claude adapter: %s is a function call; it takes a function_result", a.InteractionID)
	case !fits && q.texts != nil:
		return fmt.Errorf("claude adapter: %s is a user-choice question; it takes a user-choice decision", a.InteractionID)
	case !fits:
		return fmt.Errorf("claude adapter: %s is a permission request; it takes a permission decision", a.InteractionID)
	case a.Choice != nil:
		return e.answerChoice(ctx, q, a.Choice)
	case a.Result != nil:
		return e.answerFunction(ctx, q, a.Result)
	}
	if a.Permission.Approved != nil && *a.Permission.Approved {
		input := q.input
		if len(a.Permission.UpdatedInput) > 0 {
			input = json.RawMessage(a.Permission.UpdatedInput)
		}
		return e.ch.Answer(ctx, q.requestID, map[string]any{"behavior": "allow", "updatedInput": input})
	}
	msg := a.Permission.Message
	if msg == "" {
		msg = "denied by the user"
	}
	return e.ch.Answer(ctx, q.requestID, map[string]any{"behavior": "deny", "message": msg})
}

// answerChoice answers an AskUserQuestion: the answers by question text
// (several answers to one question joined by ", ", as Claude Code's own
// multi-select answers are), or a denial when the user dismissed it.
func (e *executor) answerChoice(ctx context.Context, q *question, d *wire.PromptForUserChoiceDecision) error {
	if d.Cancelled {
		msg := d.Reason
		if msg == "" {
			msg = "the user dismissed the question"
		}
		return e.ch.Answer(ctx, q.requestID, map[string]any{"behavior": "deny", "message": msg})
	}
	var input map[string]any
	if err := json.Unmarshal(q.input, &input); err != nil {
		input = map[string]any{}
	}
	answers := map[string]string{}
	for _, a := range d.QuestionAnswers {
		text, ok := q.texts[a.QuestionID]
		if !ok {
			return fmt.Errorf("claude adapter: %s asked no question %q", q.interactionID, a.QuestionID)
		}
		answers[text] = strings.Join(a.Answers, ", ")
	}
	input["answers"] = answers
	return e.ch.Answer(ctx, q.requestID, map[string]any{"behavior": "allow", "updatedInput": input})
}

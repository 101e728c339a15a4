package codex

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The mapping of one turn's notifications and server requests onto Run
// frames (harness-notes §5 measured each of them on Codex 0.171.0).

// Bounds of what a frame repeats of a tool's native data: a frame is at
// most wire.MaxFrameBytes, and a command's output can be any size.
const (
	maxObservedText = 64 << 10
	maxObservedDiff = 8 << 10
	answerTimeout   = 10 * time.Second
)

// Tool names of the tool_call frames and permission requests.
const (
	toolCommand    = "command_execution"
	toolFileChange = "file_change"
	toolWebSearch  = "web_search"
)

// delta emits one text fragment; the item ID only to a Core that opted in
// with observe_messages (daemon-protocol.txt:56).
func (l *turnLoop) delta(itemID, text string) {
	l.seq++
	d := wire.Delta{Delta: text, Sequence: l.seq}
	if l.e.observeMessages {
		d.ItemID = itemID
	}
	l.content.WriteString(text)
	l.send(d)
}

// item maps item/started and item/completed.
func (l *turnLoop) item(it item, completed bool) {
	switch it.Type {
	case itemAgentMessage:
		if completed && it.Text != "" && !l.deltaItems[it.ID] {
			// decision: a message that completed without streaming its text
			// still reaches Core as one delta, so the deltas always add up to
			// done.content (issue 17 §1, the shared text assertions).
			l.delta(it.ID, it.Text)
		}
		if !l.e.observeMessages || it.ID == "" {
			return
		}
		om := wire.OutputMessage{ID: it.ID, Status: wire.OutputInProgress}
		if it.Phase != nil && strings.TrimSpace(*it.Phase) != "" {
			om.Phase = *it.Phase
		}
		if completed {
			text := it.Text
			om.Status, om.Text = wire.OutputCompleted, &text
		}
		l.send(om)
	case itemFileChange:
		if l.fileChanges == nil {
			l.fileChanges = map[string][]fileChange{}
		}
		l.fileChanges[it.ID] = it.Changes
		l.tool(it, completed)
	case itemCommand, itemMCPTool, itemDynamicTool, itemWebSearch:
		l.tool(it, completed)
	}
}

// tool emits the before or after stage of a tool item, with the
// engine-neutral observation when Core asked for it.
func (l *turnLoop) tool(it item, completed bool) {
	if it.ID == "" {
		return
	}
	tc := wire.ToolCall{ID: it.ID, Name: toolName(it), Stage: wire.ToolStageBefore}
	if completed {
		tc.Stage = wire.ToolStageAfter
	} else {
		tc.Args = toolArgs(it)
	}
	if l.e.observeTools {
		tc.Observation = observation(it, completed)
	}
	l.send(tc)
}

func toolName(it item) string {
	switch it.Type {
	case itemCommand:
		return toolCommand
	case itemFileChange:
		return toolFileChange
	case itemWebSearch:
		return toolWebSearch
	}
	if it.Tool != "" {
		return it.Tool
	}
	return it.Type
}

// toolArgs is the tool's input as a JSON object.
func toolArgs(it item) wire.NativeJSON {
	var v any
	switch it.Type {
	case itemCommand:
		v = map[string]any{"command": boundText(it.Command), "cwd": it.Cwd}
	case itemFileChange:
		v = map[string]any{"changes": changeList(it.Changes, false)}
	case itemWebSearch:
		v = map[string]any{"query": boundText(it.Query)}
	default:
		v = map[string]any{"server": it.Server, "tool": it.Tool, "arguments": boundedJSON(it.Arguments)}
	}
	b, _ := json.Marshal(v)
	return wire.NativeJSON(b)
}

func changeList(cs []fileChange, diffs bool) []map[string]string {
	out := make([]map[string]string, 0, len(cs))
	for _, c := range cs {
		m := map[string]string{"path": c.Path, "kind": c.Kind.Type}
		if diffs && c.Diff != "" {
			m["diff"] = cut(c.Diff, maxObservedDiff)
		}
		out = append(out, m)
	}
	return out
}

// observation is the engine-neutral snapshot of a tool item.
func observation(it item, completed bool) *wire.ToolObservation {
	o := &wire.ToolObservation{Status: toolStatus(it.Status, completed)}
	switch it.Type {
	case itemCommand:
		o.Kind = "command"
		if strings.TrimSpace(it.Command) != "" {
			o.Command = boundText(it.Command)
		}
		if it.Cwd != nil && *it.Cwd != "" {
			cwd := *it.Cwd
			o.Cwd = &cwd
		}
		o.ExitCode = it.ExitCode
		if it.DurationMS != nil && *it.DurationMS >= 0 {
			o.DurationMS = it.DurationMS
		}
		if it.AggregatedOutput != nil {
			b, _ := json.Marshal(cut(*it.AggregatedOutput, maxObservedText))
			o.Output = b
		}
	case itemFileChange:
		o.Kind = "file_change"
		b, _ := json.Marshal(map[string]any{"changes": changeList(it.Changes, true)})
		o.Arguments = b
	case itemWebSearch:
		o.Kind = "web_search"
		if it.Query != "" {
			q := boundText(it.Query)
			o.Action = &wire.ToolWebSearchAction{Type: "search", Query: &q}
		}
	case itemMCPTool, itemDynamicTool:
		o.Kind = "mcp"
		if it.Type == itemDynamicTool {
			o.Kind = "function"
		}
		if strings.TrimSpace(it.Tool) != "" {
			o.Name = it.Tool
		}
		if strings.TrimSpace(it.Server) != "" {
			o.Server = it.Server
		}
		o.Arguments = boundedJSON(it.Arguments)
		if it.Type == itemMCPTool {
			o.Output = boundedJSON(it.Result)
		} else {
			o.Output = boundedJSON(it.ContentItems)
		}
		o.Error = boundedJSON(it.Error)
		if it.DurationMS != nil && *it.DurationMS >= 0 {
			o.DurationMS = it.DurationMS
		}
	}
	return o
}

// toolStatus maps Codex's item statuses onto the observation's labels.
func toolStatus(s string, completed bool) string {
	switch s {
	case "inProgress":
		return "in_progress"
	case "completed", "failed", "declined":
		return s
	case "":
		if completed {
			return "completed"
		}
		return "in_progress"
	}
	return s
}

// boundedJSON keeps a native value whole when it is small, else its text
// cut short, as a JSON string; null and absent stay absent.
func boundedJSON(raw json.RawMessage) wire.NativeJSON {
	if len(raw) == 0 || string(raw) == "null" || !json.Valid(raw) {
		return nil
	}
	if len(raw) <= maxObservedText {
		return wire.NativeJSON(raw)
	}
	b, _ := json.Marshal(cut(string(raw), maxObservedText))
	return b
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(truncated)"
}

// request answers or forwards a server request.
func (l *turnLoop) request(m *message) {
	switch m.Method {
	case rCommandApproval, rFileApproval:
		l.approval(m)
	case rToolCall:
		l.functionCall(m)
	default:
		// decision: every other server request of 0.171.0 is refused at
		// once with a JSON-RPC error, so Codex never waits on it: user input
		// and MCP elicitation (user choice and MCP are declared false), a
		// request to widen the sandbox (item/permissions/requestApproval:
		// Core's permission requests cover commands and file changes, which
		// the approvals above carry), ChatGPT login refresh, attestation,
		// and the v1 applyPatchApproval and execCommandApproval that the v2
		// approvals replace. Dynamic tools are not among them:
		// item/tool/call is answered above, as function_call.
		l.answerError(m, -32601, "agentwire does not handle "+m.Method)
	}
}

func (l *turnLoop) answerError(m *message, code int64, text string) {
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	if err := l.e.conn.RespondError(ctx, m.Method, m.ID, code, text); err != nil {
		l.e.log.Info("codex adapter: refusing a request", "method", m.Method, "err", err)
	}
}

func (l *turnLoop) answer(m *message, decision string) {
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	if err := l.e.conn.Respond(ctx, m.Method, m.ID, map[string]string{"decision": decision}); err != nil {
		l.e.log.Info("codex adapter: answering an approval", "method", m.Method, "err", err)
	}
}

// approval forwards a command or file-change approval as a
// permission_request under a fresh interaction ID.
func (l *turnLoop) approval(m *message) {
	var p approvalParams
	if json.Unmarshal(m.Params, &p) != nil || p.ThreadID != l.e.threadID || p.TurnID != l.t.turnID {
		l.answer(m, "decline")
		return
	}
	if !l.permissions || l.interrupting {
		// decision: without permissions in the Turn's declaration snapshot
		// (daemon-protocol.txt:27), or once the Turn is being stopped, an
		// approval is declined natively rather than asked.
		l.answer(m, "decline")
		return
	}
	l.asks++
	q := &question{interactionID: newInteractionID(), order: l.asks, method: m.Method, rpcID: m.ID, resolved: make(chan struct{})}
	l.e.mu.Lock()
	l.t.asked[q.interactionID] = q
	l.t.byRPC[string(m.ID)] = q
	l.e.mu.Unlock()
	pr := wire.PermissionRequest{RequestID: q.interactionID}
	reason := ""
	if p.Reason != nil {
		reason = boundText(*p.Reason)
	}
	payload := map[string]any{"item_id": p.ItemID}
	if reason != "" {
		payload["reason"] = reason
	}
	if m.Method == rCommandApproval {
		pr.Tool, pr.Title = toolCommand, "Run a command"
		if p.Command != nil {
			pr.Detail = boundText(*p.Command)
			payload["command"] = pr.Detail
		}
		if p.Cwd != nil {
			payload["cwd"] = *p.Cwd
		}
	} else {
		pr.Tool, pr.Title = toolFileChange, "Apply file changes"
		changes := l.fileChanges[p.ItemID]
		paths := make([]string, 0, len(changes))
		for _, c := range changes {
			paths = append(paths, c.Path)
		}
		pr.Detail = boundText(strings.Join(paths, "\n"))
		payload["changes"] = changeList(changes, false)
		if p.GrantRoot != nil {
			payload["grant_root"] = *p.GrantRoot
		}
	}
	if reason != "" {
		pr.Title = reason
	}
	pr.Payload, _ = json.Marshal(payload)
	if !l.send(pr) {
		l.answer(m, "decline")
	}
}

// functionCall forwards a dynamic tool call as a function_call; the call
// ID is the interaction ID of Core's function_result.
func (l *turnLoop) functionCall(m *message) {
	var p toolCallParams
	fail := func(text string) {
		ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
		defer cancel()
		res := toolCallResponse{ContentItems: []toolContent{{Type: "inputText", Text: text}}, Success: false}
		if err := l.e.conn.Respond(ctx, m.Method, m.ID, res); err != nil {
			l.e.log.Info("codex adapter: answering a tool call", "err", err)
		}
	}
	if json.Unmarshal(m.Params, &p) != nil || p.ThreadID != l.e.threadID || p.TurnID != l.t.turnID || p.CallID == "" || p.Tool == "" {
		fail("agentwire: this tool call does not belong to the running turn")
		return
	}
	if !l.caps.FunctionTools.Supports() || l.interrupting {
		fail("agentwire: function tools are not available in this turn")
		return
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
		// decision: a function's arguments are a JSON object
		// (wire.FunctionCall); anything else fails the call natively, so the
		// model can retry, instead of reaching Core.
		fail("agentwire: the arguments of " + p.Tool + " must be a JSON object")
		return
	}
	l.e.mu.Lock()
	if old := l.t.asked[p.CallID]; old != nil {
		l.e.mu.Unlock()
		fail("agentwire: call ID " + p.CallID + " is already open")
		return
	}
	q := &question{interactionID: p.CallID, function: true, method: m.Method, rpcID: m.ID, resolved: make(chan struct{})}
	l.t.asked[q.interactionID] = q
	l.t.byRPC[string(m.ID)] = q
	l.e.mu.Unlock()
	if !l.send(wire.FunctionCall{CallID: p.CallID, Name: p.Tool, Arguments: wire.NativeJSON(args)}) {
		fail("agentwire: the call could not be delivered")
	}
}

// resolved: Codex settled a server request. One the adapter did not answer
// was withdrawn natively (an interruption, Codex's own timeout).
func (l *turnLoop) resolved(p resolvedParams) {
	l.e.mu.Lock()
	q := l.t.byRPC[string(p.RequestID)]
	answered := false
	if q != nil {
		delete(l.t.byRPC, string(p.RequestID))
		delete(l.t.asked, q.interactionID)
		answered = q.answered // Decide sets it under the same lock
	}
	l.e.mu.Unlock()
	if q == nil || answered {
		return
	}
	q.resolve()
	if q.function {
		// A function call has no withdrawal frame (permission_cancel names
		// a permission request); Core's late function_result finds the
		// call gone.
		l.e.log.Info("codex adapter: Codex settled a function call it was not answered", "run_id", l.t.runID, "interaction_id", q.interactionID)
		return
	}
	// decision: Codex no longer waits on the approval, so the open
	// permission request is withdrawn (harness.Withdrawal, sent as
	// permission_cancel under its interaction ID): Core stops asking, and
	// its later decision is refused instead of looking pending.
	l.send(harness.Withdrawal{RequestID: q.interactionID})
}

// withdrawOpen withdraws every approval still unanswered when Codex ends
// the turn.
//
// decision: on an interruption Codex ends the turn with an approval
// pending and only then sends serverRequest/resolved for it (measured on
// 0.171.0: turn/completed comes first), after the Run's done. The turn's
// end is what settles the request natively, so the withdrawal is sent
// here, before done, rather than waiting for a notification that would
// reach the next Turn. An approval Decide already answered is not
// withdrawn: its outcome is Decide's to report.
func (l *turnLoop) withdrawOpen() {
	l.e.mu.Lock()
	var open []*question
	for id, q := range l.t.asked {
		if q.function || q.answered {
			continue
		}
		delete(l.t.asked, id)
		delete(l.t.byRPC, string(q.rpcID))
		open = append(open, q)
	}
	l.e.mu.Unlock()
	// Map order is random; the withdrawals go out in the order asked.
	sort.Slice(open, func(i, j int) bool { return open[i].order < open[j].order })
	for _, q := range open {
		q.resolve()
		l.send(harness.Withdrawal{RequestID: q.interactionID})
	}
}

// newInteractionID mints an interaction ID unique on the connection:
// Codex numbers its requests per process from 0, so its IDs repeat.
func newInteractionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "codex-perm-" + hex.EncodeToString(b[:])
}

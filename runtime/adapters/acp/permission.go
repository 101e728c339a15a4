package acp

import (
	"context"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Permissions. session/request_permission becomes the Run's
// permission_request under an interaction ID the adapter mints; Core's
// decision selects one of the options the agent offered.
//
// decision: "always" is never granted. Core decides each request on its
// own (daemon-protocol.txt:82 has no scope on a decision), so an approval
// selects the allow_once option and a denial the reject_once option
// (reject_always when that is all there is); an approval offered no
// allow_once option is answered cancelled rather than widened to
// allow_always, which would let later calls run without Core.

// question is one open permission request.
type question struct {
	options []sdk.PermissionOption
	answer  chan sdk.RequestPermissionResponse // buffered 1
}

// askPermission emits the request and waits for Core's decision, the
// Run's end (answered cancelled) or the agent withdrawing it (ctx).
func (t *turn) askPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	if !t.caps.Permissions.Supports() {
		return cancelledOutcome(), nil // nothing runs unasked
	}
	t.tool(p.ToolCall) // its tool_call before, when the request announces the call
	t.mu.Lock()
	t.asked++
	id := fmt.Sprintf("acp-perm-%s-%d", t.runID, t.asked)
	q := &question{options: p.Options, answer: make(chan sdk.RequestPermissionResponse, 1)}
	t.questions[id] = q
	s := t.tools[string(p.ToolCall.ToolCallId)]
	var name, title string
	var input wire.NativeJSON
	if s != nil {
		name, title, input = s.name, s.title, s.input
	}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.questions, id)
		t.mu.Unlock()
	}()
	if name == "" {
		name = "tool"
	}
	t.send(wire.PermissionRequest{RequestID: id, Tool: name, Title: title, Detail: detailOf(p.ToolCall), Payload: input})
	select {
	case r := <-q.answer:
		return r, nil
	case <-t.ended:
		return cancelledOutcome(), nil
	case <-ctx.Done():
		return cancelledOutcome(), nil
	}
}

// detailOf is the text the agent shows with the call (Gemini CLI: the
// working directory and the command's description).
func detailOf(u sdk.ToolCallUpdate) string {
	for _, c := range u.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			return c.Content.Content.Text.Text
		}
	}
	return ""
}

// choose is the option Core's decision selects, or false when none fits.
func choose(opts []sdk.PermissionOption, approved bool) (sdk.PermissionOptionId, bool) {
	want := []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
	if approved {
		want = []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce}
	}
	for _, k := range want {
		for _, o := range opts {
			if o.Kind == k {
				return o.OptionId, true
			}
		}
	}
	return "", false
}

// Decide answers an open permission request or function call of the
// running Turn; nil once the answer was handed to the agent's waiting
// request.
func (e *executor) Decide(_ context.Context, runID string, a harness.Answer) error {
	e.mu.Lock()
	t := e.cur
	e.mu.Unlock()
	if t == nil || t.runID != runID {
		return harness.ErrRunInactive
	}
	if err := harness.CheckAnswer(t.caps, a); err != nil {
		return err
	}
	if a.Result != nil {
		return t.answerFunction(a)
	}
	if a.Permission == nil {
		return fmt.Errorf("acp adapter: %s: ACP has no user-choice requests: %w", a.InteractionID, harness.ErrUnsupportedOperation)
	}
	t.mu.Lock()
	q := t.questions[a.InteractionID]
	if q != nil {
		delete(t.questions, a.InteractionID)
	}
	t.mu.Unlock()
	if q == nil {
		return harness.ErrRunInactive // not (or no longer) pending
	}
	approved := a.Permission.Approved != nil && *a.Permission.Approved
	if approved && len(a.Permission.UpdatedInput) > 0 {
		// ACP's answer selects an option; it cannot carry changed input.
		q.answer <- cancelledOutcome()
		return fmt.Errorf("acp adapter: %s: ACP cannot carry updated_input; the request was answered cancelled", a.InteractionID)
	}
	id, ok := choose(q.options, approved)
	if !ok {
		q.answer <- cancelledOutcome()
		return fmt.Errorf("acp adapter: %s: the agent offered no %s option; the request was answered cancelled", a.InteractionID,
			map[bool]string{true: "allow_once", false: "reject"}[approved])
	}
	q.answer <- sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: id}}}
	return nil
}

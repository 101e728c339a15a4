package harnesstest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Questions a Turn asks Core: permissions (approved, denied, withdrawn),
// user choices and function calls, and the answers' receipts (Decide nil
// means applied, daemon-protocol.txt:145).

func (k *kit) permissions(t *testing.T) {
	var approved, denied *Result
	k.run(t, "harness", "permissions/approve", "permissions", func(t *testing.T) {
		plan := Plan{{Say: []string{"Checking."}}, {Ask: &Ask{Tool: "shell", Approve: true}}, {Say: []string{" Done."}}}
		s := k.scenario(t, "permissions/approve", "permissions", plan, nil, nil)
		approved, _ = k.turn(s, nil, drive{answer: answerPlan(plan)})
		k.checkAnswered(t, approved)
		verify(t, approved, false)
	})
	k.run(t, "harness", "permissions/deny", "permissions", func(t *testing.T) {
		plan := Plan{{Say: []string{"Checking."}}, {Ask: &Ask{Tool: "shell", Approve: false}}, {Say: []string{" Done."}}}
		s := k.scenario(t, "permissions/deny", "permissions", plan, nil, nil)
		denied, _ = k.turn(s, nil, drive{answer: answerPlan(plan)})
		k.checkAnswered(t, denied)
		if approved != nil && approved.Returned {
			// The verdict reached the native side: the two Turns differ.
			assert.NotEqual(t, turnShape(approved), turnShape(denied), "an approved and a denied request led to the same Turn")
		}
		verify(t, denied, false)
	})
	k.run(t, "harness", "permissions/withdrawn_by_cancel", "permissions", func(t *testing.T) {
		// Core withdraws the question by cancelling the Turn while it is
		// open: the Turn settles, and an answer after that is not applied.
		plan := Plan{{Ask: &Ask{Tool: "shell", Approve: true}}}
		s := k.scenario(t, "permissions/withdrawn_by_cancel", "permissions", plan, nil, nil)
		r, exe := k.turn(s, nil, drive{cancelOnAsk: true, keep: true})
		returned(t, r)
		require.True(t, r.Cancelled, "no permission request arrived")
		k.lateAnswerRefused(t, r, exe)
	})
}

// checkAnswered asserts a Turn asked one question, took the kit's answer
// (applied) and ran to its end.
func (k *kit) checkAnswered(t *testing.T, r *Result) {
	t.Helper()
	completed(t, r)
	var asked int
	for _, e := range r.Events {
		switch v := e.(type) {
		case wire.PermissionRequest:
			assert.NotEmpty(t, v.RequestID)
			asked++
		case wire.PromptForUserChoice:
			assert.NotEmpty(t, v.AskID)
			asked++
		case wire.FunctionCall:
			assert.NotEmpty(t, v.CallID)
			asked++
		}
	}
	require.Equal(t, 1, asked, "the Turn asks exactly one question")
	require.Len(t, r.Answers, 1, "the kit answered it")
	assert.NoError(t, r.Answers[0].Err, "the answer was not applied")
}

// lateAnswerRefused answers the Turn's question after the Turn settled:
// the Executor must not apply it.
func (k *kit) lateAnswerRefused(t *testing.T, r *Result, exe harness.Executor) {
	t.Helper()
	defer k.close(t, exe)
	var q wire.PermissionRequest
	for _, e := range r.Events {
		if v, ok := e.(wire.PermissionRequest); ok {
			q = v
		}
	}
	require.NotEmpty(t, q.RequestID, "no permission request")
	dec, ok := exe.(harness.Decider)
	if !ok {
		return
	}
	yes := true
	ctx, cancel := k.deadline()
	defer cancel()
	err := dec.Decide(ctx, r.RunID, harness.Answer{InteractionID: q.RequestID, Permission: &wire.PermissionDecision{DeliveryID: "late", Approved: &yes}})
	assert.Error(t, err, "an answer after the Turn settled was applied")
}

// close closes an Executor the kit kept.
func (k *kit) close(t *testing.T, exe harness.Executor) {
	t.Helper()
	if exe == nil {
		return
	}
	ctx, cancel := k.deadline()
	defer cancel()
	assert.NoError(t, exe.Close(ctx), "Close")
}

// turnShape is what a Turn did, for comparing two of them: what it said
// and what its tools did. The native identity in done is left out: two
// Turns of two Sessions always differ there.
func turnShape(r *Result) string {
	type tool struct {
		Name, Stage string
		Result      wire.NativeJSON
		Observation *wire.ToolObservation
	}
	var tools []tool
	for _, c := range OfType[wire.ToolCall](r) {
		o := c.Observation
		if o != nil {
			copied := *o
			copied.DurationMS, copied.Cwd = nil, nil // timing and place, not outcome
			o = &copied
		}
		tools = append(tools, tool{c.Name, c.Stage, c.Result, o})
	}
	b, _ := json.Marshal(struct {
		Output string
		Tools  []tool
	}{r.Output(), tools})
	return string(b)
}

// withdrawal: the Harness withdraws its own request (permission_cancel);
// an answer after the withdrawal is not applied.
func (k *kit) withdrawal(t *testing.T) {
	plan := Plan{{Withdraw: &Ask{Tool: "shell"}}, {Say: []string{"Never mind."}}}
	s := k.scenario(t, "withdrawal", "withdrawal", plan, nil, nil)
	r, exe := k.turn(s, nil, drive{keep: true})
	completed(t, r)
	var asked, withdrawn string
	for _, e := range r.Events {
		switch v := e.(type) {
		case wire.PermissionRequest:
			asked = v.RequestID
		case harness.Withdrawal:
			withdrawn = v.RequestID
		}
	}
	require.NotEmpty(t, asked, "no permission request")
	assert.Equal(t, asked, withdrawn, "the request is withdrawn by its interaction ID")
	k.lateAnswerRefused(t, r, exe)
	verify(t, r, false)
}

func (k *kit) userChoice(t *testing.T) {
	q := wire.UserChoiceQuestion{ID: "colour", Question: "Which colour?", Options: []wire.UserChoiceOption{{Label: "crimson"}, {Label: "teal"}}}
	plan := Plan{{Choice: &Choice{Questions: []wire.UserChoiceQuestion{q}, Answers: map[string][]string{"colour": {"teal"}}}}}
	s := k.scenario(t, "user_choice", "user_choice", plan, nil, nil)
	r, _ := k.turn(s, nil, drive{answer: answerPlan(plan)})
	k.checkAnswered(t, r)
	asks := OfType[wire.PromptForUserChoice](r)
	require.Len(t, asks, 1)
	assert.Contains(t, asks[0].QuestionIDs(), "colour", "the question is asked with its own ID")
	assert.Contains(t, r.Output(), "teal", "the native side received the answer")
	verify(t, r, false)
}

// functionTools: a declared function is called with an arguments object,
// the result's receipt is applied, and the native side got the result.
func (k *kit) functionTools(t *testing.T) {
	plan := Plan{{Call: &Call{Name: "lookup", Args: json.RawMessage(`{"q":"answer"}`),
		Result: []wire.InputContent{{Type: wire.ContentText, Text: "forty-two"}}}}}
	s := k.scenario(t, "function_tools", "function_tools", plan, nil, func(s *Scenario) { s.Config.FunctionTools = lookupTool })
	r, _ := k.turn(s, nil, drive{answer: answerPlan(plan)})
	k.checkAnswered(t, r)
	calls := OfType[wire.FunctionCall](r)
	require.Len(t, calls, 1)
	assert.Equal(t, "lookup", calls[0].Name, "the call names the declared function")
	require.NoError(t, calls[0].Validate())
	assert.Contains(t, r.Output(), "forty-two", "the native side received the result")
	verify(t, r, false)
}

var lookupTool = []wire.FunctionTool{{Name: "lookup", Description: "Looks an answer up.",
	Parameters: wire.NativeJSON(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}}

var kitImage = wire.InputContent{Type: wire.ContentImage, ImageURL: "https://example.com/harnesstest/chart.png"}

// functionResultImages: a result with an image is applied when declared,
// and refused before the Harness sees it when not (daemon-protocol.txt:47).
func (k *kit) functionResultImages(t *testing.T, declared bool) {
	plan := Plan{{Call: &Call{Name: "lookup", Args: json.RawMessage(`{"q":"chart"}`),
		Result: []wire.InputContent{{Type: wire.ContentText, Text: "see the chart"}, kitImage}}}}
	name := "function_result_images"
	if !declared {
		name += "/refused"
	}
	s := k.scenario(t, name, "function_result_images", plan, nil, func(s *Scenario) { s.Config.FunctionTools = lookupTool })
	if declared {
		r, _ := k.turn(s, nil, drive{answer: answerPlan(plan)})
		k.checkAnswered(t, r)
		verify(t, r, true)
		return
	}
	r, _ := k.turn(s, nil, drive{answer: answerPlan(plan), cancelAfterAnswer: true})
	returned(t, r)
	require.Len(t, r.Answers, 1, "no function call arrived")
	assert.True(t, errors.Is(r.Answers[0].Err, harness.ErrUnsupportedOperation),
		"an image in a function result is refused as unsupported (got %v)", r.Answers[0].Err)
	assert.NotContains(t, r.Output(), "see the chart", "the refused result reached the native side")
}

// uniqueInteractionIDs: every permission request and user choice of the
// run (all on what would be one connection) has its own interaction ID.
func (k *kit) uniqueInteractionIDs(t *testing.T) {
	k.mu.Lock()
	reused := append([]string(nil), k.reused...)
	k.mu.Unlock()
	assert.Empty(t, reused, "interaction IDs asked again by a later Turn: Core and the Runtime tell questions apart "+
		"by the ID alone on a connection (daemon-protocol.txt:76); carry the Run ID in it (%s)", strings.Join(reused, ", "))
}

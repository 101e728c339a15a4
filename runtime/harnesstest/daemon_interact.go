package harnesstest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The daemon level's interactive scenarios: the questions a Turn asks Core
// and the input Core steers into it, answered as Core answers them, over
// the wire. The harness level proved the adapter's side of each through
// Decide and Steer; these prove that the daemon carries it whole: the
// question reaches Core as a frame, Core's answer reaches the adapter, and
// the receipt the adapter's return value stands for reaches Core
// (interaction_decision_ack, prompt_steer_ack), in the order
// daemon-protocol.txt:124-150 gives. An error that ends a Turn is the
// fourth: the Runtime publishes it before done, and done still comes.

func (k *kit) daemonInteractions(t *testing.T) {
	if k.declared("permissions") {
		k.run(t, "daemon", "daemon/permissions/approve", "permissions", func(t *testing.T) { k.daemonPermission(t, true) })
		k.run(t, "daemon", "daemon/permissions/deny", "permissions", func(t *testing.T) { k.daemonPermission(t, false) })
	}
	if k.declared("steering") {
		k.run(t, "daemon", "daemon/steering", "steering", k.daemonSteering)
	}
	if k.declared("function_tools") {
		k.run(t, "daemon", "daemon/function_tools", "function_tools", k.daemonFunction)
	}
	k.run(t, "daemon", "daemon/error_then_done", "text", k.daemonErrorThenDone)
}

// untilFrame returns a match for the first frame of runID of type typ; a
// Run that ends or fails to start first fails t, since the frame the kit
// waits for will never come.
func untilFrame(t *testing.T, pid, runID, typ string) func(wire.Message) bool {
	return func(m wire.Message) bool {
		failedStart(t, m, pid)
		if m.Type == wire.TypeDone && m.ID == runID {
			t.Fatalf("%s ended before it sent the %s its plan has", runID, typ)
		}
		return m.Type == typ && m.ID == runID
	}
}

// ackOf matches the receipt of delivery sent under id.
func ackOf(id, delivery string) func(wire.Message) bool {
	return func(m wire.Message) bool {
		a, ok := m.Payload.(wire.InteractionDecisionAck)
		return ok && m.ID == id && a.DeliveryID == delivery
	}
}

// doneOf matches the done of runID.
func doneOf(t *testing.T, pid, runID string) func(wire.Message) bool {
	return func(m wire.Message) bool {
		failedStart(t, m, pid)
		return m.Type == wire.TypeDone && m.ID == runID
	}
}

// onlyReceiptsAfterDone fails t when anything but a receipt of the
// deliveries named follows the Run's done: the stream ends with done, and
// a receipt is Core's answer, not the Turn's (runResult keeps it out of
// the Result wherever it falls).
func onlyReceiptsAfterDone(t *testing.T, r *daemonRun, deliveries ...string) {
	t.Helper()
	for _, m := range r.after {
		if a, ok := m.Payload.(wire.InteractionDecisionAck); ok && (len(deliveries) == 0 || slices.Contains(deliveries, a.DeliveryID)) {
			continue
		}
		t.Errorf("%s after %s's done: a Run's stream ends with done", m.Type, r.RunID)
	}
}

// daemonPermission: the Turn's permission_request reaches Core; Core's
// permission_decision, sent under the request's interaction ID, is
// applied (interaction_decision_ack under that ID, applied only once the
// Harness settled the request, daemon-protocol.txt:145), and the Turn
// runs on to done with the verdict's effect, which the hook's Verify
// checks natively.
func (k *kit) daemonPermission(t *testing.T, approve bool) {
	name := "daemon/permissions/deny"
	if approve {
		name = "daemon/permissions/approve"
	}
	plan := Plan{{Say: []string{"Checking."}}, {Ask: &Ask{Tool: "shell", Approve: approve}}, {Say: []string{" Done."}}}
	s := k.scenario(t, name, "permissions", plan, nil, nil)
	c, pid, runID := k.startTurn(t, s)
	q := c.await(t, new(int), "the permission_request of "+runID, untilFrame(t, pid, runID, wire.TypePermissionRequest)).
		Payload.(wire.PermissionRequest)
	require.NotEmpty(t, q.RequestID)
	decision := wire.PermissionDecision{DeliveryID: k.newID("decision"), Approved: &approve}
	c.send(t, q.RequestID, decision)
	ack := c.await(t, new(int), "the receipt of the decision on "+q.RequestID, ackOf(q.RequestID, decision.DeliveryID)).
		Payload.(wire.InteractionDecisionAck)
	require.NotNil(t, ack.Applied)
	require.True(t, *ack.Applied, "the decision was not applied: %s %s", ack.ErrorCode, ack.Error)
	c.await(t, new(int), "done of "+runID, doneOf(t, pid, runID))
	c.stop()

	r := runResult(s, runID, c.frames())
	require.NotNil(t, r.done, "no done for %s", runID)
	assert.Empty(t, r.Errors(), "the Turn reported errors")
	onlyReceiptsAfterDone(t, r)
	assert.Len(t, OfType[wire.PermissionRequest](&r.Result), 1, "the Turn asks exactly one question")
	assert.True(t, strings.HasPrefix(r.Output(), "Checking."), "the Turn said %q; the plan begins with %q", r.Output(), "Checking.")
	r.Answers = []Answered{{Answer: harness.Answer{InteractionID: q.RequestID, Permission: &decision}}}
	verify(t, &r.Result, false)
}

// daemonSteering: Core steers input into the running Turn as it always
// does (prompt_steer with durable_receipt); the Runtime answers written
// once the native write completed and accepted once the Harness consumed
// it, each exactly once and both before done (spec/scenarios/runtime/
// input_accepted_before_done.txt), and the Turn uses the input.
func (k *kit) daemonSteering(t *testing.T) {
	plan := Plan{{Say: []string{"Before."}}, {AwaitInput: true}}
	s := k.scenario(t, "daemon/steering", "steering", plan, nil, nil)
	c, pid, runID := k.startTurn(t, s)
	c.await(t, new(int), "the first delta of "+runID, untilFrame(t, pid, runID, wire.TypeDelta))
	in := Steered{InputID: k.newID("input"), Input: text(steered), NativeCalls: -1}
	c.send(t, runID, wire.PromptSteer{InputID: in.InputID, Input: in.Input, DurableReceipt: true})
	c.await(t, new(int), "done of "+runID, doneOf(t, pid, runID))
	c.stop()

	frames := ofID(c.frames(), runID)
	written, accepted, doneAt := -1, -1, -1
	for i, m := range frames {
		switch p := m.Payload.(type) {
		case wire.PromptSteerAck:
			require.Equal(t, in.InputID, p.InputID, "a receipt for an input Core never sent")
			switch p.DriveKey() {
			case "written":
				assert.Equal(t, -1, written, "written twice")
				written = i
			case "accepted":
				assert.Equal(t, -1, accepted, "accepted twice")
				accepted = i
			default:
				t.Errorf("the input was rejected: %s %s", p.ErrorCode, p.Error)
			}
		case wire.Done:
			if doneAt < 0 {
				doneAt = i
			}
		}
	}
	require.GreaterOrEqual(t, accepted, 0, "no accepted receipt: the native consumption never reached Core")
	assert.Less(t, accepted, doneAt, "accepted came after done: done follows the receipts")
	if k.declared("durable_input_receipts") {
		require.GreaterOrEqual(t, written, 0, "no written receipt for an input Core asked a durable receipt of")
		assert.Less(t, written, accepted, "written comes before accepted")
	}

	r := runResult(s, runID, c.frames())
	require.NotNil(t, r.done, "no done for %s", runID)
	assert.Empty(t, r.Errors(), "the Turn reported errors")
	assert.Empty(t, r.after, "frames of %s after its done", runID)
	out := r.Output()
	i := strings.Index(out, steered)
	require.GreaterOrEqual(t, i, 0, "the Turn did not use the steered input (answer %q)", out)
	assert.Greater(t, i, strings.Index(out, "Before."), "the input was used after it was written")
	r.Steers = []Steered{in}
	r.Notices = []harness.InputNotice{{InputID: in.InputID, Accepted: true}}
	verify(t, &r.Result, false)
}

// daemonFunction: the Turn's function_call reaches Core; Core's
// function_result, sent under the Run ID, is applied, and the native side
// got the result.
func (k *kit) daemonFunction(t *testing.T) {
	plan := Plan{{Call: &Call{Name: "lookup", Args: json.RawMessage(`{"q":"answer"}`),
		Result: []wire.InputContent{{Type: wire.ContentText, Text: "forty-two"}}}}}
	s := k.scenario(t, "daemon/function_tools", "function_tools", plan, nil, func(s *Scenario) { s.Config.FunctionTools = lookupTool })
	c, pid, runID := k.startTurn(t, s)
	call := c.await(t, new(int), "the function_call of "+runID, untilFrame(t, pid, runID, wire.TypeFunctionCall)).
		Payload.(wire.FunctionCall)
	assert.Equal(t, "lookup", call.Name, "the call names the declared function")
	require.NoError(t, call.Validate())
	yes := true
	result := wire.FunctionResult{DeliveryID: k.newID("result"), CallID: call.CallID, Success: &yes, Content: plan[0].Call.Result}
	c.send(t, runID, result)
	ack := c.await(t, new(int), "the receipt of the result of "+call.CallID, ackOf(runID, result.DeliveryID)).
		Payload.(wire.InteractionDecisionAck)
	require.NotNil(t, ack.Applied)
	require.True(t, *ack.Applied, "the function result was not applied: %s %s", ack.ErrorCode, ack.Error)
	c.await(t, new(int), "done of "+runID, doneOf(t, pid, runID))
	c.stop()

	r := runResult(s, runID, c.frames())
	require.NotNil(t, r.done, "no done for %s", runID)
	assert.Empty(t, r.Errors(), "the Turn reported errors")
	onlyReceiptsAfterDone(t, r, result.DeliveryID)
	assert.Len(t, OfType[wire.FunctionCall](&r.Result), 1, "the Turn calls exactly one function")
	assert.Contains(t, r.Output(), "forty-two", "the native side received the result")
	r.Answers = []Answered{{Answer: harness.Answer{InteractionID: call.CallID, Result: &result}}}
	verify(t, &r.Result, false)
}

// daemonErrorThenDone: a native failure mid-answer reaches Core as an
// error frame, nothing more of the answer streams after it, and done
// closes the Run's stream: Core ends a Turn on done, never on an error
// alone.
func (k *kit) daemonErrorThenDone(t *testing.T) {
	plan := Plan{{Say: []string{"partial"}}, {Fail: "the model broke"}}
	s := k.scenario(t, "daemon/error_then_done", "text", plan, nil, nil)
	c, pid, runID := k.startTurn(t, s)
	c.await(t, new(int), "done of "+runID, doneOf(t, pid, runID))
	c.stop()

	r := runResult(s, runID, c.frames())
	require.NotNil(t, r.done, "no done for %s", runID)
	errs := r.Errors()
	require.NotEmpty(t, errs, "the native failure was not reported")
	first := indexOfError(r.Events)
	for _, e := range r.Events[first+1:] {
		_, isDelta := e.(wire.Delta)
		assert.False(t, isDelta, "the Turn streamed on after its error")
	}
	assert.True(t, strings.HasPrefix(plan.Text(), r.Text()), "the failed Turn said %q, more than the plan's %q", r.Text(), plan.Text())
	assert.Empty(t, r.after, "frames of %s after its done", runID)
	verify(t, &r.Result, false)
}

package codex

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

var weatherTool = wire.FunctionTool{
	Name: "aw_weather", Description: "The weather in a city.",
	Parameters: wire.NativeJSON(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
}

// A function tool the Agent declares: Codex offers it to the model, the
// model's call becomes function_call (call ID, name, arguments), Core's
// function_result goes back to the model, and the tool item is observed.
func TestHarnessCodexFunctionTool(t *testing.T) {
	r := newRig(t, nil,
		modeltest.WithTurns(modeltest.Reply(modeltest.FunctionCall("aw_weather", map[string]string{"city": "Paris"}))),
		modeltest.WithResponders(modeltest.EchoToolResult("Weather: %s")),
	)
	cfg := hcfg(r.a, r.ws)
	cfg.Configuration.FunctionTools = []wire.FunctionTool{weatherTool}
	e := r.executor(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	ch := start(ctx, e, "run-fn", text("weather in Paris?"), rec, nil)
	f, ok := rec.await(ctx, func(p wire.Payload) bool { _, ok := p.(wire.FunctionCall); return ok })
	require.True(t, ok, "a function call")
	call := f.(wire.FunctionCall)
	assert.Equal(t, "aw_weather", call.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, string(call.Arguments))
	require.NotEmpty(t, call.CallID)

	// A permission decision does not answer a function call.
	yes := true
	assert.Error(t, e.Decide(ctx, "run-fn", harnessAnswer(call.CallID, &wire.PermissionDecision{DeliveryID: "d0", Approved: &yes})))
	res := wire.FunctionResult{DeliveryID: "d1", CallID: call.CallID, Success: &yes, Content: []wire.InputContent{{Type: wire.ContentText, Text: "Sunny"}}}
	require.NoError(t, e.Decide(ctx, "run-fn", harness.Answer{InteractionID: call.CallID, Result: &res}))
	out := wait(t, ch)
	require.NoError(t, out.err)
	assert.Equal(t, "Weather: Sunny", out.done.Content)

	reqs := r.srv.TurnRequests()
	require.Len(t, reqs, 2)
	assert.True(t, reqs[0].HasTool("aw_weather"), "offered: %v", reqs[0].ToolNames())
	tr, ok := reqs[1].LastToolResult()
	require.True(t, ok)
	assert.Equal(t, "Sunny", tr.Output)

	calls := of[wire.ToolCall](rec)
	require.Len(t, calls, 2)
	assert.Equal(t, "aw_weather", calls[0].Name)
	require.NotNil(t, calls[1].Observation)
	assert.Equal(t, "function", calls[1].Observation.Kind)
	assert.Equal(t, "completed", calls[1].Observation.Status)
	// Answered once: a second result finds nothing open.
	assert.ErrorIs(t, e.Decide(ctx, "run-fn", harness.Answer{InteractionID: call.CallID, Result: &res}), harness.ErrRunInactive)
}

// A resumed thread keeps the function tools it was started with.
func TestHarnessCodexFunctionToolAfterResume(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	cfg := hcfg(r.a, r.ws)
	cfg.Configuration.FunctionTools = []wire.FunctionTool{weatherTool}
	e1 := r.executor(cfg)
	res := wait(t, start(ctx, e1, "run-1", text("Say hello"), newRecorder(), nil))
	require.NoError(t, res.err)
	require.NoError(t, e1.Close(ctx))
	cfg.Configuration.AgentSessionID = res.done.Metadata.AgentSessionID
	e2 := r.executor(cfg)
	require.NoError(t, wait(t, start(ctx, e2, "run-2", text("Say hello again"), newRecorder(), nil)).err)
	reqs := r.srv.TurnRequests()
	require.Len(t, reqs, 2)
	assert.True(t, reqs[1].HasTool("aw_weather"), "still offered after resume: %v", reqs[1].ToolNames())
}

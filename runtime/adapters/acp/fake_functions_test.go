package acp

// Function tools over real pipes and a real loopback MCP server: the fake
// agent (fakeagent_test.go) is an MCP client of the server named in its
// session/new, calls a function, and says the result it got.

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// fakeFunctionAdapter is the fake kind declaring function tools; extra
// is added to the fake's environment.
func fakeFunctionAdapter(t *testing.T, extra ...string) *Adapter {
	t.Helper()
	ag := Agent{Kind: "fake", Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: append([]string{fakeEnv + "=agent"}, extra...),
		Available: true, FunctionTools: true, MCPToolName: geminiMCPToolName,
		Controls: func(string, wire.PromptRequest) ([]string, error) { return nil, nil }}
	a, err := New(Config{Agent: ag, StateDir: t.TempDir(), CloseGrace: 500 * time.Millisecond, CancelWait: fakeWait})
	require.NoError(t, err)
	return a
}

func newFunctionExecutor(t *testing.T, a *Adapter, tools []wire.FunctionTool) (*executor, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), fakeWait)
	defer cancel()
	cfg := wire.PromptRequest{FunctionTools: tools, ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}}
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000fb", Configuration: cfg,
		Declaration: a.Declaration(), WorkspaceDir: t.TempDir()})
	if err != nil {
		return nil, err
	}
	e := exe.(*executor)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), fakeWait)
		defer cancel()
		assert.NoError(t, e.Close(ctx))
	})
	return e, nil
}

func (ft *fakeTurn) call(t *testing.T) wire.FunctionCall {
	t.Helper()
	var got wire.FunctionCall
	require.Eventually(t, func() bool {
		for _, f := range ft.rec.all() {
			if c, ok := f.(wire.FunctionCall); ok {
				got = c
				return true
			}
		}
		return false
	}, fakeWait, 5*time.Millisecond, "no function_call")
	return got
}

func TestFakeFunctionCallAnsweredByCore(t *testing.T) {
	assert.True(t, fakeFunctionAdapter(t).Declaration().Capabilities.FunctionTools.Supports())
	e, err := newFunctionExecutor(t, fakeFunctionAdapter(t), lookupFunction)
	require.NoError(t, err)
	for i, c := range []struct {
		success bool
		want    string
	}{{true, "result:forty-two|and more"}, {false, "isError:forty-two|and more"}} {
		runID := "run-fn-" + string(rune('a'+i))
		ft := runFake(t, e, runID, "CALL lookup")
		call := ft.call(t)
		require.NoError(t, call.Validate())
		assert.Equal(t, "lookup", call.Name)
		assert.JSONEq(t, `{"q":"wire"}`, string(call.Arguments))
		assert.Contains(t, call.CallID, runID, "the call ID carries the Run ID")
		success := c.success
		res := &wire.FunctionResult{DeliveryID: "d-" + runID, CallID: call.CallID, Success: &success,
			Content: []wire.InputContent{{Type: wire.ContentText, Text: "forty-two"}, {Type: wire.ContentText, Text: "and more"}}}
		require.NoError(t, e.Decide(t.Context(), runID, harness.Answer{InteractionID: call.CallID, Result: res}))
		require.NoError(t, ft.wait(t))
		assert.Equal(t, c.want, ft.done.Content, "the agent got Core's result as the MCP result")
		assert.ErrorIs(t, e.Decide(t.Context(), runID, harness.Answer{InteractionID: call.CallID, Result: res}), harness.ErrRunInactive,
			"a result after the Run is not applied")
	}
}

func TestFakeFunctionResultImageRefused(t *testing.T) {
	e, err := newFunctionExecutor(t, fakeFunctionAdapter(t), lookupFunction)
	require.NoError(t, err)
	ft := runFake(t, e, "run-fn-img", "CALL lookup")
	call := ft.call(t)
	ok := true
	err = e.Decide(t.Context(), "run-fn-img", harness.Answer{InteractionID: call.CallID, Result: &wire.FunctionResult{DeliveryID: "d", CallID: call.CallID,
		Success: &ok, Content: []wire.InputContent{{Type: wire.ContentImage, ImageURL: "https://example.com/a.png"}}}})
	assert.ErrorIs(t, err, harness.ErrUnsupportedOperation, "function_result_images is not declared")
	ft.cancel()
	require.NoError(t, ft.wait(t))
}

// A cancelled Run ends the call that waits for Core: the agent's prompt
// then ends cancelled.
func TestFakeFunctionCallEndsWithTheCancelledRun(t *testing.T) {
	e, err := newFunctionExecutor(t, fakeFunctionAdapter(t), lookupFunction)
	require.NoError(t, err)
	ft := runFake(t, e, "run-fn-cancel", "CALL lookup")
	call := ft.call(t)
	ft.cancel()
	require.NoError(t, ft.wait(t), "the cancellation settled natively")
	ok := true
	err = e.Decide(context.Background(), "run-fn-cancel", harness.Answer{InteractionID: call.CallID,
		Result: &wire.FunctionResult{DeliveryID: "d", CallID: call.CallID, Success: &ok, Content: []wire.InputContent{}}})
	assert.ErrorIs(t, err, harness.ErrRunInactive)
	// The Executor still serves the next Turn.
	next := runFake(t, e, "run-after", "hello")
	require.NoError(t, next.wait(t))
	assert.Equal(t, "got:hello", next.done.Content)
}

// Only the agent holding the token reaches the server.
func TestFakeFunctionServerRefusesCallsWithoutTheToken(t *testing.T) {
	e, err := newFunctionExecutor(t, fakeFunctionAdapter(t), lookupFunction)
	require.NoError(t, err)
	ft := runFake(t, e, "run-noauth", "NOAUTH lookup")
	require.NoError(t, ft.wait(t))
	assert.Contains(t, ft.done.Content, "callerr:")
	assert.Contains(t, ft.done.Content, "Unauthorized")
	for _, f := range ft.rec.all() {
		_, called := f.(wire.FunctionCall)
		assert.False(t, called, "a call without the token reached Core")
	}
	assert.True(t, e.fn.url != "" && e.fn.url[:len("http://127.0.0.1:")] == "http://127.0.0.1:", "loopback only: %s", e.fn.url)
}

func TestFakeFunctionToolsRefusedWhenTheyCannotBePassed(t *testing.T) {
	a := fakeFunctionAdapter(t)
	for _, c := range []struct {
		tools []wire.FunctionTool
		want  string
	}{
		{[]wire.FunctionTool{{Name: "list", Parameters: wire.NativeJSON(`{"type":"array"}`)}}, `function_tools[0] ("list"): parameters has type array`},
		{[]wire.FunctionTool{{Name: "odd", Parameters: wire.NativeJSON(`[1]`)}}, `function_tools[0] ("odd"): parameters is not a JSON object`},
		{[]wire.FunctionTool{{Name: "has space"}}, `function_tools[0] ("has space"): gemini: the tool name "has space" has characters`},
		{[]wire.FunctionTool{{Name: "a"}, {Name: "a"}}, `function_tools[1] ("a"): the name is given twice`},
		{[]wire.FunctionTool{{Name: "deferred", DeferLoading: true}}, `defer_loading needs tool_search`},
		{[]wire.FunctionTool{{Name: "x123456789012345678901234567890123456789012345678901234567890"}}, "too long"},
	} {
		_, err := newFunctionExecutor(t, a, c.tools)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	// An agent that takes no HTTP MCP servers cannot get the functions.
	_, err := newFunctionExecutor(t, fakeFunctionAdapter(t, noHTTPEnv+"=1"), lookupFunction)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not declare mcpCapabilities.http")
	// A kind that declares function tools must know the agent's MCP
	// tool names.
	_, err = New(Config{Agent: Agent{Kind: "k", Command: "x", FunctionTools: true,
		Controls: func(string, wire.PromptRequest) ([]string, error) { return nil, nil }}})
	assert.ErrorContains(t, err, "MCPToolName")
}

func TestGeminiMCPToolNames(t *testing.T) {
	n, err := geminiMCPToolName("aw", "lookup")
	require.NoError(t, err)
	assert.Equal(t, "mcp_aw_lookup", n)
	_, err = geminiMCPToolName("my_server", "t")
	assert.ErrorContains(t, err, "MCP server name")
	_, err = geminiMCPToolName("aw", "tool/x")
	assert.ErrorContains(t, err, "rewrites")
}

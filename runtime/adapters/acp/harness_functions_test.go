package acp

// Function tools against the REAL Gemini CLI (`gemini --acp`) and the
// scripted Gemini API: the model calls mcp_aw_lookup, Gemini CLI calls
// the tool of the MCP server the Executor hosts (without asking
// permission), the call becomes the Run's function_call, and Core's
// result goes back to the model. A cancellation ends a call that waits.

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

var lookupFunction = []wire.FunctionTool{{Name: "lookup", Description: "Looks an answer up.",
	Parameters: wire.NativeJSON(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}}

// callRecorder answers each function call with result, and permission
// requests never (none is expected).
type callRecorder struct {
	*recorder
	calls chan wire.FunctionCall
}

func newCallRecorder() *callRecorder {
	return &callRecorder{recorder: newRecorder(), calls: make(chan wire.FunctionCall, 4)}
}

func (r *callRecorder) emit(ctx context.Context, p wire.Payload) error {
	if c, ok := p.(wire.FunctionCall); ok {
		r.calls <- c
	}
	return r.recorder.emit(ctx, p)
}

func startGeminiWith(t *testing.T, a *Adapter, ws string, cfg wire.PromptRequest) *executor {
	t.Helper()
	cfg.ObserveToolObservations = true
	cfg.ExecutionControls = &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}
	ctx, cancel := context.WithTimeout(t.Context(), cliWait)
	defer cancel()
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-000000000002", Configuration: cfg,
		Declaration: a.Declaration(), WorkspaceDir: ws})
	require.NoError(t, err)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		assert.NoError(t, exe.Close(cctx))
	})
	return exe.(*executor)
}

func TestHarnessGeminiFunctionTool(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.FunctionCall("mcp_aw_lookup", map[string]any{"q": "answer"})),
		modeltest.Reply(modeltest.Text("The lookup said it.")),
	))
	a := geminiAdapter(t, srv)
	e := startGeminiWith(t, a, t.TempDir(), wire.PromptRequest{FunctionTools: lookupFunction})

	// The server is the agent's alone: a request without its token is
	// refused before MCP sees it.
	resp, err := http.Post(e.fn.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a request without the token")

	rec := newCallRecorder()
	ctx, cancel := context.WithTimeout(t.Context(), cliWait)
	defer cancel()
	type res struct {
		d   wire.Done
		err error
	}
	out := make(chan res, 1)
	go func() {
		d, err := e.Run(ctx, harness.Turn{RunID: "run-fn-1", Input: text("LOOK IT UP"), Declaration: a.Declaration()}, rec.emit)
		out <- res{d, err}
	}()
	var call wire.FunctionCall
	select {
	case call = <-rec.calls:
	case r := <-out:
		var got []string
		for _, q := range srv.TurnRequests() {
			tr, _ := q.LastToolResult()
			got = append(got, strings.Join(q.ToolNames(), ",")+" → "+tr.Output)
		}
		t.Fatalf("the Run ended without a function call: %q %v; frames %+v; model requests %q; stderr %s", r.d.Content, r.err, rec.all(), got, e.proc.Stderr.String())
	case <-ctx.Done():
		t.Fatalf("no function call; frames %+v", rec.all())
	}
	require.NoError(t, call.Validate())
	assert.Equal(t, "lookup", call.Name)
	assert.JSONEq(t, `{"q":"answer"}`, string(call.Arguments))
	ok := true
	require.NoError(t, e.Decide(ctx, "run-fn-1", harness.Answer{InteractionID: call.CallID,
		Result: &wire.FunctionResult{DeliveryID: "d-1", CallID: call.CallID, Success: &ok, Content: []wire.InputContent{{Type: wire.ContentText, Text: "forty-two"}}}}))
	r := <-out
	require.NoError(t, r.err)
	assert.Equal(t, "The lookup said it.", r.d.Content)
	for _, f := range rec.all() {
		_, asked := f.(wire.PermissionRequest)
		assert.False(t, asked, "a function call is not asked as a permission")
	}

	reqs := srv.TurnRequests()
	require.Len(t, reqs, 2)
	assert.True(t, reqs[0].HasTool("mcp_aw_lookup"), "the model is offered the function: %v", reqs[0].ToolNames())
	tr, found := reqs[1].LastToolResult()
	require.True(t, found, "the model got the function's result")
	assert.Equal(t, "mcp_aw_lookup", tr.Name)
	assert.Contains(t, tr.Output, "forty-two")
	assert.False(t, tr.IsError)
}

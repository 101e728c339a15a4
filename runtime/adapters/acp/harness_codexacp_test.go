package acp

// The adapter against the REAL codex-acp (its native binary, make
// harnesses) and the scripted Responses API on 127.0.0.1: a text turn, an
// escalated command approved (it really runs) and a cancellation settled
// by stopReason cancelled.

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

func codexACPAdapter(t *testing.T, srv *modeltest.Server) *Adapter {
	t.Helper()
	bin := install.RequireCodexACP(t)
	t.Setenv("AW_TEST_CODEX_ACP_KEY", "sk-dummy")
	ag, err := CodexACP(CodexACPConfig{Binary: bin, Model: "gpt-5.4", BaseURL: srv.OpenAIBaseURL(), APIKeyEnv: "AW_TEST_CODEX_ACP_KEY"})
	require.NoError(t, err)
	a, err := New(Config{Agent: ag, StateDir: t.TempDir()})
	require.NoError(t, err)
	return a
}

func TestHarnessCodexACPTextApprovalAndCancel(t *testing.T) {
	hold := modeltest.NewGate()
	t.Cleanup(hold.Open)
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Text("Hello ", "there.")),
		modeltest.Reply(modeltest.Text("Running it. "), modeltest.CodexExecEscalated("echo codex-acp-proof", "prove it")),
		modeltest.Reply(modeltest.Text("It ran.")),
		modeltest.Reply(modeltest.Text("Working "), modeltest.Hold(hold), modeltest.Text("never")),
	))
	a := codexACPAdapter(t, srv)
	decl := a.Declaration()
	assert.True(t, decl.Available, "codex-acp %s is installed", CodexACPPinnedVersion)
	ctx, cancel := context.WithTimeout(t.Context(), cliWait)
	defer cancel()
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000c1",
		Configuration: wire.PromptRequest{ObserveToolObservations: true, ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}},
		Declaration:   decl, WorkspaceDir: t.TempDir()})
	require.NoError(t, err)
	e := exe.(*executor)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		assert.NoError(t, e.Close(cctx))
	})

	rec := newRecorder()
	d, err := e.Run(ctx, harness.Turn{RunID: "run-cx-1", Input: text("hello"), Declaration: decl}, rec.emit)
	require.NoError(t, err)
	assert.Equal(t, "Hello there.", d.Content, "frames %+v", rec.all())

	rec = newRecorder()
	out := make(chan wire.Done, 1)
	go func() {
		d, err := e.Run(ctx, harness.Turn{RunID: "run-cx-2", Input: text("run it"), Declaration: decl}, rec.emit)
		assert.NoError(t, err)
		out <- d
	}()
	var q wire.PermissionRequest
	select {
	case q = <-rec.asked:
	case d := <-out:
		t.Fatalf("no permission request: %q %+v", d.Content, rec.all())
	}
	yes := true
	require.NoError(t, e.Decide(ctx, "run-cx-2", harness.Answer{InteractionID: q.RequestID, Permission: &wire.PermissionDecision{DeliveryID: "d", Approved: &yes}}))
	d = <-out
	assert.Contains(t, d.Content, "It ran.")
	reqs := srv.TurnRequests()
	require.GreaterOrEqual(t, len(reqs), 3)
	tr, ok := reqs[2].LastToolResult()
	require.True(t, ok)
	assert.Contains(t, tr.Output, "codex-acp-proof", "the approved command ran")

	rec = newRecorder()
	rctx, rcancel := context.WithCancel(ctx)
	go func() {
		d, err := e.Run(rctx, harness.Turn{RunID: "run-cx-3", Input: text("hold"), Declaration: decl}, rec.emit)
		assert.NoError(t, err, "the cancellation settled natively")
		out <- d
	}()
	select {
	case <-hold.Reached():
	case <-ctx.Done():
		t.Fatal("the held stream never started")
	}
	rcancel()
	<-out // the Run returned without an error: stopReason cancelled
}

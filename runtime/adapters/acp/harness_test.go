package acp

// The adapter against the REAL Gemini CLI (`gemini --acp`, make
// harnesses) and the scripted Gemini API on 127.0.0.1: a shell command
// approved (it really runs in the workspace), one denied, and a
// cancellation settled by stopReason cancelled. Skipped when the CLI is
// not installed; failing under AGENTWIRE_REQUIRE_HARNESSES=1.

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/internal/runtime/harness/nettrace"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

const cliWait = 90 * time.Second

func geminiAdapter(t *testing.T, srv *modeltest.Server) *Adapter {
	t.Helper()
	return geminiAdapterOf(t, install.RequireGemini(t), srv)
}

func geminiAdapterOf(t *testing.T, bin string, srv *modeltest.Server) *Adapter {
	t.Helper()
	t.Setenv("AW_TEST_GEMINI_KEY", "dummy")
	ag, err := Gemini(GeminiConfig{Binary: bin, Model: "gemini-2.5-pro", BaseURL: srv.URL(), APIKeyEnv: "AW_TEST_GEMINI_KEY"})
	require.NoError(t, err)
	a, err := New(Config{Agent: ag, StateDir: t.TempDir()})
	require.NoError(t, err)
	return a
}

// recorder collects a Run's frames and answers permission requests.
type recorder struct {
	mu     sync.Mutex
	frames []wire.Payload
	asked  chan wire.PermissionRequest
}

func newRecorder() *recorder { return &recorder{asked: make(chan wire.PermissionRequest, 4)} }

func (r *recorder) emit(_ context.Context, p wire.Payload) error {
	r.mu.Lock()
	r.frames = append(r.frames, p)
	r.mu.Unlock()
	if q, ok := p.(wire.PermissionRequest); ok {
		r.asked <- q
	}
	return nil
}

func (r *recorder) all() []wire.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wire.Payload(nil), r.frames...)
}

func startGemini(t *testing.T, a *Adapter, ws string) *executor {
	t.Helper()
	cfg := wire.PromptRequest{ObserveToolObservations: true, ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}}
	ctx, cancel := context.WithTimeout(t.Context(), cliWait)
	defer cancel()
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-000000000001", Configuration: cfg,
		Declaration: a.Declaration(), WorkspaceDir: ws})
	require.NoError(t, err)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		assert.NoError(t, exe.Close(cctx))
	})
	return exe.(*executor)
}

func text(s string) wire.MessageInput {
	return wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: s}}}}
}

func TestHarnessGeminiApprovedAndDeniedShellCommands(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Text("Running it."), modeltest.GeminiShell("echo approved-proof > proof.txt && cat proof.txt", "writes the proof")),
	))
	a := geminiAdapter(t, srv)
	ws := t.TempDir()
	e := startGemini(t, a, ws)
	decl := a.Declaration()

	run := func(runID string, approve bool) (*recorder, wire.Done) {
		rec := newRecorder()
		ctx, cancel := context.WithTimeout(t.Context(), cliWait)
		defer cancel()
		type res struct {
			d   wire.Done
			err error
		}
		out := make(chan res, 1)
		go func() {
			d, err := e.Run(ctx, harness.Turn{RunID: runID, Input: text("TOOL"), Declaration: decl}, rec.emit)
			out <- res{d, err}
		}()
		select {
		case q := <-rec.asked:
			assert.Equal(t, "run_shell_command", q.Tool)
			require.NoError(t, e.Decide(ctx, runID, harness.Answer{InteractionID: q.RequestID,
				Permission: &wire.PermissionDecision{DeliveryID: "d-" + runID, Approved: &approve}}))
		case <-ctx.Done():
			t.Fatal("no permission request")
		}
		r := <-out
		require.NoError(t, r.err)
		return rec, r.d
	}

	rec, done := run("run-approve", true)
	b, err := os.ReadFile(filepath.Join(ws, "proof.txt"))
	require.NoError(t, err, "the approved command ran in the workspace")
	assert.Equal(t, "approved-proof\n", string(b))
	assert.Contains(t, done.Content, "Running it.")
	assert.Contains(t, done.Content, "Tool said: ")
	assert.Equal(t, e.sessionID, done.Metadata.AgentSessionID)
	var before, after *wire.ToolCall
	for _, f := range rec.all() {
		if c, ok := f.(wire.ToolCall); ok {
			if c.Stage == wire.ToolStageBefore {
				before = &c
			} else {
				after = &c
			}
		}
	}
	require.NotNil(t, before)
	require.NotNil(t, after)
	assert.Equal(t, "command", after.Observation.Kind)
	assert.Equal(t, "completed", after.Observation.Status)
	assert.Equal(t, "echo approved-proof > proof.txt && cat proof.txt", after.Observation.Command)

	require.NoError(t, os.Remove(filepath.Join(ws, "proof.txt")))
	srv.Enqueue(modeltest.Reply(modeltest.GeminiShell("echo denied-proof > proof.txt", "writes the proof")))
	_, done = run("run-deny", false)
	_, err = os.Stat(filepath.Join(ws, "proof.txt"))
	assert.True(t, os.IsNotExist(err), "the denied command never ran")
	reqs := srv.TurnRequests()
	require.GreaterOrEqual(t, len(reqs), 3)
	_ = done
}

func TestHarnessGeminiCancellationSettles(t *testing.T) {
	gate := modeltest.NewGate()
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("Thinking hard"), modeltest.Hold(gate))))
	a := geminiAdapter(t, srv)
	e := startGemini(t, a, t.TempDir())
	rec := newRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan error, 1)
	var done wire.Done
	go func() {
		var err error
		done, err = e.Run(ctx, harness.Turn{RunID: "run-cancel", Input: text("SLOW"), Declaration: a.Declaration()}, rec.emit)
		out <- err
	}()
	select {
	case <-gate.Reached():
	case <-time.After(cliWait):
		t.Fatal("the model was never asked")
	}
	cancel()
	select {
	case err := <-out:
		require.NoError(t, err, "stopReason cancelled settles the cancellation")
	case <-time.After(cliWait):
		t.Fatal("the cancelled Run never returned")
	}
	assert.Equal(t, e.sessionID, done.Metadata.AgentSessionID)
	gate.Open()
}

// Only the scripted endpoint on 127.0.0.1 is contacted: Gemini CLI (the
// Node launcher and everything it starts) runs under strace, and every
// address it connects or sends to is checked (nettrace) through a turn
// that thinks, streams and runs an approved shell command. Without the
// telemetry and usage-statistics settings the adapter writes (gemini.go),
// Gemini CLI looks up play.googleapis.com, which this would catch.
// Without strace this fails under AGENTWIRE_REQUIRE_HARNESSES=1.
func TestHarnessGeminiContactsOnlyLoopback(t *testing.T) {
	tr := nettrace.Wrap(t, install.RequireGemini(t))
	srv := modeltest.New(t, modeltest.WithTurns(
		modeltest.Reply(modeltest.Reasoning("Thinking."), modeltest.Text("Hello ", "offline."), modeltest.GeminiShell("echo net > net.txt", "writes a file")),
		modeltest.Reply(modeltest.Text(" Done.")),
	))
	a := geminiAdapterOf(t, tr.Binary, srv)
	e := startGemini(t, a, t.TempDir())
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(t.Context(), cliWait)
	defer cancel()
	out := make(chan error, 1)
	var done wire.Done
	go func() {
		var err error
		done, err = e.Run(ctx, harness.Turn{RunID: "run-net", Input: text("hi"), Declaration: a.Declaration()}, rec.emit)
		out <- err
	}()
	select {
	case q := <-rec.asked:
		yes := true
		require.NoError(t, e.Decide(ctx, "run-net", harness.Answer{InteractionID: q.RequestID,
			Permission: &wire.PermissionDecision{DeliveryID: "d-net", Approved: &yes}}))
	case <-ctx.Done():
		t.Fatal("no permission request")
	}
	require.NoError(t, <-out)
	assert.Equal(t, "Hello offline. Done.", done.Content)
	require.NoError(t, e.Close(ctx))
	tr.RequireOnly(t, srv.URL())
	assert.Len(t, srv.TurnRequests(), 2)
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// The prompts of TestHarnessGeminiThroughCore; the scripted Gemini API
// answers by them.
const (
	geminiE2ETwoCommands = "run two commands"
	geminiE2EHold        = "work until I cancel"
)

// geminiE2EModel is the scripted Gemini API of TestHarnessGeminiThroughCore:
// it answers each request by its prompt, or by the shell result it ends
// with.
type geminiE2EModel struct{ hold *modeltest.Gate }

func (m *geminiE2EModel) respond(r *modeltest.Request) modeltest.Turn {
	if tr, ok := r.LastToolResult(); ok {
		if strings.Contains(tr.Output, "ran-approved") {
			return modeltest.Reply(modeltest.Text("The first ran. "), modeltest.GeminiShell("echo denied > denied.txt", "write denied.txt"))
		}
		// Gemini CLI tells the model the second call was rejected.
		return modeltest.Reply(modeltest.Text("The second ", "was denied."))
	}
	switch r.LastUserText() {
	case geminiE2ETwoCommands:
		return modeltest.Reply(modeltest.Text("I will run ", "two commands."),
			modeltest.GeminiShell("echo approved > approved.txt && echo ran-approved", "write approved.txt"))
	case geminiE2EHold:
		return modeltest.Reply(modeltest.Text("Working "), modeltest.Hold(m.hold), modeltest.Text("never said"))
	}
	return modeltest.Fail(400, "no script for "+r.LastUserText())
}

// TestHarnessGeminiThroughCore runs real processes end to end: `agentwire
// core serve`, `agentwire runtime --harness gemini` with the real Gemini
// CLI (`gemini --acp`, make harnesses) and the scripted Gemini API on
// 127.0.0.1. On one Session of the gemini kind: a Turn whose first shell
// command is approved (it really writes a file in the workspace, read back
// through the files API) and whose second is denied (nothing written),
// answered at the `turn run` prompt; then a Turn cancelled through the
// public API while the model streams, settled by the Runtime's applied
// cancellation receipt (stopReason cancelled).
func TestHarnessGeminiThroughCore(t *testing.T) {
	geminiBin := install.RequireGemini(t)
	e := newCrashEnv(t)
	m := &geminiE2EModel{hold: modeltest.NewGate()}
	srv := modeltest.New(t, modeltest.WithFallback(m.respond))
	t.Cleanup(m.hold.Open)

	workspace := filepath.Join(e.dir, "workspace")
	require.NoError(t, os.MkdirAll(workspace, 0o700))
	envID := e.environment(nil)
	const keyEnv = "AGENTWIRE_E2E_GEMINI_KEY"
	t.Setenv(keyEnv, "e2e-dummy")
	rt := e.runtime("--harness", "gemini="+geminiBin, "--gemini-model", "gemini-2.5-pro", "--gemini-base-url", srv.URL(),
		"--gemini-key-env", keyEnv, "--acp-state", filepath.Join(e.dir, "acp-state"), "--environment", envID+"="+workspace)
	e.waitConnected(1)
	code, ses := e.api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "gemini", "environment_id": envID})
	require.Equal(t, 201, code, "%v", ses)
	sessionID := ses["id"].(string)

	// 1. Approve the first command and deny the second at the prompt.
	run := exec.Command(e.bin, "turn", "run", "--json", "--core", e.base, "--session", sessionID, geminiE2ETwoCommands)
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+e.proj.Secret)
	term, tty := openPTY(t) // answers are read on a terminal only
	_, err := term.WriteString("y\nn\n")
	require.NoError(t, err)
	run.Stdin = tty
	out, err := run.Output()
	require.NoError(t, err, "turn run: %s\nruntime: %s", out, rt.logs.String())
	assert.Equal(t, 2, strings.Count(string(out), `{"event":"permission_request"`), "%s", out)
	assert.Equal(t, 2, strings.Count(string(out), `"outcome":"applied"`), "both answers applied: %s", out)
	assert.Contains(t, string(out), `"delta":"was denied."`)
	assert.Contains(t, string(out), `{"event":"status","data":{"state":"completed"}}`)
	assert.NoFileExists(t, filepath.Join(workspace, "denied.txt"), "the denied command did not run")

	// The approved command's file, read back through the files API.
	ctx, cancel := context.WithTimeout(t.Context(), cliWaitE2E)
	defer cancel()
	cat := exec.CommandContext(ctx, e.bin, "files", "cat", "--core", e.base, "--session", sessionID, "approved.txt")
	cat.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+e.proj.Secret)
	var catOut, catErr bytes.Buffer
	cat.Stdout, cat.Stderr = &catOut, &catErr
	require.NoError(t, cat.Run(), "files cat: %s\nruntime: %s", catErr.String(), rt.logs.String())
	assert.Equal(t, "approved\n", catOut.String(), "the approved command ran in the workspace")

	// 2. Cancel while the model streams: the receipt settles it.
	cancelled := e.turn(sessionID, geminiE2EHold)
	select {
	case <-m.hold.Reached():
	case <-time.After(cliWaitE2E):
		t.Fatalf("the model stream never started; runtime: %s", rt.logs.String())
	}
	code, body := e.api.do("POST", "/api/v1/turns/"+cancelled+"/cancel", nil)
	require.Equal(t, 202, code, "%v", body)
	delivery, _ := body["delivery_id"].(string)
	require.NotEmpty(t, delivery)
	poll(t, cliWaitE2E, "the cancelled Turn to settle", func() bool {
		st := e.api.status(cancelled)
		return st != nil && st["state"] != "running" && st["state"] != "queued"
	})
	assert.Equal(t, map[string]any{"state": "cancelled"}, e.api.status(cancelled), "settled as cancelled, not cancel_unconfirmed")
	settled := false
	for _, a := range framesOfType(t, e.transcript(), "interaction_decision_ack") {
		if strings.Contains(a, `"delivery_id":"`+delivery+`","applied":true`) {
			settled = true
		}
	}
	assert.True(t, settled, "an applied cancellation receipt")
	assert.Len(t, srv.TurnRequests(), 4, "two commands, the answer, the held stream: no other model request")
}

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

// The prompts of TestHarnessClaudeThroughCore; the scripted model answers
// by them.
const (
	claudeE2ETwoCommands = "run two commands"
	claudeE2EHold        = "work until I cancel"
	claudeE2ERecall      = "what did we do before?"
	claudeE2ERateLimited = "this one hits the rate limit"
)

// claudeE2EModel is the scripted model of TestHarnessClaudeThroughCore: it
// answers each request by its prompt (or by the tool result it ends with)
// and remembers the native Session of every request.
type claudeE2EModel struct {
	hold *modeltest.Gate

	mu       sync.Mutex
	sessions map[string][]string // the prompts seen per native Session (X-Claude-Code-Session-Id)
	recall   *modeltest.Request  // the request answering claudeE2ERecall
}

func (m *claudeE2EModel) respond(r *modeltest.Request) modeltest.Turn {
	m.mu.Lock()
	native := r.Header.Get("X-Claude-Code-Session-Id")
	m.sessions[native] = append(m.sessions[native], r.LastUserText())
	m.mu.Unlock()
	if tr, ok := r.LastToolResult(); ok {
		switch {
		case strings.Contains(tr.Output, "ran-approved"):
			return modeltest.Reply(modeltest.Text("The first ran. "), modeltest.ClaudeBash("echo denied > denied.txt", "write denied.txt"))
		case tr.IsError:
			return modeltest.Reply(modeltest.Text("The second ", "was denied."))
		}
		return modeltest.Fail(http.StatusBadRequest, "no script for this tool result: "+tr.Output)
	}
	switch r.LastUserText() {
	case claudeE2ETwoCommands:
		return modeltest.Reply(modeltest.Text("I will run ", "two commands."),
			modeltest.ClaudeBash("echo approved > approved.txt && echo ran-approved", "write approved.txt"))
	case claudeE2EHold:
		return modeltest.Reply(modeltest.Text("Working "), modeltest.Hold(m.hold), modeltest.Text("never said"))
	case claudeE2ERecall:
		m.mu.Lock()
		m.recall = r
		m.mu.Unlock()
		return modeltest.Reply(modeltest.Text("Before, you asked me to ", "run two commands."))
	case claudeE2ERateLimited:
		return modeltest.FailWith(modeltest.HTTPError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: "Number of requests has exceeded your rate limit"})
	}
	return modeltest.Fail(http.StatusBadRequest, "no script for "+r.LastUserText())
}

// TestHarnessClaudeThroughCore runs real processes end to end: `agentwire
// core serve`, `agentwire runtime --harness claude` with the real Claude
// Code CLI, and the scripted model endpoint. On one Session: a Turn whose
// first Bash command is approved (it really writes a file in the
// workspace) and whose second is denied (nothing written), answered at
// the `turn run` prompt; a Turn cancelled while the model streams, settled
// by the Runtime's applied cancellation receipt; then, after the Runtime
// process was restarted (so a new Executor), a Turn that resumes the
// native Session (the model sees the first Turn's prompt); and a provider
// 429 reported as engine_failed with rate_limit_exceeded.
func TestHarnessClaudeThroughCore(t *testing.T) {
	claudeBin := install.RequireClaude(t)
	e := newCrashEnv(t)
	m := &claudeE2EModel{hold: modeltest.NewGate(), sessions: map[string][]string{}}
	srv := modeltest.New(t, modeltest.WithFallback(m.respond))
	t.Cleanup(m.hold.Open)

	workspace := filepath.Join(e.dir, "workspace")
	require.NoError(t, os.MkdirAll(workspace, 0o700))
	envID := e.environment(nil)
	state := filepath.Join(e.dir, "claude-state")
	const keyEnv = "AGENTWIRE_E2E_CLAUDE_KEY"
	t.Setenv(keyEnv, "sk-ant-e2e-dummy")
	startRuntime := func() *proc {
		return e.runtime("--harness", "claude="+claudeBin, "--claude-model", "scripted-model", "--claude-base-url", srv.URL(),
			"--claude-key-env", keyEnv, "--claude-state", state, "--claude-retries", "0", "--environment", envID+"="+workspace)
	}
	rt := startRuntime()
	e.waitConnected(1)
	code, ses := e.api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "claude", "environment_id": envID})
	require.Equal(t, 201, code, "%v", ses)
	sessionID := ses["id"].(string)

	// 1. Approve the first command and deny the second at the prompt.
	run := exec.Command(e.bin, "turn", "run", "--json", "--core", e.base, "--session", sessionID, claudeE2ETwoCommands)
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+e.proj.Secret)
	term, tty := openPTY(t) // answers are read on a terminal only
	_, err := term.WriteString("y\nn\n")
	require.NoError(t, err)
	run.Stdin = tty
	out, err := run.Output()
	require.NoError(t, err, "turn run: %s\nruntime: %s", out, rt.logs.String())
	got, err := os.ReadFile(filepath.Join(workspace, "approved.txt"))
	require.NoError(t, err, "the approved command wrote its file in the workspace")
	assert.Equal(t, "approved\n", string(got))
	assert.NoFileExists(t, filepath.Join(workspace, "denied.txt"), "the denied command did not run")
	assert.Equal(t, 2, strings.Count(string(out), `{"event":"permission_request"`), "%s", out)
	assert.Equal(t, 2, strings.Count(string(out), `"outcome":"applied"`), "both answers applied: %s", out)
	assert.Contains(t, string(out), `"delta":"was denied."`)
	assert.Contains(t, string(out), `{"event":"status","data":{"state":"completed"}}`)
	native := ""
	m.mu.Lock()
	for id, prompts := range m.sessions {
		if slices.Contains(prompts, claudeE2ETwoCommands) {
			native = id
		}
	}
	m.mu.Unlock()
	require.NotEmpty(t, native, "the model saw the first Turn's native Session")

	// 2. Cancel while the model streams: the receipt settles it.
	cancelled := e.turn(sessionID, claudeE2EHold)
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
	acks := framesOfType(t, e.transcript(), "interaction_decision_ack")
	settled := false
	for _, a := range acks {
		if strings.Contains(a, `"delivery_id":"`+delivery+`","applied":true`) {
			settled = true
		}
	}
	assert.True(t, settled, "an applied cancellation receipt: %v", acks)

	// 3. A new Runtime process, so a new Executor: the next Turn resumes
	// the native Session, and the model sees the first Turn's prompt.
	rt.stop()
	rt = startRuntime()
	e.waitConnected(2)
	recall := e.turn(sessionID, claudeE2ERecall)
	poll(t, cliWaitE2E, "the resumed Turn to end", func() bool {
		st := e.api.status(recall)
		return st != nil && st["state"] != "running" && st["state"] != "queued"
	})
	require.Equal(t, map[string]any{"state": "completed"}, e.api.status(recall), "runtime: %s", rt.logs.String())
	m.mu.Lock()
	r := m.recall
	m.mu.Unlock()
	require.NotNil(t, r)
	assert.Equal(t, native, r.Header.Get("X-Claude-Code-Session-Id"), "the same native Session")
	assert.Contains(t, r.UserTexts(), claudeE2ETwoCommands, "the resumed Session carries the first Turn")
	prepared := framesOfType(t, e.transcript(), "execution_prepare")
	require.NotEmpty(t, prepared)
	assert.Contains(t, prepared[len(prepared)-1], `"agent_session_id":"`+native+`"`, "Core prepared the native Session the first done reported")

	// 4. A provider 429 is engine_failed with rate_limit_exceeded.
	limited := e.turn(sessionID, claudeE2ERateLimited)
	poll(t, cliWaitE2E, "the rate-limited Turn to end", func() bool {
		st := e.api.status(limited)
		return st != nil && st["state"] != "running" && st["state"] != "queued"
	})
	st := e.api.status(limited)
	b, _ := json.Marshal(st)
	// The status stays in the error text: only connection_failed keeps
	// an HTTP status (daemon-protocol.txt:171).
	assert.Equal(t, map[string]any{"state": "failed", "reason": "engine_failed", "engine_error_code": "rate_limit_exceeded"}, st, "%s\nerror frames: %v", b, framesOfType(t, e.transcript(), "error"))
}

// cliWaitE2E bounds each wait on the real CLI through Core.
const cliWaitE2E = 90 * time.Second

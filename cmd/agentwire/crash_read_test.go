package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// TestCoreKilledDuringDirectoryRead SIGKILLs Core twice while a public
// directory read (GET /api/v1/sessions/{id}/files) is in flight: once an
// idle read's read-only execution_prepare was written, and once a read
// aimed at the Session's running Run was written. The Runtime is frozen
// (SIGSTOP) from before the read until after the kill, so the frame is
// certainly unanswered when Core dies. After each restart the read is not
// replayed (daemon-protocol.txt:159, 181), its caller got no data, and
// the Session's scheduling reservation is not stuck: a later read and a
// later Turn run (daemon-protocol.txt:183). Nothing is invented: the
// interrupted Run's Turn is failed with event_stream_incomplete only.
func TestCoreKilledDuringDirectoryRead(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	ws := filepath.Join(e.dir, "workspace")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644))
	script := e.writeFile("script.json", `{"steps":[{"delta":"partial"},{"hang":true}]}`)
	env := e.environment(nil)
	rt := e.runtime("--harness", "script="+script, "--environment", env+"="+ws)
	e.waitConnected(1)
	ses := e.session(env)

	// 1. An idle read: killed once its read-only preparation was written.
	rt.signal(t, syscall.SIGSTOP)
	read := e.readAsync(ses)
	prep := e.waitFrame("out", "execution_prepare", func(f tframe) bool {
		return strings.Contains(string(f.Payload), `"workspace_read_only":true`)
	})
	assert.Contains(t, string(prep.Payload), env, "the preparation names the registered Environment")
	e.core.kill(t)
	rt.signal(t, syscall.SIGCONT)
	assert.NotEqual(t, 200, <-read, "the caller of the interrupted read got no data; the dead Core's frames: %v", frameTypes(e.frames()))
	e.startCore()
	e.waitConnected(2)
	assert.Empty(t, e.readFrames(), "the read is not replayed")

	// 2. A read aimed at the running Run: killed once workspace_read was
	// written. The reservation the idle read held is not stuck: the
	// Session's Turn is placed.
	turnID := e.turn(ses, "run")
	e.waitState(turnID, "running")
	e.waitMessage(turnID)
	rt.signal(t, syscall.SIGSTOP)
	read = e.readAsync(ses)
	e.waitFrame("out", "workspace_read", nil)
	e.core.kill(t)
	rt.signal(t, syscall.SIGCONT)
	assert.NotEqual(t, 200, <-read, "the caller of the interrupted read got no data; the dead Core's frames: %v", frameTypes(e.frames()))
	e.startCore()
	assert.Equal(t, map[string]any{"state": "failed", "reason": "event_stream_incomplete"}, e.api.status(turnID))
	assert.Equal(t, []string{"output_message", "delta", "output_message", "observation", "status"}, e.api.eventTypes(turnID), "a read invents no event")
	e.waitConnected(3)
	assert.Empty(t, e.readFrames(), "the read is not replayed")

	// A later idle read and a later Turn of the Session run.
	code, v := e.api.do("GET", "/api/v1/sessions/"+ses+"/files", nil)
	require.Equal(t, 200, code, "%v\ncore: %s\nruntime: %s", v, e.core.logs.String(), rt.logs.String())
	assert.Contains(t, fmt.Sprint(v["entries"]), "README.md")
	assert.Len(t, e.readFrames(), 2, "one read-only preparation and one read")
	next := e.turn(ses, "after")
	e.waitState(next, "running")
	code, _ = e.api.do("POST", "/api/v1/turns/"+next+"/cancel", nil)
	require.Equal(t, 202, code)
	e.waitState(next, "cancelled")

	st := e.stopAll(rt)
	ctx := t.Context()
	tr, err := st.GetTurn(ctx, turnID)
	require.NoError(t, err)
	assert.Equal(t, store.Outcome{Reason: store.ReasonEventStreamIncomplete}, tr.Outcome)
	active, err := st.ActiveTurns(ctx)
	require.NoError(t, err)
	assert.Empty(t, active)
}

// readAsync lists the Session's workspace root on a goroutine and sends
// the HTTP status (0: no answer, Core died) when the request ends.
func (e *crashEnv) readAsync(sessionID string) <-chan int {
	out := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", e.base+"/api/v1/sessions/"+sessionID+"/files", nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.proj.Secret)
	go func() {
		defer cancel()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- 0
			return
		}
		_ = resp.Body.Close()
		out <- resp.StatusCode
	}()
	return out
}

// frameTypes names a transcript's frames in order ("out:workspace_read"):
// what a failed read assertion shows, so a read that settled says with
// which of the Runtime's replies.
func frameTypes(frames []tframe) []string {
	out := make([]string, 0, len(frames))
	for _, f := range frames {
		out = append(out, f.Dir+":"+f.Type)
	}
	return out
}

// readFrames lists the current Core's read-only preparations and reads.
func (e *crashEnv) readFrames() []tframe {
	var out []tframe
	for _, f := range e.frames() {
		if f.Dir == "out" && (f.Type == "workspace_read" ||
			f.Type == "execution_prepare" && strings.Contains(string(f.Payload), `"workspace_read_only":true`)) {
			out = append(out, f)
		}
	}
	return out
}

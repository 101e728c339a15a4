package main

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRuntimeStoppedMidTurn stops a real Runtime with SIGTERM (and, for a
// second Turn, SIGINT) while a real Core's Turn streams. The daemon
// cancels the native work and reports the Turn as stopped (an error frame,
// then done with what was produced), so Core records it failed, never
// completed with truncated content; the Session's next Turn runs on the
// restarted Runtime.
func TestRuntimeStoppedMidTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	// The Session's native Sessions outlive the first Runtime process, so
	// the restarted one recovers the Session for its second Turn.
	script := e.writeFile("script.json", `{"steps":[{"delta":"partial"},{"hang":true}],"sessions_file":"`+filepath.Join(e.dir, "native-sessions.json")+`"}`)
	ses := e.session("")
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		rt := e.runtime("--harness", "script="+script)
		e.waitConnected(i + 1)
		turn := e.turn(ses, "work")
		e.waitState(turn, "running")
		e.waitMessage(turn)
		rt.signal(t, sig)
		require.NoError(t, <-rt.exited, "the Runtime exits cleanly once the stopped Run settled: %s", rt.logs.String())
		e.waitState(turn, "failed")
		st := e.api.status(turn)
		assert.Equal(t, "failed", st["state"], "%v", st)
		assert.NotEqual(t, "completed", st["state"])
		types := e.api.eventTypes(turn)
		require.NotEmpty(t, types)
		assert.Contains(t, types, "error", "the stop is reported before the stream closes: %v", types)
		assert.Contains(t, types, "delta", "what the Turn streamed is kept: %v", types)
	}
	e.stopAll()
}

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

// TestRuntimeLostDuringWorkspaceWrite drops the Runtime's connection
// abruptly (no close handshake, as a SIGKILLed process would) while Core
// keeps running and a write waits on one unanswered frame. Before commit
// was sent the write ends aborted and the Session is free for the next
// write (daemon-protocol.txt:185: nothing reached the installer). After
// commit was sent and before its receipt the outcome is unknown: a
// successor write is refused with write_unsettled naming it, and nothing
// is resent to the reconnected Runtime.
func TestRuntimeLostDuringWorkspaceWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	body := bytes.Repeat([]byte("agentwire "), 20<<10) // 200 KiB: four chunks
	get := func(id string) map[string]any {
		code, v := e.api.do("GET", "/api/v1/writes/"+id, nil)
		require.Equal(t, 200, code, "%v", v)
		return v
	}
	ses := e.session(e.environment(nil))

	// 1. A chunk sent, its receipt outstanding: the connection drops.
	rt := startWriteRuntime(t, e.base, e.dev.Secret, func(p wire.WorkspaceWrite) bool {
		return p.Step == wire.StepBegin || p.Step == wire.StepChunk && p.Offset == 0
	})
	e.waitConnected(1)
	put := e.putAsync(ses, "one.txt", body)
	m := rt.waitFor(t, "the second chunk", func(m *wire.Message) bool {
		p, ok := m.Payload.(wire.WorkspaceWrite)
		return ok && p.Step == wire.StepChunk && p.Offset == wire.ChunkBytes
	})
	rt.cancel()
	code := <-put
	assert.Equal(t, 503, code, "Core answers the caller: aborted")
	w := get(m.ID)
	assert.Equal(t, "aborted", w["outcome"], "no commit was sent: nothing reached the installer")
	assert.Equal(t, "aborted", w["state"])

	// The Session is released: the next write, on a new connection, commits.
	rt = startWriteRuntime(t, e.base, e.dev.Secret, func(p wire.WorkspaceWrite) bool { return p.Step != wire.StepCommit })
	e.waitConnected(2)
	assert.Equal(t, 0, rt.count(wire.TypeWorkspaceWrite), "the aborted write is not replayed")
	put = e.putAsync(ses, "two.txt", body)

	// 2. Commit sent, its receipt outstanding: the connection drops.
	m = rt.waitFor(t, "the commit", isStep(wire.StepCommit))
	rt.cancel()
	code = <-put
	assert.Equal(t, 202, code, "Core answers the caller: unknown, no success invented")
	w = get(m.ID)
	assert.Equal(t, "unknown", w["outcome"], "the commit may have been applied: nothing proves either way")
	assert.Equal(t, "unknown", w["state"])
	assert.Empty(t, w["resolution"])

	after := startWriteRuntime(t, e.base, e.dev.Secret, func(wire.WorkspaceWrite) bool { return true })
	e.waitConnected(3)
	code, v := e.api.do("PUT", "/api/v1/sessions/"+ses+"/files/content?path=three.txt", nil)
	assert.Equal(t, 409, code, "%v", v)
	assert.Equal(t, "write_unsettled", v["error"])
	assert.Equal(t, m.ID, v["mutation_id"])
	assert.Equal(t, "unknown", get(m.ID)["outcome"])
	assert.Equal(t, 0, after.count(wire.TypeWorkspaceWrite), "nothing is resent to the reconnected Runtime")
	after.cancel()
	e.stopAll()
}

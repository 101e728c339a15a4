package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// writeRuntime plays dev-1 over a real WebSocket and answers workspace
// writes only as far as the test allows: answer says whether to answer a
// frame, so Core waits on the one left unanswered for as long as the test
// wants (the crash windows are deterministic: nothing races the kill). It
// records every frame Core sends.
type writeRuntime struct {
	mu     sync.Mutex
	frames []*wire.Message
	got    chan *wire.Message
	cancel context.CancelFunc
	done   chan struct{}
}

func startWriteRuntime(t *testing.T, base, secret string, answer func(p wire.WorkspaceWrite) bool) *writeRuntime {
	ctx, cancel := context.WithCancel(context.Background())
	r := &writeRuntime{got: make(chan *wire.Message, 256), cancel: cancel, done: make(chan struct{})}
	t.Cleanup(func() { r.cancel(); <-r.done })
	go func() {
		defer close(r.done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/agent-daemon/bootstrap", strings.NewReader(`{"device_id":"dev-1"}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		var boot struct {
			WSURL string `json:"ws_url"`
		}
		err = json.NewDecoder(resp.Body).Decode(&boot)
		_ = resp.Body.Close()
		if err != nil {
			return
		}
		ws, _, err := websocket.Dial(ctx, boot.WSURL+"?device_id=dev-1&version="+wire.Version,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + secret}}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 20)
		send := func(id string, p wire.Payload) {
			b, err := wire.Encode(id, p, "")
			if err == nil {
				_ = ws.Write(ctx, websocket.MessageText, b)
			}
		}
		yes := true
		send("", wire.Heartbeat{TS: time.Now().Unix(), SupportedAgentKinds: []wire.SupportedAgentKind{
			{Kind: "script", Available: &yes, Capabilities: wiretest.Capabilities()},
		}})
		var staged int64
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			m, err := wire.Decode(b, wire.CoreToRuntime)
			if err != nil {
				continue
			}
			r.mu.Lock()
			r.frames = append(r.frames, &m)
			r.mu.Unlock()
			r.got <- &m
			p, ok := m.Payload.(wire.WorkspaceWrite)
			if !ok || !answer(p) {
				continue
			}
			switch p.Step {
			case wire.StepBegin:
				staged = 0
				send(m.ID, wire.WorkspaceWriteResult{Outcome: "ready"})
			case wire.StepChunk:
				staged += int64(len(p.Data))
				send(m.ID, wire.WorkspaceWriteResult{Outcome: "received", Offset: staged})
			case wire.StepCommit:
				send(m.ID, wire.WorkspaceWriteResult{Outcome: "completed", SizeBytes: staged})
			}
		}
	}()
	return r
}

// waitFor returns the first frame Core sent that match accepts.
func (r *writeRuntime) waitFor(t *testing.T, what string, match func(*wire.Message) bool) *wire.Message {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case m := <-r.got:
			if match(m) {
				return m
			}
		case <-timeout.C:
			require.FailNow(t, "no frame: "+what)
		}
	}
}

func (r *writeRuntime) count(typ string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.frames {
		if m.Type == typ {
			n++
		}
	}
	return n
}

func isStep(step string) func(*wire.Message) bool {
	return func(m *wire.Message) bool {
		p, ok := m.Payload.(wire.WorkspaceWrite)
		return ok && p.Step == step
	}
}

// putAsync PUTs a file on a goroutine and sends the HTTP status (0: no
// answer, Core died).
func (e *crashEnv) putAsync(sessionID, path string, body []byte) <-chan int {
	out := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	req, err := http.NewRequestWithContext(ctx, "PUT", e.base+"/api/v1/sessions/"+sessionID+"/files/content?path="+path, bytes.NewReader(body))
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

// TestCoreKilledDuringWorkspaceWrite SIGKILLs a real Core process at the
// three windows of a write (daemon-protocol.txt:185) while a scripted
// Runtime leaves one frame unanswered, and restarts it on the same SQLite
// data directory: (1) reserved, begin written and unanswered; (2) after a
// chunk was sent, its receipt outstanding; (3) after commit was sent,
// before its receipt. Each time the record survives, nothing is resent on
// the next connection, the first two end aborted (no commit was
// attempted, so nothing reached the installer) and free the Session, and
// the third stays unknown: successors (a write, a Turn) wait until an
// operator resolves it; no outcome is invented.
func TestCoreKilledDuringWorkspaceWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	admin := issueCredential(t, e.bin, e.data, "--kind", "admin")
	body := bytes.Repeat([]byte("agentwire "), 20<<10) // 200 KiB: four chunks
	get := func(id string) map[string]any {
		code, v := e.api.do("GET", "/api/v1/writes/"+id, nil)
		require.Equal(t, 200, code, "%v", v)
		return v
	}
	epoch := 1
	crash := func(answer func(wire.WorkspaceWrite) bool, until func(*wire.Message) bool, ses, path string) string {
		rt := startWriteRuntime(t, e.base, e.dev.Secret, answer)
		e.waitConnected(epoch)
		put := e.putAsync(ses, path, body)
		m := rt.waitFor(t, "the write's frame to leave unanswered", until)
		e.restartCore()
		assert.Equal(t, 0, <-put, "the caller got no outcome from the killed Core")
		rt.cancel()
		epoch++
		return m.ID
	}
	ses := e.session(e.environment(nil))

	// 1. Reserved, begin written, no answer.
	id1 := crash(func(wire.WorkspaceWrite) bool { return false }, isStep(wire.StepBegin), ses, "one.txt")
	after := startWriteRuntime(t, e.base, e.dev.Secret, func(wire.WorkspaceWrite) bool { return true })
	e.waitConnected(epoch)
	w := get(id1)
	assert.Equal(t, "aborted", w["outcome"], "no commit was attempted: nothing reached the installer")
	assert.Equal(t, "core_restarted", w["reason"])
	assert.Equal(t, 0, after.count(wire.TypeWorkspaceWrite), "the write is not replayed")
	after.cancel()
	epoch++

	// 2. A chunk sent, its receipt outstanding.
	id2 := crash(func(p wire.WorkspaceWrite) bool {
		return p.Step == wire.StepBegin || p.Offset == 0 && p.Step == wire.StepChunk
	},
		func(m *wire.Message) bool {
			p, ok := m.Payload.(wire.WorkspaceWrite)
			return ok && p.Step == wire.StepChunk && p.Offset == wire.ChunkBytes
		}, ses, "two.txt")
	after = startWriteRuntime(t, e.base, e.dev.Secret, func(wire.WorkspaceWrite) bool { return true })
	e.waitConnected(epoch)
	w = get(id2)
	assert.Equal(t, "aborted", w["outcome"])
	assert.Equal(t, 0, after.count(wire.TypeWorkspaceWrite), "the write is not replayed")
	after.cancel()
	epoch++

	// 3. Commit sent, its receipt outstanding.
	id3 := crash(func(p wire.WorkspaceWrite) bool { return p.Step != wire.StepCommit }, isStep(wire.StepCommit), ses, "three.txt")
	after = startWriteRuntime(t, e.base, e.dev.Secret, func(wire.WorkspaceWrite) bool { return true })
	e.waitConnected(epoch)
	w = get(id3)
	assert.Equal(t, "unknown", w["outcome"], "the commit may have been applied: nothing proves either way")
	assert.Equal(t, "unknown", w["state"])
	assert.Empty(t, w["resolution"])

	// Successors wait: a write is refused naming the unknown one, and a
	// Turn stays queued.
	code, v := e.api.do("PUT", "/api/v1/sessions/"+ses+"/files/content?path=four.txt", nil)
	assert.Equal(t, 409, code, "%v", v)
	assert.Equal(t, "write_unsettled", v["error"])
	assert.Equal(t, id3, v["mutation_id"])
	turn := e.turn(ses, "after the write")
	assert.Equal(t, "queued", e.api.status(turn)["state"])
	code, v = e.api.do("GET", "/api/v1/writes/"+id3, nil)
	require.Equal(t, 200, code)
	assert.Equal(t, "unknown", v["outcome"])
	assert.Equal(t, 0, after.count(wire.TypeWorkspaceWrite), "the write is not replayed")
	assert.Equal(t, 0, after.count(wire.TypeExecutionPrepare), "no Turn runs while the write is unknown")

	// An operator resolves it; the Turn is then placed.
	op := &crashAPI{t: t, base: e.base, key: admin.Secret}
	code, v = op.do("POST", "/api/v1/writes/"+id3+"/resolve", map[string]any{"resolution": "not_applied", "note": "checked the workspace"})
	require.Equal(t, 200, code, "%v", v)
	assert.Equal(t, "resolved", v["outcome"])
	after.waitFor(t, "the queued Turn's execution_prepare", func(m *wire.Message) bool { return m.Type == wire.TypeExecutionPrepare })
	after.cancel()

	st := e.stopAll()
	for _, id := range []string{id1, id2, id3} {
		rec, err := st.GetWorkspaceWrite(context.Background(), id)
		require.NoError(t, err, "no record lost")
		assert.Equal(t, ses, rec.SessionID)
		assert.Equal(t, int64(len(body)), rec.SizeBytes)
	}
}

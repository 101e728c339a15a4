package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubCore serves bootstrap and the WebSocket upgrade on loopback and hands
// over the one accepted socket.
type stubCore struct {
	srv      *httptest.Server
	accepted chan *websocket.Conn
}

func newStubCore(t *testing.T) *stubCore {
	c := &stubCore{accepted: make(chan *websocket.Conn, 1)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/agent-daemon/bootstrap":
			_ = json.NewEncoder(w).Encode(map[string]any{"ws_url": "ws://" + r.Host + "/api/v1/agent-daemon/ws", "heartbeat_seconds": 3600})
		case "/api/v1/agent-daemon/ws":
			ws, err := websocket.Accept(w, r, nil)
			if err == nil {
				c.accepted <- ws
			}
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// daemonProcess is a running `agentwire runtime` whose stderr lines arrive
// on lines, and whose frames the stub Core reads from ws.
type daemonProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	exited chan struct{}
	ws     *websocket.Conn
	frames chan map[string]any
}

// startDaemonProcess runs the daemon with a script adapter playing script,
// on a clock 100 times faster (retries after 10 ms, reports every 300 ms).
func startDaemonProcess(t *testing.T, bin string, core *stubCore, script string, extra ...string) *daemonProcess {
	dir := t.TempDir()
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte("cred-SHUTDOWN-1b7e\n"), 0o600))
	sc := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(sc, []byte(script), 0o600))
	args := append([]string{"runtime", "--core", core.srv.URL, "--device-id", "dev-1", "--credential-file", cred,
		"--harness", "script=" + sc, "--time-scale", "100"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "AGENTWIRE_ALLOW_TIME_SCALE=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &daemonProcess{t: t, cmd: cmd, lines: make(chan string, 1024), exited: make(chan struct{})}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case p.ws = <-core.accepted:
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not connect")
	}
	p.frames = make(chan map[string]any, 64)
	go func() {
		defer close(p.frames)
		for {
			_, b, err := p.ws.Read(context.Background())
			if err != nil {
				return
			}
			var f map[string]any
			if json.Unmarshal(b, &f) == nil && f["type"] != "heartbeat" {
				p.frames <- f
			}
		}
	}()
	return p
}

// wait reaps the process once its stderr is read to the end; all holds
// every line.
func (p *daemonProcess) wait() (exitCode int, all []string) {
	for l := range p.lines {
		all = append(all, l)
	}
	err := p.cmd.Wait()
	close(p.exited)
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), all
	}
	require.NoError(p.t, err)
	return 0, all
}

// waitLine reads stderr until a line contains want; it fails after a
// generous guard (never a fixed wait on the happy path).
func (p *daemonProcess) waitLine(want string, seen *[]string) {
	p.t.Helper()
	guard := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			require.True(p.t, ok, "stderr ended before %q:\n%s", want, strings.Join(*seen, "\n"))
			*seen = append(*seen, l)
			if strings.Contains(l, want) {
				return
			}
		case <-guard:
			p.t.Fatalf("no line with %q:\n%s", want, strings.Join(*seen, "\n"))
		}
	}
}

func (p *daemonProcess) send(typ, id, payload string) {
	p.t.Helper()
	frame := `{"type":"` + typ + `","id":"` + id + `","payload":` + payload + `}`
	require.NoError(p.t, p.ws.Write(context.Background(), websocket.MessageText, []byte(frame)))
}

// expect reads the next frame and checks its type (and state, when given).
func (p *daemonProcess) expect(typ, state string) map[string]any {
	p.t.Helper()
	select {
	case f, ok := <-p.frames:
		require.True(p.t, ok, "the socket closed before %s %s", typ, state)
		require.Equal(p.t, typ, f["type"], "%v", f)
		pl, _ := f["payload"].(map[string]any)
		if state != "" {
			require.Equal(p.t, state, pl["state"], "%v", f)
		}
		return pl
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no %s frame", typ)
		return nil
	}
}

const shutdownPrepare = `{"session_id":"3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b","configuration":{"agent_kind":"script","execution_controls":{"web_search":"disabled","text_verbosity":"medium"},"agent_state_key":"agents-api-3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b","strict_resume":true,"observe_tool_observations":true}}`

// startRun prepares an admission and starts Run "run" on it.
func (p *daemonProcess) startRun() {
	p.send("execution_prepare", "prepare", shutdownPrepare)
	p.expect("preparation_status", "preparing")
	ready := p.expect("preparation_status", "ready")
	start, _ := json.Marshal(map[string]any{"executor_id": ready["executor_id"], "handle": ready["handle"], "run_id": "run",
		"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}}})
	p.send("execution_start", "prepare", string(start))
	p.expect("preparation_status", "starting")
	p.expect("preparation_status", "started")
}

// TestRuntimeShutdownWaitsForCleanup: after SIGTERM the daemon closes the
// idle Executor a settled Run left; its close fails twice, is retried
// (serialized, with backoff) and the process exits 0 only after the close
// succeeded, closing the socket itself.
func TestRuntimeShutdownWaitsForCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildAgentwire(t)
	core := newStubCore(t)
	p := startDaemonProcess(t, bin, core, `{"steps":[{"delta":"ok"}],"close_failures":2}`)
	var seen []string
	p.waitLine("connected", &seen)
	p.startRun()
	p.expect("delta", "")
	p.expect("done", "")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code, rest := p.wait()
	all := append(seen, rest...)
	log := strings.Join(all, "\n")
	assert.Equal(t, 0, code, log)
	failed, closed := -1, -1
	failures := 0
	for i, l := range all {
		switch {
		case strings.Contains(l, `"msg":"executor close failed`):
			failures++
			failed = i
		case strings.Contains(l, "every owned executor closed"):
			closed = i
		}
	}
	assert.Equal(t, 2, failures, log)
	require.GreaterOrEqual(t, closed, 0, log)
	assert.Less(t, failed, closed, "the exit follows the successful retry:\n%s", log)
	assert.Contains(t, log, "executor closed on retry")
	assert.NotContains(t, log, "reconnecting")
	assert.NotContains(t, log, "abandoned by the operator")
	_, open := <-p.frames
	assert.False(t, open, "the daemon closed the socket once cleanup settled")
}

// TestRuntimeShutdownSecondSignalAbandons: a Run hangs and its Executor's
// close always fails. SIGTERM cancels the Run (its error and done still
// reach Core over the open socket), the daemon keeps waiting and says for what; only
// a second SIGTERM abandons the Executor, logged as such, exit 1.
func TestRuntimeShutdownSecondSignalAbandons(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildAgentwire(t)
	core := newStubCore(t)
	p := startDaemonProcess(t, bin, core, `{"steps":[{"hang":true}],"close_fails":true}`)
	var seen []string
	p.waitLine("connected", &seen)
	p.startRun()

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	// The stopped Run is reported as such, never as a completed Turn.
	stopped := p.expect("error", "")
	assert.Contains(t, stopped["error"], "runtime shutdown")
	p.expect("done", "")
	p.waitLine("still waiting for owned executors", &seen)
	// Losing the connection while it waits neither ends the wait nor
	// authorizes a reconnection (daemon-protocol.txt:118).
	require.NoError(t, p.ws.Close(websocket.StatusGoingAway, "test"))
	p.waitLine("still waiting for owned executors", &seen) // it keeps reporting
	p.waitLine("still waiting for owned executors", &seen)
	assert.Empty(t, core.accepted, "no reconnection while shutting down")
	select {
	case <-p.exited:
		t.Fatal("the process exited while it still owned an executor")
	default:
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code, rest := p.wait()
	log := strings.Join(append(seen, rest...), "\n")
	assert.Equal(t, 1, code, log)
	assert.Contains(t, log, "second signal received")
	assert.Contains(t, log, "executor abandoned by the operator")
	assert.Contains(t, log, "shutdown abandoned executors")
	assert.NotContains(t, log, "every owned executor closed")
	assert.NotContains(t, log, "reconnecting")
}

// TestRuntimeShutdownAbandonAfter: --abandon-after is the operator's choice
// made in advance; without a second signal the daemon abandons once it
// elapsed (on the daemon's clock) and says so.
func TestRuntimeShutdownAbandonAfter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildAgentwire(t)
	core := newStubCore(t)
	p := startDaemonProcess(t, bin, core, `{"steps":[{"delta":"ok"}],"close_fails":true}`, "--abandon-after", "2m")
	var seen []string
	p.waitLine("connected", &seen)
	p.startRun()
	p.expect("delta", "")
	p.expect("done", "")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code, rest := p.wait()
	log := strings.Join(append(seen, rest...), "\n")
	assert.Equal(t, 1, code, log)
	assert.Contains(t, log, "--abandon-after elapsed")
	assert.Contains(t, log, "executor abandoned by the operator")
}

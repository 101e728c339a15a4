package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// proc is a child process of the crash test.
type proc struct {
	cmd    *exec.Cmd
	exited chan error
	logs   *lockedBuffer
}

// startProc starts bin with args; when ready is set, it returns once the
// child printed a line starting with it (the rest of that line is
// returned).
func startProc(t *testing.T, bin, ready string, args ...string) (*proc, string) {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan error, 1), logs: &lockedBuffer{}}
	p.cmd.Stderr = p.logs
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop() })
	rest := ""
	if ready != "" {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err, "%s did not start: %s", args[0], p.logs.String())
		require.True(t, strings.HasPrefix(line, ready), line)
		rest = strings.TrimSpace(strings.TrimPrefix(line, ready))
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p, rest
}

// stop ends the process with SIGTERM (SIGKILL after 20 s) and waits.
func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (p *proc) kill(t *testing.T) {
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.exited
}

// poll calls cond with a growing backoff (1 ms to 200 ms) until it holds
// or the budget ends; it never sleeps a fixed time for an event.
func poll(t *testing.T, budget time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(budget)
	wait := time.Millisecond
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}

type crashAPI struct {
	t         *testing.T
	base, key string
}

func (a *crashAPI) do(method, path string, body any) (int, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(a.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, nil // Core is down or restarting
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

func (a *crashAPI) status(turnID string) map[string]any {
	code, v := a.do("GET", "/api/v1/turns/"+turnID, nil)
	if code != 200 {
		return nil
	}
	st, _ := v["status"].(map[string]any)
	return st
}

func textInput(s string) map[string]any {
	return map[string]any{"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": s}}}}}
}

// eventTypes reads the Turn's journal through the SSE API until the
// stream ends (the Turn is terminal) and returns the event types.
func (a *crashAPI) eventTypes(turnID string) []string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+"/api/v1/turns/"+turnID+"/events", nil)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	var types []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			types = append(types, ev)
		}
	}
	return types
}

// TestCoreKilledMidTurnAndRestarted runs `agentwire core serve` on an
// SQLite data directory and `agentwire runtime` with the script adapter as
// real processes, SIGKILLs Core while a Turn runs, restarts it on the same
// data directory and port, and checks that no record was lost, that the
// interrupted Turn is failed with event_stream_incomplete (native effect
// unknown: neither completed nor a native failure, daemon-protocol.txt:153),
// that the device reconnects under a new owner epoch and that nothing is
// replayed: the only execution the restarted Core starts is a new Turn's.
func TestCoreKilledMidTurnAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := buildAgentwire(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "crash")
	credFile := filepath.Join(dir, "device-credential")
	require.NoError(t, os.WriteFile(credFile, []byte(dev.Secret), 0o600))
	script := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[{"delta":"partial"},{"hang":true}],"session_id":"native-1"}`), 0o600))

	core1, base := startProc(t, bin, "agentwire core: listening on ", "core", "serve", "--listen", "127.0.0.1:0", "--data", data,
		"--transcript", filepath.Join(dir, "frames-1.jsonl"))
	rt, _ := startProc(t, bin, "", "runtime", "--core", base, "--device-id", "dev-1", "--credential-file", credFile, "--harness", "script="+script)
	api := &crashAPI{t: t, base: base, key: proj.Secret}

	code, ses := api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script", "environment": map[string]any{"type": "none"}})
	require.Equal(t, 201, code, "%v", ses)
	sesID := ses["id"].(string)
	// A Session no device serves: its Turn stays queued across the crash.
	_, idle := api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "nobody", "environment": map[string]any{"type": "none"}})
	code, queued := api.do("POST", "/api/v1/sessions/"+idle["id"].(string)+"/turns", textInput("wait for me"))
	require.Equal(t, 201, code)
	code, turn := api.do("POST", "/api/v1/sessions/"+sesID+"/turns", textInput("first"))
	require.Equal(t, 201, code)
	turnID := turn["id"].(string)

	// Running, with its first delta journaled: Core has observed the Run.
	poll(t, 30*time.Second, "the Turn to run", func() bool { return api.status(turnID)["state"] == "running" })
	poll(t, 30*time.Second, "the first delta", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "frames-1.jsonl"))
		return bytes.Contains(b, []byte(`"type":"delta"`))
	})
	_, devs := api.do("GET", "/api/v1/devices", nil)
	require.Contains(t, fmt.Sprint(devs), "owner_epoch:1")
	// An active input stored (and delivered) before the crash.
	code, _ = api.do("POST", "/api/v1/turns/"+turnID+"/input", map[string]any{"input_id": "steer-1", "input": textInput("more")["input"]})
	require.Equal(t, 202, code)
	poll(t, 30*time.Second, "the input to be delivered", func() bool {
		return len(framesOfType(t, filepath.Join(dir, "frames-1.jsonl"), "prompt_steer")) == 1
	})

	core1.kill(t)

	core2, base2 := startProc(t, bin, "agentwire core: listening on ", "core", "serve", "--listen", strings.TrimPrefix(base, "http://"), "--data", data,
		"--transcript", filepath.Join(dir, "frames-2.jsonl"))
	require.Equal(t, base, base2, "restarted on the same address, so the Runtime finds it")

	// The interrupted Turn: failed with the observation reason, no engine
	// classification, never completed or re-run.
	st := api.status(turnID)
	assert.Equal(t, map[string]any{"state": "failed", "reason": "event_stream_incomplete"}, st)
	types := api.eventTypes(turnID)
	assert.Equal(t, "delta", types[0], "the journal kept what was observed")
	assert.Equal(t, []string{"observation", "status"}, types[len(types)-2:], "nothing invented: no error, no done")
	assert.NotContains(t, types, "done")
	assert.NotContains(t, types, "error")
	assert.Equal(t, map[string]any{"state": "queued"}, api.status(queued["id"].(string)), "the queued Turn survived")

	// The Runtime reconnects under a new owner epoch.
	poll(t, 60*time.Second, "the device to reconnect", func() bool {
		_, v := api.do("GET", "/api/v1/devices", nil)
		s := fmt.Sprint(v)
		return strings.Contains(s, "connected:true") && strings.Contains(s, "owner_epoch:2") && strings.Contains(s, "kind:script")
	})

	// A new Turn of the same Session runs; it is the only execution the
	// restarted Core starts (the interrupted one is not replayed).
	code, next := api.do("POST", "/api/v1/sessions/"+sesID+"/turns", textInput("second"))
	require.Equal(t, 201, code)
	nextID := next["id"].(string)
	poll(t, 30*time.Second, "the new Turn to run", func() bool { return api.status(nextID)["state"] == "running" })
	starts := framesOfType(t, filepath.Join(dir, "frames-2.jsonl"), "execution_start")
	require.Len(t, starts, 1)
	assert.Contains(t, starts[0], `"text":"second"`)
	assert.Empty(t, framesOfType(t, filepath.Join(dir, "frames-2.jsonl"), "prompt_steer"), "no input is replayed")
	code, _ = api.do("POST", "/api/v1/turns/"+turnID+"/input", textInput("too late"))
	assert.Equal(t, 409, code, "the interrupted Turn takes no more input")
	code, _ = api.do("POST", "/api/v1/turns/"+nextID+"/cancel", nil)
	require.Equal(t, 202, code)
	poll(t, 30*time.Second, "the new Turn to be cancelled", func() bool { return api.status(nextID)["state"] == "cancelled" })

	rt.stop()
	core2.stop()
	assert.Contains(t, core2.logs.String(), "reconciled a Turn left by an earlier Core process")
	for _, logs := range []string{core1.logs.String(), core2.logs.String(), rt.logs.String()} {
		assert.NotContains(t, logs, dev.Secret)
		assert.NotContains(t, logs, proj.Secret)
	}
}

// framesOfType returns the frames of a type in a Core transcript.
func framesOfType(t *testing.T, path, typ string) []string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"type":"`+typ+`"`) {
			out = append(out, l)
		}
	}
	return out
}

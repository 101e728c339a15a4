package main

// Helpers of the crash tests: real `agentwire core serve` and `agentwire
// runtime` processes, killed and restarted, observed through the public
// API, Core's frame transcript and, once Core stopped, its SQLite store.

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

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store/sqlite"
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
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a test that failed may have left it frozen
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
// stream ends (the Turn is terminal) and returns the event types, without
// the scheduler's placement events (whether a Turn queued before its
// device connected says why it waited depends on that race).
func (a *crashAPI) eventTypes(turnID string) []string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := a.events(ctx, turnID)
	defer resp.Body.Close()
	var types []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok && ev != "placement" && ev != "live" {
			types = append(types, ev)
		}
	}
	return types
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

// tframe is one line of a Core transcript.
type tframe struct {
	Dir     string // "in" (Runtime to Core) or "out"
	Type    string
	ID      string
	Payload json.RawMessage
}

// transcriptFrames reads a Core transcript (a missing file has no frames).
func transcriptFrames(t *testing.T, path string) []tframe {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []tframe
	for _, l := range bytes.Split(b, []byte("\n")) {
		var line struct {
			Dir   string `json:"dir"`
			Frame struct {
				Type    string          `json:"type"`
				ID      string          `json:"id"`
				Payload json.RawMessage `json:"payload"`
			} `json:"frame"`
		}
		if len(bytes.TrimSpace(l)) == 0 || json.Unmarshal(l, &line) != nil {
			continue // a line cut short by SIGKILL
		}
		out = append(out, tframe{Dir: line.Dir, Type: line.Frame.Type, ID: line.Frame.ID, Payload: line.Frame.Payload})
	}
	return out
}

// framesOf filters frames by direction and type.
func framesOf(frames []tframe, dir, typ string) []tframe {
	var out []tframe
	for _, f := range frames {
		if f.Dir == dir && f.Type == typ {
			out = append(out, f)
		}
	}
	return out
}

// crashEnv is one Core data directory with its credentials (project
// crash, which owns device dev-1) and the Core process serving it, which a
// test kills and restarts on the same address.
type crashEnv struct {
	t         *testing.T
	bin, dir  string
	data      string
	dev, proj issued
	credFile  string
	core      *proc
	base      string
	gen       int // the Core process generation: its transcript is frames-<gen>.jsonl
	api       *crashAPI
}

func newCrashEnv(t *testing.T) *crashEnv {
	t.Helper()
	e := &crashEnv{t: t, bin: buildAgentwire(t), dir: t.TempDir()}
	e.data = filepath.Join(e.dir, "data")
	e.proj = issueCredential(t, e.bin, e.data, "--kind", "project", "--project", "crash")
	e.dev = issueCredential(t, e.bin, e.data, "--kind", "device", "--device", "dev-1", "--project", "crash")
	e.credFile = filepath.Join(e.dir, "device-credential")
	require.NoError(t, os.WriteFile(e.credFile, []byte(e.dev.Secret), 0o600))
	e.startCore()
	e.api = &crashAPI{t: t, base: e.base, key: e.proj.Secret}
	return e
}

// transcript is the current Core process's transcript.
func (e *crashEnv) transcript() string {
	return filepath.Join(e.dir, fmt.Sprintf("frames-%d.jsonl", e.gen))
}

// frames reads the current Core process's transcript.
func (e *crashEnv) frames() []tframe { return transcriptFrames(e.t, e.transcript()) }

// startCore starts a Core process, on the address of the previous one
// when there was one (so the Runtime finds it again).
func (e *crashEnv) startCore() {
	e.t.Helper()
	e.gen++
	listen := "127.0.0.1:0"
	if e.base != "" {
		listen = strings.TrimPrefix(e.base, "http://")
	}
	p, base := startProc(e.t, e.bin, "agentwire core: listening on ", "core", "serve", "--listen", listen, "--data", e.data,
		"--transcript", e.transcript())
	if e.base != "" {
		require.Equal(e.t, e.base, base, "restarted on the same address")
	}
	e.core, e.base = p, base
}

// restartCore SIGKILLs Core (no shutdown code runs) and starts it again
// on the same data directory and address.
func (e *crashEnv) restartCore() {
	e.t.Helper()
	e.core.kill(e.t)
	e.startCore()
}

// writeFile writes a file under the test's directory and returns its path.
func (e *crashEnv) writeFile(name, content string) string {
	p := filepath.Join(e.dir, name)
	require.NoError(e.t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// runtime starts `agentwire runtime` for dev-1 with extra arguments.
func (e *crashEnv) runtime(args ...string) *proc {
	p, _ := startProc(e.t, e.bin, "", append([]string{"runtime", "--core", e.base, "--device-id", "dev-1", "--credential-file", e.credFile}, args...)...)
	return p
}

// waitConnected waits until dev-1 is connected under owner epoch epoch
// and declares its agent kinds.
func (e *crashEnv) waitConnected(epoch int) {
	e.t.Helper()
	poll(e.t, 60*time.Second, fmt.Sprintf("dev-1 to connect under epoch %d", epoch), func() bool {
		code, v := e.api.do("GET", "/api/v1/devices", nil)
		if code != 200 {
			return false
		}
		list, _ := v["devices"].([]any)
		for _, x := range list {
			d, _ := x.(map[string]any)
			kinds, _ := d["agent_kinds"].([]any)
			if d["device_id"] == "dev-1" && d["connected"] == true && d["owner_epoch"] == float64(epoch) && len(kinds) > 0 {
				return true
			}
		}
		return false
	})
}

// environment registers a self_hosted Environment on dev-1 with an
// optional initialization declaration (nil: none) and returns the ID Core
// minted; a Runtime serves it with --environment ID=DIR.
func (e *crashEnv) environment(init map[string]any) string {
	e.t.Helper()
	body := map[string]any{"device_id": "dev-1"}
	if init != nil {
		body["initialization"] = init
	}
	code, env := e.api.do("POST", "/api/v1/environments", body)
	require.Equal(e.t, 201, code, "%v", env)
	require.Equal(e.t, "dev-1", env["device_id"], "%v", env)
	return env["id"].(string)
}

// session creates a Session of the script kind on the registered
// Environment envID ("": a Session of Environment type none).
func (e *crashEnv) session(envID string) string {
	e.t.Helper()
	body := map[string]any{"agent_kind": "script"}
	if envID != "" {
		body["environment_id"] = envID
	}
	code, ses := e.api.do("POST", "/api/v1/sessions", body)
	require.Equal(e.t, 201, code, "%v", ses)
	if envID != "" {
		require.Equal(e.t, envID, ses["environment_id"], "%v", ses)
	}
	return ses["id"].(string)
}

// turn submits a Turn and returns its ID.
func (e *crashEnv) turn(sessionID, text string) string {
	e.t.Helper()
	code, v := e.api.do("POST", "/api/v1/sessions/"+sessionID+"/turns", textInput(text))
	require.Equal(e.t, 201, code, "%v", v)
	return v["id"].(string)
}

// waitState waits for a Turn's public state.
func (e *crashEnv) waitState(turnID, state string) {
	e.t.Helper()
	poll(e.t, 30*time.Second, "turn "+turnID+" to be "+state, func() bool { return e.api.status(turnID)["state"] == state })
}

// waitFrame waits until the current transcript holds a frame of a type in
// a direction for which match (nil: any) holds, and returns it.
func (e *crashEnv) waitFrame(dir, typ string, match func(tframe) bool) tframe {
	e.t.Helper()
	var got tframe
	poll(e.t, 30*time.Second, dir+" "+typ, func() bool {
		for _, f := range framesOf(e.frames(), dir, typ) {
			if match == nil || match(f) {
				got = f
				return true
			}
		}
		return false
	})
	return got
}

// waitMessage waits until the Run's first native message completed: the
// script adapter declares message_items, so Core observes messages and
// the Runtime reports a message's completion (output_message,
// daemon-protocol.txt:55) right after its last delta, before the next
// step; a test that acts once a Run has streamed waits for it, so the
// frames Core observed do not depend on timing.
//
// It waits for the message in the Turn's journal too (the public event
// stream): Core reads a frame before its journal entry is written, and
// an API action the test takes next (a cancellation, say) journals its
// own entry; waiting for the frame alone let the two swap.
func (e *crashEnv) waitMessage(turnID string) tframe {
	e.t.Helper()
	f := e.waitFrame("in", "output_message", func(f tframe) bool { return strings.Contains(string(f.Payload), `"completed"`) })
	e.api.waitEvent(turnID, "output_message", `"completed"`)
	return f
}

// events opens the Turn's public event stream (SSE); the caller closes
// the body.
func (a *crashAPI) events(ctx context.Context, turnID string) *http.Response {
	a.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+"/api/v1/turns/"+turnID+"/events", nil)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	return resp
}

// waitEvent reads the Turn's public event stream until an event of type
// typ whose data contains want arrives.
func (a *crashAPI) waitEvent(turnID, typ, want string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := a.events(ctx, turnID)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	current := ""
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			current = ev
			continue
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && current == typ && strings.Contains(data, want) {
			return
		}
	}
	a.t.Fatalf("turn %s: the event stream ended without a %s event containing %s", turnID, typ, want)
}

// stopAll stops the Runtimes and Core with SIGTERM, checks that no
// secret reached a log and opens the store Core left (closed at cleanup).
func (e *crashEnv) stopAll(runtimes ...*proc) *sqlite.Store {
	e.t.Helper()
	for _, r := range runtimes {
		r.stop()
		require.NotContains(e.t, r.logs.String(), e.dev.Secret)
	}
	e.core.stop()
	for _, s := range []string{e.dev.Secret, e.proj.Secret} {
		require.NotContains(e.t, e.core.logs.String(), s)
	}
	st, err := sqlite.Open(context.Background(), e.data)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = st.Close() })
	return st
}

// signal sends sig to a process (SIGSTOP and SIGCONT freeze and thaw a
// Runtime, so a frame Core wrote is certainly still unanswered). SIGSTOP
// returns only once the process is stopped: the signal's delivery is not
// (awaitStopped).
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	if sig == syscall.SIGSTOP {
		awaitStopped(t, p.cmd.Process.Pid)
	}
}

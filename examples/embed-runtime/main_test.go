package main

// The example as an embedder runs it: a real `agentwire core serve`, this
// Runtime as a process of its own, and a Turn through Core's public API.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build compiles a package of this module into dir.
func build(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	return out
}

// syncBuffer collects a child's stderr for the failure message.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs bin until the test ends (SIGTERM, then SIGKILL after 10 s).
// With ready set, it returns the rest of the first stdout line, which
// must start with ready.
func start(t *testing.T, ready, bin string, args ...string) (string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	logs := &syncBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	rest := ""
	if ready != "" {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err, "%s did not start: %s", bin, logs.String())
		require.True(t, strings.HasPrefix(line, ready), line)
		rest = strings.TrimSpace(strings.TrimPrefix(line, ready))
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return rest, logs
}

// api calls Core's public API with the project key.
type api struct {
	t         *testing.T
	base, key string
}

func (a api) do(method, path string, body any) (int, map[string]any) {
	a.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(a.t, err)
	req, err := http.NewRequest(method, a.base+path, bytes.NewReader(b))
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

// events reads the Turn's event stream until it ends (the Turn is
// terminal) and returns each event's type and data, in order.
func (a api) events(turnID string) [][2]string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+"/api/v1/turns/"+turnID+"/events", nil)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	var out [][2]string
	typ := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			typ = ev
		} else if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, [2]string{typ, data})
		}
	}
	return out
}

// poll checks cond with a growing backoff until it holds or 20 s passed.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 200*time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(wait)
	}
}

func issue(t *testing.T, bin, data string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"core", "credential", "issue", "--data", data}, args...)...).Output()
	require.NoError(t, err)
	var c struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(out, &c))
	require.NotEmpty(t, c.Secret)
	return c.Secret
}

func TestShoutCompletesATurnOnARealCore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs agentwire and the example")
	}
	dir := t.TempDir()
	agentwire := build(t, dir, "agentwire", "github.com/agentwire/agentwire/cmd/agentwire")
	example := build(t, dir, "embed-runtime", ".")
	data := filepath.Join(dir, "data")
	key := issue(t, agentwire, data, "--kind", "project", "--project", "embed")
	cred := filepath.Join(dir, "device-credential")
	require.NoError(t, os.WriteFile(cred, []byte(issue(t, agentwire, data, "--kind", "device", "--device", "dev-1", "--project", "embed")), 0o600))
	base, coreLogs := start(t, "agentwire core: listening on ", agentwire, "core", "serve", "--listen", "127.0.0.1:0", "--data", data)
	_, rtLogs := start(t, "", example, "--core", base, "--device-id", "dev-1", "--credential-file", cred)
	c := api{t: t, base: base, key: key}

	poll(t, "dev-1 to connect and declare shout", func() bool {
		_, v := c.do("GET", "/api/v1/devices", nil)
		b, _ := json.Marshal(v)
		return strings.Contains(string(b), `"connected":true`) && strings.Contains(string(b), `"shout"`)
	})
	code, ses := c.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "shout"})
	require.Equal(t, 201, code, "%v", ses)
	code, turn := c.do("POST", "/api/v1/sessions/"+ses["id"].(string)+"/turns",
		map[string]any{"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "hello loud world"}}}}})
	require.Equal(t, 201, code, "%v", turn)
	var deltas, done, status []string
	for _, e := range c.events(turn["id"].(string)) {
		switch e[0] {
		case "delta":
			deltas = append(deltas, e[1])
		case "done":
			done = append(done, e[1])
		case "status":
			status = append(status, e[1])
		}
	}
	require.Equal(t, []string{`{"content":"HELLO LOUD WORLD"}`}, done, "core: %s\nruntime: %s", coreLogs, rtLogs)
	assert.Equal(t, []string{`{"delta":"HELLO","sequence":0}`, `{"delta":" LOUD","sequence":0}`, `{"delta":" WORLD","sequence":0}`}, deltas)
	assert.Equal(t, []string{`{"state":"completed"}`}, status)
}

package main

// The example as an embedder runs it: this Core as a process of its own,
// a real `agentwire runtime` connected to it, and a Turn through the
// public API; its store passes Core's conformance suite.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
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

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestAuditStoreConforms(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store {
		return auditStore{Store: memory.New(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	})
}

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

// syncBuffer collects a child's stderr.
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
func start(t *testing.T, env []string, ready, bin string, args ...string) (string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
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

// events reads the Turn's event stream until it ends and returns each
// event's type and data, in order.
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

func TestEmbeddedCoreServesARealRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs agentwire and the example")
	}
	dir := t.TempDir()
	agentwire := build(t, dir, "agentwire", "github.com/agentwire/agentwire/cmd/agentwire")
	example := build(t, dir, "embed-core", ".")
	const projectKey, deviceKey = "project-key-of-embed", "device-key-of-dev-1"
	base, coreLogs := start(t, []string{"EMBED_PROJECT_KEY=" + projectKey, "EMBED_DEVICE_KEY=" + deviceKey},
		"embed-core: listening on ", example, "--listen", "127.0.0.1:0")
	cred := filepath.Join(dir, "device-credential")
	require.NoError(t, os.WriteFile(cred, []byte(deviceKey), 0o600))
	script := filepath.Join(dir, "steps.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[{"delta":"hello "},{"delta":"from the runtime"}]}`), 0o600))
	_, rtLogs := start(t, nil, "", agentwire, "runtime", "--core", base, "--device-id", "dev-1", "--credential-file", cred, "--harness", "script="+script)
	c := api{t: t, base: base, key: projectKey}

	// The embedder's own route sits beside Core's on its mux.
	resp, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	// A key the authenticator does not know opens nothing.
	code, _ := api{t: t, base: base, key: "guess"}.do("GET", "/api/v1/devices", nil)
	assert.Equal(t, 401, code)

	poll(t, "dev-1 to connect and declare script", func() bool {
		_, v := c.do("GET", "/api/v1/devices", nil)
		b, _ := json.Marshal(v)
		return strings.Contains(string(b), `"connected":true`) && strings.Contains(string(b), `"script"`)
	})
	code, ses := c.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script"})
	require.Equal(t, 201, code, "%v", ses)
	code, turn := c.do("POST", "/api/v1/sessions/"+ses["id"].(string)+"/turns",
		map[string]any{"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}}})
	require.Equal(t, 201, code, "%v", turn)
	var deltas, status []string
	for _, e := range c.events(turn["id"].(string)) {
		switch e[0] {
		case "delta":
			deltas = append(deltas, e[1])
		case "status":
			status = append(status, e[1])
		}
	}
	require.Equal(t, []string{`{"state":"completed"}`}, status, "core: %s\nruntime: %s", coreLogs, rtLogs)
	assert.Len(t, deltas, 2)
	poll(t, "the audit line", func() bool {
		return strings.Contains(coreLogs.String(), `msg="audit: turn ended" turn=`+turn["id"].(string)+" state=completed")
	})

	// Revoking the device goes through the embedder's authenticator: its
	// key is dropped and the Runtime's connection is closed.
	code, v := c.do("POST", "/api/v1/devices/dev-1/revoke", nil)
	require.Equal(t, 200, code, "%v", v)
	assert.Equal(t, []any{"key-dev-1"}, v["revoked"])
	poll(t, "dev-1 to be disconnected", func() bool {
		_, v := c.do("GET", "/api/v1/devices", nil)
		b, _ := json.Marshal(v)
		return strings.Contains(string(b), `"connected":false`)
	})
}

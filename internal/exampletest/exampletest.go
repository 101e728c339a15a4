// Package exampletest runs the embedding examples the way an embedder
// would: built binaries as processes of their own, talking to each other
// and to the test over loopback HTTP. The examples' tests share it so each
// test reads as the scenario it proves.
package exampletest

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

	"github.com/stretchr/testify/require"
)

// Build compiles a package of this module into dir and returns the binary.
func Build(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	return out
}

// Logs collects a child's stderr for failure messages.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start runs bin with env added to the test's environment until the test
// ends (SIGTERM, then SIGKILL after 10 s). With ready set, it returns the
// rest of the first stdout line, which must start with ready.
func Start(t *testing.T, env []string, ready, bin string, args ...string) (string, *Logs) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	logs := &Logs{}
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

// API calls a Core's public API with a project key.
type API struct {
	T         *testing.T
	Base, Key string
}

// Do sends body as JSON and returns the status and the decoded answer.
func (a API) Do(method, path string, body any) (int, map[string]any) {
	a.T.Helper()
	b, err := json.Marshal(body)
	require.NoError(a.T, err)
	req, err := http.NewRequest(method, a.Base+path, bytes.NewReader(b))
	require.NoError(a.T, err)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(a.T, err)
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

// Events reads the Turn's event stream until it ends (the Turn is
// terminal) and returns each event's type and data, in order.
func (a API) Events(turnID string) [][2]string {
	a.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", a.Base+"/api/v1/turns/"+turnID+"/events", nil)
	require.NoError(a.T, err)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.T, err)
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

// Poll checks cond with a growing backoff until it holds or 20 s passed.
func Poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 200*time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(wait)
	}
}

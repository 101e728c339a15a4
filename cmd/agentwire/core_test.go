package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// buildAgentwire builds the binary once per test process; every process
// test shares it (binDir lives until TestMain ends).
func buildAgentwire(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.bin = filepath.Join(binDir, "agentwire")
		cmd := exec.Command("go", "build", "-o", build.bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.out, build.err = cmd.CombinedOutput()
	})
	require.NoError(t, build.err, "%s", build.out)
	return build.bin
}

var (
	binDir string
	build  struct {
		once sync.Once
		bin  string
		out  []byte
		err  error
	}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentwire-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func issueCredential(t *testing.T, bin, data string, args ...string) issued {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"core", "credential", "issue", "--data", data}, args...)...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		require.NoError(t, err, "credential issue %v: %s", args, exit.Stderr)
	}
	require.NoError(t, err)
	var c issued
	require.NoError(t, json.Unmarshal(out, &c))
	require.NotEmpty(t, c.Secret)
	return c
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCoreServeProcess runs `agentwire core serve` as a real process and
// talks to it as a Runtime (bootstrap, WebSocket, heartbeat) and as an API
// client (the device registry), then stops it with SIGTERM.
func TestCoreServeProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentwire(t)
	data := t.TempDir()
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")

	cmd := exec.Command(bin, "core", "serve", "--listen", "127.0.0.1:0", "--data", data)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	base := strings.TrimSpace(strings.TrimPrefix(line, "agentwire core: listening on "))
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	// Bootstrap names the connection URL (the listen address by default).
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/agent-daemon/bootstrap", strings.NewReader(`{"device_id":"dev-1"}`))
	req.Header.Set("Authorization", "Bearer "+dev.Secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var boot struct {
		WSURL           string `json:"ws_url"`
		ProtocolVersion string `json:"protocol_version"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&boot))
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, wire.Version, boot.ProtocolVersion)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := http.Header{"Authorization": {"Bearer " + dev.Secret}}
	ws, _, err := websocket.Dial(ctx, boot.WSURL+"?device_id=dev-1&version="+wire.Version, &websocket.DialOptions{HTTPHeader: h})
	require.NoError(t, err)
	defer ws.CloseNow()
	yes := true
	hb, err := wire.Encode("", wire.Heartbeat{TS: time.Now().UnixMilli(), SupportedAgentKinds: []wire.SupportedAgentKind{
		{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()},
	}}, "")
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, hb))

	// The registry shows the advertised kind once the heartbeat is stored.
	var devices struct {
		Devices []struct {
			DeviceID   string                    `json:"device_id"`
			Connected  bool                      `json:"connected"`
			AgentKinds []wire.SupportedAgentKind `json:"agent_kinds"`
		} `json:"devices"`
	}
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/devices", nil)
		req.Header.Set("Authorization", "Bearer "+proj.Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&devices) != nil {
			return false
		}
		return len(devices.Devices) == 1 && len(devices.Devices[0].AgentKinds) == 1
	}, 20*time.Second, 10*time.Millisecond)
	assert.Equal(t, "dev-1", devices.Devices[0].DeviceID)
	assert.True(t, devices.Devices[0].Connected)
	assert.Equal(t, "codex", devices.Devices[0].AgentKinds[0].Kind)

	// The CLI wrappers: create a Session, submit a Turn, read its status.
	cli := func(args ...string) map[string]any {
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
		out, err := c.Output()
		require.NoError(t, err, "%v", args)
		var v map[string]any
		require.NoError(t, json.Unmarshal(out, &v), "%s", out)
		return v
	}
	ses := cli("session", "create", "--core", base, "--kind", "codex")
	turn := cli("turn", "submit", "--core", base, "--session", ses["id"].(string), "hello")
	status := cli("turn", "status", "--core", base, turn["id"].(string))
	assert.Equal(t, map[string]any{"state": "queued"}, status["status"])
	devs := cli("devices", "--json", "--core", base)
	assert.Len(t, devs["devices"], 1)

	// A device credential never opens the public API.
	req, _ = http.NewRequest(http.MethodGet, base+"/api/v1/devices", nil)
	req.Header.Set("Authorization", "Bearer "+dev.Secret)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "logs: %s", logs.String())
		exited <- nil
	case <-ctx.Done():
		t.Fatal("core serve did not stop on SIGTERM")
	}
	// No credential is ever logged.
	for _, s := range []string{dev.Secret, proj.Secret} {
		assert.NotContains(t, logs.String(), s)
	}

	// The registry survives the process, and credentials list without secrets.
	out, err := exec.Command(bin, "core", "credential", "list", "--data", data).Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), dev.ID)
	assert.NotContains(t, string(out), dev.Secret)
	_, err = exec.Command(bin, "core", "credential", "revoke", "--data", data, dev.ID).Output()
	require.NoError(t, err)
	out, err = exec.Command(bin, "core", "devices", "--data", data).Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), `"device_id": "dev-1"`)
}

// A second Core on a data directory another Core serves exits at once,
// naming the holder's PID, before it touches the store; the first goes
// on serving, and administration commands still run beside it.
func TestSecondCoreOnOneDataDirectoryIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentwire(t)
	data := t.TempDir()
	first := startCore(t, bin, data)
	out, err := exec.Command(bin, "core", "serve", "--listen", "127.0.0.1:0", "--data", data).CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), "is in use by another Core (process "+strconv.Itoa(first.pid)+")")
	assert.NotContains(t, string(out), "listening on")

	issued := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	assert.NotEmpty(t, issued.Secret, "credential issue runs beside the serving Core")
	resp, err := http.Get(first.base + "/api/v1/devices")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the first Core still answers")
}

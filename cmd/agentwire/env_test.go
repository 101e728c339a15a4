package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
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

// restartableCore is `agentwire core serve` on a fixed address, so that a
// restarted Core is reached at the same URL by the Runtime.
type restartableCore struct {
	t          *testing.T
	bin, data  string
	addr, base string
	logs       *lockedBuffer
	cmd        *exec.Cmd
	exited     chan error
}

func (c *restartableCore) start() {
	c.t.Helper()
	c.cmd = exec.Command(c.bin, "core", "serve", "--listen", c.addr, "--data", c.data)
	stdout, err := c.cmd.StdoutPipe()
	require.NoError(c.t, err)
	c.cmd.Stderr = c.logs
	require.NoError(c.t, c.cmd.Start())
	c.exited = make(chan error, 1)
	go func(cmd *exec.Cmd, ch chan error) { ch <- cmd.Wait() }(c.cmd, c.exited)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(c.t, err, "core logs: %s", c.logs.String())
	require.Contains(c.t, line, c.base)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
}

func (c *restartableCore) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// kill stops Core with SIGKILL: nothing is flushed or closed on the way.
func (c *restartableCore) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestEnvInitializationAndSuspensionAgainstRealProcesses: a real Core and a
// real Runtime. `env create --init-env --init-file` registers the
// workspace on dev-1 (Core mints its ID, `env list` shows it) and the
// Runtime serves it with --environment ID=DIR; the declared file lands in
// the workspace through runtime_prepare before the first read of a
// Session created with `session create --environment`; `env suspend`
// quiesces the Runtime, the suspension outlives a SIGKILL and restart of
// Core, and `env resume` resumes exactly that attempt, after which a Turn
// runs again.
func TestEnvInitializationAndSuspensionAgainstRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentwire(t)
	data := t.TempDir()
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	addr := freeAddr(t)
	core := &restartableCore{t: t, bin: bin, data: data, addr: addr, base: "http://" + addr, logs: &lockedBuffer{}}
	core.start()
	defer core.stop()

	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte(dev.Secret), 0o600))
	script := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[{"delta":"back"}]}`), 0o600))
	local := filepath.Join(dir, "init.txt")
	require.NoError(t, os.WriteFile(local, []byte("initialized by Core\n"), 0o600))

	// The workspace is registered on dev-1 with its initialization; Core
	// mints the Environment's ID, which the Runtime is configured with.
	reg := cliJSON(t, bin, proj.Secret, "env", "create", "--core", core.base, "--device", "dev-1",
		"--init-env", "MODE=e2e", "--init-file", local+"=/workspace/notes/init.txt")
	envID, _ := reg["id"].(string)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, envID, "%v", reg)
	assert.Equal(t, "self_hosted", reg["type"])
	assert.Equal(t, "dev-1", reg["device_id"])
	sum := sha256.Sum256([]byte("initialized by Core\n"))
	assert.Equal(t, map[string]any{"env_keys": []any{"MODE"}, "files": []any{map[string]any{
		"path": "/workspace/notes/init.txt", "size_bytes": float64(len("initialized by Core\n")),
		"sha256": hex.EncodeToString(sum[:])}}}, reg["initialization"], "the declaration, never the contents")
	list := cliJSON(t, bin, proj.Secret, "env", "list", "--json", "--core", core.base)
	envs, _ := list["environments"].([]any)
	require.Len(t, envs, 1, "%v", list)
	assert.Equal(t, envID, envs[0].(map[string]any)["id"])

	rtLogs := startRuntimeProcess(t, bin, nil, "--core", core.base, "--device-id", "dev-1", "--credential-file", cred,
		"--environment", envID+"="+ws, "--state", filepath.Join(dir, "state"), "--harness", "script="+script)
	logs := func() string { return "core: " + core.logs.String() + "\nruntime: " + rtLogs.String() }
	// connected waits for a connection newer than epoch that declared
	// itself, and returns its owner epoch. (After a SIGKILL the registry
	// still shows the killed Core's connection until the device is back.)
	connected := func(epoch float64) float64 {
		var now float64
		require.Eventually(t, func() bool {
			d := cliJSON(t, bin, proj.Secret, "devices", "--json", "--core", core.base)
			list, _ := d["devices"].([]any)
			for _, x := range list {
				if m, _ := x.(map[string]any); m["connected"] == true {
					kinds, _ := m["agent_kinds"].([]any)
					now, _ = m["owner_epoch"].(float64)
					return len(kinds) > 0 && now > epoch
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "%s", logs())
		return now
	}
	epoch := connected(0)

	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "script", "--environment", envID)
	sid := ses["id"].(string)
	assert.Equal(t, envID, ses["environment_id"], "the Session names the registered Environment")
	assert.Equal(t, "self_hosted", ses["environment_type"])

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cli := func(args ...string) (string, string, error) {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		return out.String(), errOut.String(), err
	}

	out, _, err := cli("files", "cat", "--core", core.base, "--session", sid, "notes/init.txt")
	require.NoError(t, err, logs())
	assert.Equal(t, "initialized by Core\n", out)
	onDisk, err := os.ReadFile(filepath.Join(ws, "notes", "init.txt"))
	require.NoError(t, err)
	assert.Equal(t, "initialized by Core\n", string(onDisk))
	show := cliJSON(t, bin, proj.Secret, "env", "show", "--core", core.base, envID)
	status, _ := show["initialization_status"].(map[string]any)
	assert.Equal(t, "completed", status["outcome"], "%v", show)

	out, _, err = cli("env", "suspend", "--core", core.base, envID)
	require.NoError(t, err, "%s\n%s", out, logs())
	var a map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	assert.Equal(t, "suspended", a["state"])
	suspendID := a["suspend_id"].(string)

	// Core is killed and restarted on its data directory; the attempt and
	// the Runtime's fence both outlive it.
	core.kill()
	core.start()
	connected(epoch)
	_, errOut, err := cli("env", "suspend", "--core", core.base, envID)
	require.Error(t, err)
	assert.Contains(t, errOut, "suspension_open")

	out, _, err = cli("env", "resume", "--core", core.base, envID)
	require.NoError(t, err, "%s\n%s", out, logs())
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	assert.Equal(t, "resumed", a["state"])
	assert.Equal(t, suspendID, a["suspend_id"], "exactly the stored attempt")
	_, errOut, err = cli("env", "resume", "--core", core.base, envID)
	require.Error(t, err)
	assert.Contains(t, errOut, "not_suspended")

	out, _, err = cli("turn", "run", "--core", core.base, "--session", sid, "hi")
	require.NoError(t, err, "%s\n%s", out, logs())
	assert.Contains(t, out, `"delta":"back"`)
	assert.True(t, strings.Contains(out, `status {"state":"completed"}`), out)
	for _, s := range []string{dev.Secret, proj.Secret} {
		assert.NotContains(t, core.logs.String(), s)
		assert.NotContains(t, rtLogs.String(), s)
	}
}

// `env suspend` names no device: the attempt goes to the device that hosts
// the Environment, so --device is an unknown flag there.
func TestEnvSuspendNamesNoDevice(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runEnv([]string{"suspend", "--core", "http://127.0.0.1:1", "--device", "dev-1", "env-1"}, &out, &errOut)
	require.ErrorIs(t, err, errUsage)
	assert.Contains(t, errOut.String(), "flag provided but not defined: -device")
	assert.NotContains(t, envUsage, "suspend --core URL [--device")
	assert.Empty(t, out.String(), "nothing was sent")
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRuntimeProcessStopsOnVersionRefusal runs the real binary against a
// Core that refuses the upgrade with 426: the process exits non-zero, says
// what to fix, and never prints the credential.
func TestRuntimeProcessStopsOnVersionRefusal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentwire")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	const secret = "cred-PROCESS-5e1d"
	upgrades := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/agent-daemon/bootstrap":
			_ = json.NewEncoder(w).Encode(map[string]any{"ws_url": "ws://" + r.Host + "/api/v1/agent-daemon/ws", "heartbeat_seconds": 15})
		case "/api/v1/agent-daemon/ws":
			upgrades++
			w.WriteHeader(http.StatusUpgradeRequired)
			_, _ = w.Write([]byte(`{"error":"incompatible_version","detail":"mismatch"}`))
		}
	}))
	defer srv.Close()
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte(secret+"\n"), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "runtime", "--core", srv.URL, "--device-id", "dev-1", "--credential-file", cred, "-v")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "to fix: deploy a daemon whose wire version matches Core")
	assert.NotContains(t, stderr.String(), secret)
	assert.Equal(t, 1, upgrades, "a permanent refusal is never retried")
}

func TestHarnessFlagExec(t *testing.T) {
	var buf bytes.Buffer
	a, err := adapter("exec:echo=/bin/true:../../examples/echo-agent/capabilities.json", &buf)
	require.NoError(t, err)
	require.Equal(t, "echo", a.Declaration().Kind)
	_, err = adapter("exec:echo", &buf)
	require.ErrorContains(t, err, "exec:KIND=COMMAND")
	_, err = adapter("exec:echo=/bin/true", &buf)
	require.ErrorContains(t, err, "capabilities")
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
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

// TestRuntimeEnvironmentFlags: --environment ID=DIR binds Environments at
// startup; a malformed value, a non-canonical or repeated ID, a missing
// directory and a directory two Environments would share are refused
// before anything connects, each naming the flag and the value. The old
// --workspace is refused naming its replacement.
func TestRuntimeEnvironmentFlags(t *testing.T) {
	const idX, idY = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c", "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e"
	dir, other := t.TempDir(), t.TempDir()
	missing := filepath.Join(dir, "missing")
	for name, c := range map[string]struct {
		args []string
		want []string
	}{
		"workspace alone":     {[]string{"--workspace", dir}, []string{"--workspace is gone", "--environment ID=DIR", "agentwire env create"}},
		"workspace empty":     {[]string{"--workspace="}, []string{"--workspace is gone", "--environment ID=DIR"}},
		"workspace and env":   {[]string{"--environment", idX + "=" + dir, "--workspace", other}, []string{"--workspace is gone"}},
		"no equals sign":      {[]string{"--environment", dir}, []string{"--environment " + dir + ":", "want ID=DIR"}},
		"no directory":        {[]string{"--environment", idX + "="}, []string{"--environment " + idX + "=:", "want ID=DIR"}},
		"not canonical":       {[]string{"--environment", "env-1=" + dir}, []string{"--environment env-1=" + dir + ":", "canonical"}},
		"duplicate id":        {[]string{"--environment", idX + "=" + dir, "--environment", idX + "=" + other}, []string{"--environment " + idX + "=" + other + ":", "bound twice"}},
		"missing directory":   {[]string{"--environment", idX + "=" + missing}, []string{"--environment " + idX + "=" + missing + ":", "no such file or directory"}},
		"shared directory":    {[]string{"--environment", idX + "=" + dir, "--environment", idY + "=" + dir}, []string{"--environment " + idY + "=" + dir + ":", "never share"}},
		"nested directory":    {[]string{"--environment", idX + "=" + dir, "--environment", idY + "=" + filepath.Join(dir, ".")}, []string{"never share"}},
		"valid, then missing": {[]string{"--environment", idX + "=" + dir, "--environment", idY + "=" + missing}, []string{"--environment " + idY + "=" + missing}},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := runRuntime(append(c.args, "--core", "http://127.0.0.1:1", "--device-id", "dev-1", "--credential-file", missing), io.Discard, &stderr)
			require.Error(t, err)
			assert.NotErrorIs(t, err, errUsage)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestRuntimeProcessStopsOnRevocation runs the real binary, bound to an
// Environment, against a Core that accepts the connection and then closes
// it with 4001 (credential revoked or device retired): the process never
// bootstraps or dials again, exits 1 and says why and what to fix.
func TestRuntimeProcessStopsOnRevocation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildAgentwire(t)
	dir := t.TempDir()
	var boots, upgrades atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/agent-daemon/bootstrap":
			boots.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]any{"ws_url": "ws://" + r.Host + "/api/v1/agent-daemon/ws", "heartbeat_seconds": 3600})
		case "/api/v1/agent-daemon/ws":
			upgrades.Add(1)
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
			defer cancel()
			_, _, _ = c.Read(ctx) // the first heartbeat
			_ = c.Close(4001, "credential revoked")
		}
	}))
	defer srv.Close()
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte("cred-REVOKED-91c2\n"), 0o600))
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "runtime", "--core", srv.URL, "--device-id", "dev-1", "--credential-file", cred,
		"--environment", "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c="+ws)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "4001")
	assert.Contains(t, stderr.String(), "credential was revoked")
	assert.Contains(t, stderr.String(), "to fix: register the device again")
	assert.NotContains(t, stderr.String(), "cred-REVOKED-91c2")
	assert.EqualValues(t, 1, boots.Load(), "a revoked credential is never retried")
	assert.EqualValues(t, 1, upgrades.Load())
}

// A credential file every user can read is refused with the command that
// fixes it; nothing is dialled.
func TestRuntimeRefusesAWorldReadableCredential(t *testing.T) {
	cred := filepath.Join(t.TempDir(), "dev-1.credential")
	require.NoError(t, os.WriteFile(cred, []byte("cred-OPEN-1\n"), 0o600))
	require.NoError(t, os.Chmod(cred, 0o644))
	var stderr bytes.Buffer
	err := runRuntime([]string{"--core", "http://127.0.0.1:1", "--device-id", "dev-1", "--credential-file", cred}, io.Discard, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "can be read by every user of this machine (mode 0644)")
	assert.Contains(t, err.Error(), "chmod 600 "+cred)
	assert.NotContains(t, err.Error()+stderr.String(), "cred-OPEN-1")
}

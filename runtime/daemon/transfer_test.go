package daemon_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/wire"
)

const (
	transferEnv  = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"
	transferSess = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
	transferID   = "6090097e-1d1d-44de-a7ac-6fda17bf4bd2"
)

// startWithState runs the daemon with a --state directory and the
// workspace of the Environment transferEnv, both returned.
func startWithState(t *testing.T, c *core) (r *running, state, ws string) {
	state, ws = t.TempDir(), t.TempDir()
	envs := daemon.NewBindings()
	require.NoError(t, envs.Add(transferEnv, ws))
	t.Cleanup(func() { _ = envs.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	r = &running{cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- daemon.Run(ctx, daemon.Config{
			CoreURL: c.srv.URL, DeviceID: "dev-1", Credential: daemon.NewCredential(secret),
			Registry: registry(t, script.Script{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Environments: envs, StateDir: state,
		})
	}()
	return r, state, ws
}

func result(t *testing.T, ws *websocket.Conn) wire.RuntimePrepareResult {
	t.Helper()
	m := read(t, ws)
	require.Equal(t, wire.TypeRuntimePrepareResult, m.Type)
	return m.Payload.(wire.RuntimePrepareResult)
}

func beginFrame(action, meta string, body []byte) string {
	sum := sha256.Sum256(body)
	return fmt.Sprintf(`{"step":"begin","environment_id":%q,"session_id":%q,"action":%q,%s,"size_bytes":%d,"sha256":%q}`,
		transferEnv, transferSess, action, meta, len(body), hex.EncodeToString(sum[:]))
}

func chunkFrame(offset int, data []byte) string {
	return fmt.Sprintf(`{"step":"chunk","offset":%d,"data":%q}`, offset, base64.StdEncoding.EncodeToString(data))
}

// TestAbandonedTransferStagingIsRemoved: a received chunk sits in the
// staging area, not the workspace; when the connection drops, its staging
// is removed and nothing was installed.
func TestAbandonedTransferStagingIsRemoved(t *testing.T) {
	c := newCore(t)
	r, state, wsDir := startWithState(t, c)
	ws := accept(t, c)
	read(t, ws) // heartbeat
	body := []byte("hello world\n")
	write(t, ws, "runtime_prepare", transferID, beginFrame("file", `"file":{"path":"/workspace/hello.txt"}`, body))
	require.Equal(t, "ready", result(t, ws).Outcome)
	write(t, ws, "runtime_prepare", transferID, chunkFrame(0, body[:6]))
	rec := result(t, ws)
	require.Equal(t, "received", rec.Outcome)
	require.EqualValues(t, 6, rec.Offset)

	staged, err := filepath.Glob(filepath.Join(state, "staging", "*", "body"))
	require.NoError(t, err)
	require.Len(t, staged, 1, "the received chunk is staged")
	got, err := os.ReadFile(staged[0])
	require.NoError(t, err)
	assert.Equal(t, "hello ", string(got))
	assert.NoFileExists(t, filepath.Join(wsDir, "hello.txt"), "a receipt confirms staging, not installation")

	require.NoError(t, ws.Close(websocket.StatusGoingAway, "bye"))
	ws2 := accept(t, c)
	read(t, ws2) // the new connection's heartbeat: the old Session is closed
	left, err := os.ReadDir(filepath.Join(state, "staging"))
	require.NoError(t, err)
	assert.Empty(t, left, "the abandoned transfer's staging is removed")
	assert.NoFileExists(t, filepath.Join(wsDir, "hello.txt"))
	_ = ws2.CloseNow()
	require.NoError(t, r.stop(t))
}

func bundle(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// TestSkillBundleIsInstalledInTheStateDirectory: a committed skill lands in
// capabilities/skills/<name>; an archive with an escaping entry writes
// nothing outside the bundle and leaves the installed skill as it was.
func TestSkillBundleIsInstalledInTheStateDirectory(t *testing.T) {
	c := newCore(t)
	r, state, _ := startWithState(t, c)
	ws := accept(t, c)
	read(t, ws)
	send := func(id string, body []byte) wire.RuntimePrepareResult {
		write(t, ws, "runtime_prepare", id, beginFrame("skill", `"skill":{"type":"inline","name":"review","description":"reviews"}`, body))
		require.Equal(t, "ready", result(t, ws).Outcome)
		write(t, ws, "runtime_prepare", id, chunkFrame(0, body))
		require.Equal(t, "received", result(t, ws).Outcome)
		write(t, ws, "runtime_prepare", id, `{"step":"commit"}`)
		return result(t, ws)
	}
	done := send(transferID, bundle(t, map[string]string{"SKILL.md": "# review"}))
	require.Equal(t, "completed", done.Outcome)
	got, err := os.ReadFile(filepath.Join(state, "capabilities", "skills", "review", "SKILL.md"))
	require.NoError(t, err)
	assert.Equal(t, "# review", string(got))

	bad := send("a37fca40-a54a-4f12-ba37-18056f26e7e2", bundle(t, map[string]string{"SKILL.md": "# evil", "../../../escape.txt": "x"}))
	assert.Equal(t, "rejected", bad.Outcome)
	assert.Equal(t, "invalid_request", bad.ErrorCode)
	got, err = os.ReadFile(filepath.Join(state, "capabilities", "skills", "review", "SKILL.md"))
	require.NoError(t, err)
	assert.Equal(t, "# review", string(got), "the refused bundle replaced nothing")
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(state), "*", "escape.txt"))
	assert.Empty(t, matches)
	assert.NoFileExists(t, filepath.Join(state, "escape.txt"))
	_ = ws.CloseNow()
	require.NoError(t, r.stop(t))
}

package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/core/envinit"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
)

// The real Runtime installs an Environment's initialization files before
// the first read of its Session on a connection; the same connection does
// not initialize again; a step the Runtime cannot apply keeps its finite
// code in the Environment's status and the read returns no data.
func TestInitializationLandsInTheRealRuntimesWorkspace(t *testing.T) {
	e := newEnv(t, true)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "taken"), 0o755))
	e.realRuntime("dev-rt", dir)
	ctx := context.Background()
	big := make([]byte, 200_000)
	for i := range big {
		big[i] = byte(i % 251)
	}
	ses := e.initSession("real", script.Kind, envinit.Spec{Env: map[string]string{"MODE": "test"}, Files: []envinit.File{
		{Path: "/workspace/notes/hello.txt", Content: []byte("hello world\n")},
		{Path: "/workspace/data.bin", Content: big},
	}})

	cat, err := e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "notes/hello.txt", MaxBytes: 1024})
	require.NoError(t, err)
	assert.Equal(t, "hello world\n", string(cat.Data))
	onDisk, err := os.ReadFile(filepath.Join(dir, "data.bin"))
	require.NoError(t, err)
	assert.Equal(t, big, onDisk, "a three-chunk file installed whole")
	st := e.initStatus("env-real")
	assert.Equal(t, "completed", st.Outcome)
	assert.Equal(t, "dev-rt", st.DeviceID)

	// Changed in the workspace since: a second read on this connection does
	// not initialize again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes", "hello.txt"), []byte("edited\n"), 0o644))
	cat, err = e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "notes/hello.txt", MaxBytes: 1024})
	require.NoError(t, err)
	assert.Equal(t, "edited\n", string(cat.Data))

	// A file over an existing directory cannot be installed.
	bad := e.initSession("bad", script.Kind, envinit.Spec{Files: []envinit.File{{Path: "/workspace/taken", Content: []byte("x")}}})
	_, err = e.gw.ReadWorkspace(ctx, bad, gateway.ReadQuery{Path: "", Directory: true, MaxEntries: 8})
	re := readErr(t, err)
	assert.Equal(t, gateway.ReadInitializationFailed, re.Code)
	assert.False(t, re.Rejected)
	st = e.initStatus("env-bad")
	assert.Contains(t, []string{"failed", "rejected"}, st.Outcome)
	assert.NotEmpty(t, st.ErrorCode, "the finite code is kept")
	assert.Equal(t, "/workspace/taken", st.Step)
	info, err := os.Stat(filepath.Join(dir, "taken"))
	require.NoError(t, err)
	assert.True(t, info.IsDir(), "nothing replaced the directory")
}

package gateway_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// realRuntime runs the Runtime daemon in this process against the
// gateway, with the script adapter and dir as its bound workspace.
func (e *env) realRuntime(device, dir string) {
	secret := e.issue(store.KindDevice, device, "")
	e.host = device
	bindings := daemon.NewBindings()
	require.NoError(e.t, bindings.Add(envUUID, dir))
	reg := harness.NewRegistry()
	require.NoError(e.t, reg.Register(script.New(script.Script{})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{
			CoreURL: e.srv.URL, DeviceID: device, Credential: daemon.NewCredential(secret.Reveal()), Registry: reg,
			Logger: slog.New(slog.NewJSONHandler(e.logs, nil)), Environments: bindings,
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		})
	}()
	e.t.Cleanup(func() {
		cancel()
		<-done
		_ = bindings.Close()
	})
	e.waitDeclared(device, true)
}

func TestReadsServedByTheRealRuntime(t *testing.T) {
	e := newEnv(t, true)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello workspace\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main\n"), 0o644))
	e.realRuntime("dev-rt", dir)
	ses := e.localSession("real", script.Kind)
	ctx := context.Background()

	ls, err := e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Directory: true, MaxEntries: 1024})
	require.NoError(t, err)
	assert.Equal(t, "preparation", ls.Target)
	assert.False(t, ls.Truncated)
	assert.Equal(t, []wire.WorkspaceDirectoryEntry{
		{Name: "README.md", Kind: wire.EntryFile, SizeBytes: size(16)},
		{Name: "src", Kind: wire.EntryDirectory},
	}, ls.Entries)

	one, err := e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Directory: true, MaxEntries: 1})
	require.NoError(t, err)
	assert.Len(t, one.Entries, 1)
	assert.True(t, one.Truncated, "a listing stopped at max_entries says so")

	cat, err := e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "src/main.go", MaxBytes: 1 << 20})
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(cat.Data))
	assert.False(t, cat.Truncated)

	part, err := e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "README.md", MaxBytes: 5})
	require.NoError(t, err)
	assert.Equal(t, "hello", string(part.Data))
	assert.True(t, part.Truncated)

	_, err = e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "nope.txt", MaxBytes: 5})
	re := readErr(t, err)
	assert.Equal(t, "not_found", re.Code)
	assert.True(t, re.Rejected)

	_, err = e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "README.md", Directory: true, MaxEntries: 5})
	assert.Equal(t, "not_directory", readErr(t, err).Code)
}

package daemon_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/workspace"
)

// workspaceSetup is the "workspace" member of a scenario's start setup:
// the bound directory the daemon serves, populated before it connects.
// Next to it lies a directory "outside" holding secret.txt, which no read
// may reach; a symlink target starting with "$outside" points into it by
// absolute path.
type workspaceSetup struct {
	Dirs     []string          `json:"dirs"`
	Files    map[string]string `json:"files"`
	Symlinks map[string]string `json:"symlinks"`
}

// scenarioWorkspace binds the workspace setup describes, or returns nil
// when setup has none (reads are then rejected read_unsupported).
func scenarioWorkspace(t *testing.T, setup string) *workspace.Workspace {
	var sel struct {
		Workspace *workspaceSetup `json:"workspace"`
	}
	if setup != "" {
		require.NoError(t, json.Unmarshal([]byte(setup), &sel), "the start directive's workspace")
	}
	if sel.Workspace == nil {
		return nil
	}
	base := t.TempDir()
	dir, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	for _, d := range sel.Workspace.Dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755))
	}
	for name, body := range sel.Workspace.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	for name, target := range sel.Workspace.Symlinks {
		if rest, ok := strings.CutPrefix(target, "$outside"); ok {
			target = outside + rest
		}
		require.NoError(t, os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))))
	}
	// Fixed times, so that an export archive is the same on every run.
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.Type()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, fixed, fixed)
	}))
	ws, err := workspace.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

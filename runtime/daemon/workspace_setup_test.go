package daemon_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/daemon"
)

// workspaceSetup is one workspace of a scenario's start setup: an
// Environment's bound directory, populated before the daemon connects.
// Next to the workspaces lies a directory "outside" holding secret.txt,
// which no read may reach; a symlink target starting with "$outside"
// points into it by absolute path.
type workspaceSetup struct {
	Dirs     []string          `json:"dirs"`
	Files    map[string]string `json:"files"`
	Symlinks map[string]string `json:"symlinks"`
}

// scenarioEnvironments binds the "environments" member of a scenario's
// start setup: an object from Environment ID to the workspace setup of its
// directory ({"8d0f…": {"files": {…}}, "5b6c…": {}}). Each Environment gets
// a directory of its own. Without the member the daemon binds none, and
// everything naming an Environment is refused.
func scenarioEnvironments(t *testing.T, setup string) *daemon.Bindings {
	var sel struct {
		Environments map[string]workspaceSetup `json:"environments"`
		// Workspace was the single bound workspace before Environments
		// were bound by ID; a transcript still using it is a mistake.
		Workspace json.RawMessage `json:"workspace"`
	}
	if setup != "" {
		require.NoError(t, json.Unmarshal([]byte(setup), &sel), "the start directive's environments")
	}
	require.Nil(t, sel.Workspace, `the start setup's "workspace" is gone: bind {"environments": {"ID": {…}}}`)
	if sel.Environments == nil {
		return nil
	}
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	ids := make([]string, 0, len(sel.Environments))
	for id := range sel.Environments {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	b := daemon.NewBindings()
	t.Cleanup(func() { _ = b.Close() })
	for n, id := range ids {
		dir := filepath.Join(base, fmt.Sprintf("ws-%d", n))
		populate(t, dir, outside, sel.Environments[id])
		require.NoError(t, b.Add(id, dir), "binding environment %s", id)
	}
	return b
}

// populate makes dir as ws describes it.
func populate(t *testing.T, dir, outside string, ws workspaceSetup) {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, d := range ws.Dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755))
	}
	for name, body := range ws.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	for name, target := range ws.Symlinks {
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
}

package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeSetup binds a workspace ws holding old.txt ("old") and sub/, next to
// a directory outside that no write may reach.
func writeSetup(t *testing.T) (*Workspace, string, string) {
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old"), 0o644))
	w, err := Open(ws)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w, ws, outside
}

func writeCode(t *testing.T, err error) string {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	return e.Outcome + "/" + e.Code + "/" + e.Reason
}

// noTemps asserts that no temporary file is left anywhere under dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		require.NoError(t, err)
		assert.False(t, strings.HasPrefix(filepath.Base(p), TempPrefix), "leftover %s", p)
		return nil
	}))
}

func readBack(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	w, ws, _ := writeSetup(t)
	require.NoError(t, w.WriteFile("new.txt", []byte("fresh")))
	assert.Equal(t, "fresh", readBack(t, filepath.Join(ws, "new.txt")))

	require.NoError(t, w.WriteFile("old.txt", []byte("replaced")))
	assert.Equal(t, "replaced", readBack(t, filepath.Join(ws, "old.txt")))

	require.NoError(t, w.WriteFile("a/b/c.txt", []byte("deep")), "missing parents are created")
	assert.Equal(t, "deep", readBack(t, filepath.Join(ws, "a", "b", "c.txt")))

	require.NoError(t, w.WriteFile("empty", nil))
	assert.Equal(t, "", readBack(t, filepath.Join(ws, "empty")))
	noTemps(t, ws)
}

func TestWriteFileRefusesPaths(t *testing.T) {
	w, ws, _ := writeSetup(t)
	for p, want := range map[string]string{
		"":             "rejected/invalid_request/",
		"../x":         "rejected/invalid_request/",
		"/etc/x":       "rejected/invalid_request/",
		"sub/../x":     "rejected/invalid_request/",
		"./x":          "rejected/invalid_request/",
		"sub":          "rejected/write_rejected/destination_directory",
		"old.txt/x":    "rejected/write_rejected/",
		"C:/x":         "rejected/invalid_request/",
		"sub/\x00.txt": "rejected/invalid_request/",
	} {
		assert.Equal(t, want, writeCode(t, w.WriteFile(p, []byte("x"))), "%q", p)
	}
	assert.Equal(t, "old", readBack(t, filepath.Join(ws, "old.txt")))
	noTemps(t, ws)
}

// A link on the way is refused whether it points out of the workspace or
// stays inside, and whether it existed when the workspace was bound or was
// made afterwards (as an agent would during a Turn); nothing lands outside.
func TestWriteFileRefusesSymlinks(t *testing.T) {
	w, ws, outside := writeSetup(t)
	// Made after Open: the workspace was bound without them.
	links := map[string]string{
		"out":      outside,
		"outabs":   filepath.Join(outside, "f.txt"),
		"inner":    "sub",
		"sub/up":   "../../outside",
		"linkfile": "old.txt",
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(ws, name)))
	}
	for _, p := range []string{"out/f.txt", "outabs", "inner/f.txt", "sub/up/f.txt", "linkfile", "sub/up/new/f.txt"} {
		assert.Equal(t, "rejected/write_rejected/unsafe_destination", writeCode(t, w.WriteFile(p, []byte("x"))), p)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside the workspace")
	assert.Equal(t, "old", readBack(t, filepath.Join(ws, "old.txt")), "the link's target is untouched")
	noTemps(t, ws)
}

// A failure after the body was written (a failed native call) leaves the
// old file intact and no temporary file behind.
func TestWriteFileFailureLeavesOldFile(t *testing.T) {
	w, ws, _ := writeSetup(t)
	testHookBeforeRename = func() error { return errors.New("injected failure") }
	t.Cleanup(func() { testHookBeforeRename = nil })
	assert.Equal(t, "rejected/write_rejected/", writeCode(t, w.WriteFile("old.txt", []byte("new body"))))
	assert.Equal(t, "old", readBack(t, filepath.Join(ws, "old.txt")))
	noTemps(t, ws)
}

// A parent replaced by a link to the outside after the installer opened
// it (between the body's write and the rename) is caught: the write is
// refused, nothing lands outside, and the temporary file is removed.
func TestWriteFileParentSwappedForSymlinkAfterOpen(t *testing.T) {
	w, ws, outside := writeSetup(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "f.txt"), []byte("old"), 0o644))
	testHookBeforeRename = func() error {
		if err := os.Rename(filepath.Join(ws, "sub"), filepath.Join(ws, "moved")); err != nil {
			return err
		}
		return os.Symlink(outside, filepath.Join(ws, "sub"))
	}
	t.Cleanup(func() { testHookBeforeRename = nil })
	assert.Equal(t, "rejected/write_rejected/unsafe_destination", writeCode(t, w.WriteFile("sub/f.txt", []byte("new"))))
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.Equal(t, "old", readBack(t, filepath.Join(ws, "moved", "f.txt")))
	noTemps(t, ws)
}

// A destination replaced by a directory after the check is refused by the
// rename itself, as destination_directory.
func TestWriteFileDestinationBecomesDirectory(t *testing.T) {
	w, ws, _ := writeSetup(t)
	testHookBeforeRename = func() error {
		if err := os.Remove(filepath.Join(ws, "old.txt")); err != nil {
			return err
		}
		return os.Mkdir(filepath.Join(ws, "old.txt"), 0o755)
	}
	t.Cleanup(func() { testHookBeforeRename = nil })
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "keep"), nil, 0o644))
	err := w.WriteFile("old.txt", []byte("new"))
	assert.Equal(t, "rejected/write_rejected/destination_directory", writeCode(t, err))
	noTemps(t, ws)
}

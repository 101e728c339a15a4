package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

// setup makes outside/secret.txt next to the workspace dir ws and opens ws.
func setup(t *testing.T) (*workspace.Workspace, string, string) {
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello world"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "b.txt"), []byte("b"), 0o644))
	w, err := workspace.Open(ws)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w, ws, outside
}

func code(t *testing.T, err error) string {
	t.Helper()
	var e *workspace.Error
	require.ErrorAs(t, err, &e)
	return e.Outcome + "/" + e.Code
}

func TestReadFile(t *testing.T) {
	w, _, _ := setup(t)
	got, err := w.ReadFile("a.txt", 100)
	require.NoError(t, err)
	assert.Equal(t, workspace.Bytes{Data: []byte("hello world")}, got)

	got, err = w.ReadFile("a.txt", 5)
	require.NoError(t, err)
	assert.Equal(t, workspace.Bytes{Data: []byte("hello"), Truncated: true}, got)

	got, err = w.ReadFile("a.txt", 11) // exactly the size: complete
	require.NoError(t, err)
	assert.False(t, got.Truncated)

	got, err = w.ReadFile("sub/b.txt", 1)
	require.NoError(t, err)
	assert.Equal(t, workspace.Bytes{Data: []byte("b")}, got)
}

func TestReadFileLargeIsBoundedAtOneMiB(t *testing.T) {
	w, ws, _ := setup(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "big"), make([]byte, wire.MaxReadBytes+10), 0o644))
	got, err := w.ReadFile("big", wire.MaxReadBytes)
	require.NoError(t, err)
	assert.Len(t, got.Data, wire.MaxReadBytes)
	assert.True(t, got.Truncated)
	_, err = w.ReadFile("big", wire.MaxReadBytes+1)
	assert.Equal(t, "rejected/invalid_request", code(t, err))
	_, err = w.ReadFile("big", 0)
	assert.Equal(t, "rejected/invalid_request", code(t, err))
}

func TestReadFileEmpty(t *testing.T) {
	w, ws, _ := setup(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "empty"), nil, 0o644))
	got, err := w.ReadFile("empty", 10)
	require.NoError(t, err)
	assert.Empty(t, got.Data)
	assert.False(t, got.Truncated)
}

func TestReadFileRefusals(t *testing.T) {
	w, _, _ := setup(t)
	for path, want := range map[string]string{
		"missing":      "rejected/not_found",
		"a.txt/x":      "rejected/not_found",
		"sub":          "rejected/invalid_request",
		"":             "rejected/invalid_request",
		"../outside":   "rejected/invalid_request",
		"sub/../a.txt": "rejected/invalid_request",
		"/etc/passwd":  "rejected/invalid_request",
		"./a.txt":      "rejected/invalid_request",
	} {
		_, err := w.ReadFile(path, 10)
		assert.Equal(t, want, code(t, err), path)
	}
}

// Every way out through a symbolic link is refused, including a link made
// inside the workspace after it was bound (as an agent would during a Turn).
func TestSymlinkEscapes(t *testing.T) {
	w, ws, outside := setup(t)
	links := map[string]string{
		"abs":      filepath.Join(outside, "secret.txt"),
		"rel":      "../outside/secret.txt",
		"dirlink":  outside,
		"sub/deep": "../../outside",
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(ws, name)))
	}
	for _, p := range []string{"abs", "rel", "dirlink/secret.txt", "sub/deep/secret.txt"} {
		got, err := w.ReadFile(p, 100)
		assert.Equal(t, "rejected/permission_denied", code(t, err), p)
		assert.Empty(t, got.Data, p)
	}
	for _, p := range []string{"dirlink", "sub/deep"} {
		_, err := w.ReadDir(p, 10)
		assert.Equal(t, "rejected/permission_denied", code(t, err), p)
	}
	// The links themselves are listed as links, never followed.
	l, err := w.ReadDir("", 100)
	require.NoError(t, err)
	kinds := map[string]string{}
	for _, e := range l.Entries {
		kinds[e.Name] = e.Kind
	}
	assert.Equal(t, wire.EntrySymlink, kinds["abs"])
	assert.Equal(t, wire.EntrySymlink, kinds["dirlink"])
}

func TestSymlinkInsideIsFollowed(t *testing.T) {
	w, ws, _ := setup(t)
	require.NoError(t, os.Symlink("sub/b.txt", filepath.Join(ws, "inner")))
	got, err := w.ReadFile("inner", 10)
	require.NoError(t, err)
	assert.Equal(t, "b", string(got.Data))
}

func TestReadDir(t *testing.T) {
	w, ws, _ := setup(t)
	l, err := w.ReadDir("", 10)
	require.NoError(t, err)
	size := func(n int64) *int64 { return &n }
	assert.Equal(t, workspace.Listing{Entries: []wire.WorkspaceDirectoryEntry{
		{Name: "a.txt", Kind: wire.EntryFile, SizeBytes: size(11)},
		{Name: "sub", Kind: wire.EntryDirectory},
	}}, l)

	l, err = w.ReadDir("", 1) // sorted, so the same prefix every time
	require.NoError(t, err)
	assert.Equal(t, workspace.Listing{Entries: []wire.WorkspaceDirectoryEntry{{Name: "a.txt", Kind: wire.EntryFile, SizeBytes: size(11)}}, Truncated: true}, l)

	l, err = w.ReadDir("", 2) // exactly as many entries as asked: complete
	require.NoError(t, err)
	assert.Len(t, l.Entries, 2)
	assert.False(t, l.Truncated)

	l, err = w.ReadDir("sub", 1)
	require.NoError(t, err)
	assert.Equal(t, workspace.Listing{Entries: []wire.WorkspaceDirectoryEntry{{Name: "b.txt", Kind: wire.EntryFile, SizeBytes: size(1)}}}, l)

	require.NoError(t, os.Mkdir(filepath.Join(ws, "empty"), 0o755))
	l, err = w.ReadDir("empty", 1)
	require.NoError(t, err)
	assert.NotNil(t, l.Entries)
	assert.Empty(t, l.Entries)
	assert.False(t, l.Truncated)
}

func TestReadDirRefusals(t *testing.T) {
	w, _, _ := setup(t)
	for path, want := range map[string]string{
		"missing":   "rejected/not_found",
		"a.txt":     "rejected/not_directory",
		"a.txt/x":   "rejected/not_directory",
		"..":        "rejected/invalid_request",
		"/":         "rejected/invalid_request",
		"sub/../..": "rejected/invalid_request",
	} {
		_, err := w.ReadDir(path, 10)
		assert.Equal(t, want, code(t, err), path)
	}
	_, err := w.ReadDir("", 0)
	assert.Equal(t, "rejected/invalid_request", code(t, err))
	_, err = w.ReadDir("", wire.MaxDirectoryEntries+1)
	assert.Equal(t, "rejected/invalid_request", code(t, err))
}

// A name the wire cannot carry is left out and the listing says so.
func TestReadDirUncarriableName(t *testing.T) {
	w, ws, _ := setup(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "bad\nname"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "bad\xffutf8"), nil, 0o644))
	l, err := w.ReadDir("", 100)
	require.NoError(t, err)
	assert.True(t, l.Truncated)
	for _, e := range l.Entries {
		assert.NoError(t, wire.CheckEntryName(e.Name))
		assert.False(t, strings.HasPrefix(e.Name, "bad"))
	}
	ok := true
	d := wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Directory: &wire.WorkspaceDirectory{Entries: l.Entries, Truncated: &ok}}
	assert.NoError(t, d.Validate())
}

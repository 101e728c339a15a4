package transfer

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func code(t *testing.T, err error) string {
	t.Helper()
	var te *Error
	require.True(t, errors.As(err, &te), "want a *transfer.Error, got %v", err)
	return te.Outcome + " " + te.Code
}

func newArea(t *testing.T) *Area {
	a, err := NewArea(t.TempDir())
	require.NoError(t, err)
	return a
}

func TestStagedWriteChecksOffsetAndSize(t *testing.T) {
	s := newArea(t).NewStaged()
	defer s.Discard()
	require.NoError(t, s.Write(0, []byte("hello "), 11))
	assert.Equal(t, "rejected invalid_request", code(t, s.Write(0, []byte("again"), 11)), "a chunk at an old offset")
	assert.Equal(t, "rejected invalid_request", code(t, s.Write(7, []byte("x"), 11)), "a chunk past the staged bytes")
	assert.Equal(t, "rejected invalid_request", code(t, s.Write(6, []byte("world!"), 11)), "a chunk past the declared size")
	assert.Equal(t, int64(6), s.Size(), "a refused chunk stages nothing")
	require.NoError(t, s.Write(6, []byte("world"), 11))
	require.NoError(t, s.Verify(11, digest([]byte("hello world"))))
	assert.Equal(t, "rejected invalid_request", code(t, s.Verify(11, digest([]byte("hello there")))), "a digest mismatch")
	assert.Equal(t, "rejected invalid_request", code(t, s.Verify(12, digest([]byte("hello world")))), "a short body")
}

// TestStagedHashesBehindTheWritesInOrder: Stage returns once a chunk is
// written; the digest Verify checks is still that of every chunk in order,
// and each accepted chunk is handed back exactly once, hashed or (after
// Discard) dropped; a refused one never.
func TestStagedHashesBehindTheWritesInOrder(t *testing.T) {
	a := newArea(t)
	var body []byte
	var mu sync.Mutex
	back := map[byte]int{}
	done := func(d []byte) {
		mu.Lock()
		back[d[0]]++
		mu.Unlock()
	}
	s := a.NewStaged()
	for i := range 200 {
		c := bytes.Repeat([]byte{byte(i)}, 1000+i)
		require.NoError(t, s.Stage(int64(len(body)), c, 1<<20, done))
		body = append(body, c...)
	}
	require.Error(t, s.Stage(0, []byte{250}, 1<<20, done), "an old offset is refused")
	require.NoError(t, s.Verify(int64(len(body)), digest(body)))
	require.NoError(t, s.Discard())
	for i := range 200 {
		assert.Equal(t, 1, back[byte(i)], "chunk %d handed back once", i)
	}
	assert.Zero(t, back[250], "a refused chunk is not handed back")

	var dropped atomic.Int32
	d := a.NewStaged()
	for i := range 50 {
		require.NoError(t, d.Stage(int64(i*10), make([]byte, 10), 1<<20, func([]byte) { dropped.Add(1) }))
	}
	require.NoError(t, d.Discard())
	assert.EqualValues(t, 50, dropped.Load(), "every discarded chunk is handed back, by Discard's return")
}

func TestStagedDiscardRemovesTheStaging(t *testing.T) {
	a := newArea(t)
	s := a.NewStaged()
	require.NoError(t, s.Write(0, []byte("abc"), 3))
	require.NoError(t, s.Discard())
	require.NoError(t, s.Discard(), "discard is idempotent")
	entries, err := os.ReadDir(filepath.Join(a.Dir(), "staging"))
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.Error(t, s.Write(3, []byte("d"), 4), "a discarded staging takes no chunk")
}

func TestNewAreaClearsLeftoverStaging(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, "staging", "old")
	require.NoError(t, os.MkdirAll(left, 0o700))
	_, err := NewArea(dir)
	require.NoError(t, err)
	assert.NoDirExists(t, left)
}

func TestNewAreaTemporaryIsRemovedOnClose(t *testing.T) {
	a, err := NewArea("")
	require.NoError(t, err)
	require.DirExists(t, a.Dir())
	require.NoError(t, a.Close())
	assert.NoDirExists(t, a.Dir())
}

func TestInstallFileIsConfinedAndAtomic(t *testing.T) {
	a := newArea(t)
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "dir"), 0o755))
	require.NoError(t, os.Symlink(base, filepath.Join(ws, "out")))
	root, err := os.OpenRoot(ws)
	require.NoError(t, err)
	defer root.Close()

	s := a.NewStaged()
	require.NoError(t, s.Write(0, []byte("body"), 4))
	require.NoError(t, InstallFile(root, "notes/a.txt", s))
	got, err := os.ReadFile(filepath.Join(ws, "notes", "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "body", string(got))

	assert.Equal(t, "rejected runtime_preparation_rejected", code(t, InstallFile(root, "out/escape.txt", s)), "a link out of the workspace")
	assert.NoFileExists(t, filepath.Join(base, "escape.txt"))
	assert.Equal(t, "failed runtime_preparation_failed", code(t, InstallFile(root, "dir", s)), "a directory is not replaced")

	entries, err := os.ReadDir(filepath.Join(ws, "notes"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

func TestWorkspacePath(t *testing.T) {
	rel, err := WorkspacePath("/workspace/a/b.txt")
	require.NoError(t, err)
	assert.Equal(t, "a/b.txt", rel)
	for _, bad := range []string{"/workspace", "/etc/passwd", "/workspace/../x", "workspace/a"} {
		_, err := WorkspacePath(bad)
		assert.Equal(t, "rejected invalid_request", code(t, err), bad)
	}
}

type entry struct {
	name, link string
	typ        byte
	body       string
}

func archive(t *testing.T, gz bool, entries ...entry) []byte {
	var buf bytes.Buffer
	var w *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = tar.NewWriter(zw)
	} else {
		w = tar.NewWriter(&buf)
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		require.NoError(t, w.WriteHeader(h))
		if e.typ == tar.TypeReg {
			_, err := w.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, w.Close())
	if zw != nil {
		require.NoError(t, zw.Close())
	}
	return buf.Bytes()
}

func TestExtractAcceptsFilesAndDirectories(t *testing.T) {
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		b := archive(t, gz, entry{name: "skill/", typ: tar.TypeDir}, entry{name: "skill/SKILL.md", typ: tar.TypeReg, body: "# skill"},
			entry{name: "./skill/scripts/run.sh", typ: tar.TypeReg, body: "echo"})
		require.NoError(t, Extract(bytes.NewReader(b), dir))
		got, err := os.ReadFile(filepath.Join(dir, "skill", "SKILL.md"))
		require.NoError(t, err)
		assert.Equal(t, "# skill", string(got))
		assert.FileExists(t, filepath.Join(dir, "skill", "scripts", "run.sh"))
	}
}

func TestExtractRefusesEscapesLinksAndDevices(t *testing.T) {
	cases := map[string]entry{
		"dot-dot":       {name: "../evil", typ: tar.TypeReg, body: "x"},
		"inner dot-dot": {name: "a/../../evil", typ: tar.TypeReg, body: "x"},
		"absolute":      {name: "/etc/evil", typ: tar.TypeReg, body: "x"},
		"backslash":     {name: "a\\..\\evil", typ: tar.TypeReg, body: "x"},
		"symlink":       {name: "link", link: "/etc", typ: tar.TypeSymlink},
		"relative link": {name: "link", link: "../../", typ: tar.TypeSymlink},
		"hard link":     {name: "hard", link: "/etc/passwd", typ: tar.TypeLink},
		"device":        {name: "dev", typ: tar.TypeChar},
		"fifo":          {name: "fifo", typ: tar.TypeFifo},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "tree")
			require.NoError(t, os.Mkdir(dir, 0o700))
			err := Extract(bytes.NewReader(archive(t, false, e)), dir)
			assert.Equal(t, "rejected invalid_request", code(t, err))
			assert.NoFileExists(t, filepath.Join(base, "evil"))
			entries, _ := os.ReadDir(dir)
			assert.Empty(t, entries, "nothing of a refused entry is written")
		})
	}
}

func TestExtractRefusesDuplicatesGarbageAndBombs(t *testing.T) {
	dir := t.TempDir()
	dup := archive(t, false, entry{name: "a", typ: tar.TypeReg, body: "1"}, entry{name: "a", typ: tar.TypeReg, body: "2"})
	assert.Equal(t, "rejected invalid_request", code(t, Extract(bytes.NewReader(dup), dir)), "a repeated name")
	assert.Equal(t, "rejected invalid_request", code(t, Extract(bytes.NewReader([]byte("not a tar archive at all, just bytes")), t.TempDir())))
	assert.Equal(t, "rejected invalid_request", code(t, Extract(bytes.NewReader(archive(t, false)), t.TempDir())), "an empty archive")

	// A header that declares more than the expansion bound is refused
	// before any byte of it is read.
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	require.NoError(t, w.WriteHeader(&tar.Header{Name: "big", Typeflag: tar.TypeReg, Mode: 0o644, Size: MaxExtractedBytes + 1}))
	assert.Equal(t, "rejected invalid_request", code(t, Extract(bytes.NewReader(buf.Bytes()), t.TempDir())))
}

func TestInstallBundleReplacesAndKeepsOldOnRefusal(t *testing.T) {
	a := newArea(t)
	stage := func(b []byte) *Staged {
		s := a.NewStaged()
		require.NoError(t, s.Write(0, b, int64(len(b))))
		t.Cleanup(func() { _ = s.Discard() })
		return s
	}
	require.NoError(t, a.InstallBundle(KindSkill, "review", stage(archive(t, true, entry{name: "SKILL.md", typ: tar.TypeReg, body: "v1"}))))
	require.NoError(t, a.InstallBundle(KindSkill, "review", stage(archive(t, true, entry{name: "SKILL.md", typ: tar.TypeReg, body: "v2"}))))
	got, err := os.ReadFile(filepath.Join(a.Capabilities(), "skills", "review", "SKILL.md"))
	require.NoError(t, err)
	assert.Equal(t, "v2", string(got))

	bad := stage(archive(t, false, entry{name: "ok.md", typ: tar.TypeReg, body: "x"}, entry{name: "../../escape", typ: tar.TypeReg, body: "x"}))
	assert.Equal(t, "rejected invalid_request", code(t, a.InstallBundle(KindSkill, "review", bad)))
	got, err = os.ReadFile(filepath.Join(a.Capabilities(), "skills", "review", "SKILL.md"))
	require.NoError(t, err)
	assert.Equal(t, "v2", string(got), "a refused bundle leaves the installed one")

	for _, name := range []string{"..", ".hidden", "a/b", ""} {
		assert.Equal(t, "rejected invalid_request", code(t, a.InstallBundle(KindPlugin, name, bad)), name)
	}
}

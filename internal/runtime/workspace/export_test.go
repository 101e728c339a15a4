package workspace

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// untar lists an archive as name → content ("-> target" for a link, "dir"
// for a directory).
func untar(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		switch h.Typeflag {
		case tar.TypeDir:
			out[h.Name] = "dir"
		case tar.TypeSymlink:
			out[h.Name] = "-> " + h.Linkname
		default:
			body, err := io.ReadAll(tr)
			require.NoError(t, err)
			out[h.Name] = string(body)
		}
		assert.Zero(t, h.Uid, h.Name)
		assert.Empty(t, h.Uname, h.Name)
	}
}

func TestExportOutputs(t *testing.T) {
	w, ws, outside := writeSetup(t)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "outputs", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "outputs", "report.txt"), []byte("report"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "outputs", "sub", "b.txt"), []byte("b"), 0o644))
	// Relative links inside outputs are archived as links, never
	// followed; names that USTAR cannot hold go out as PAX.
	require.NoError(t, os.Symlink("../report.txt", filepath.Join(ws, "outputs", "sub", "report")))
	long := strings.Repeat("deep/", 30) + "résumé.txt"
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "outputs", filepath.Dir(long)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "outputs", long), []byte("cv"), 0o644))

	var buf bytes.Buffer
	require.NoError(t, w.ExportOutputs(context.Background(), &buf))
	got := untar(t, buf.Bytes())
	assert.Equal(t, "-> ../report.txt", got["outputs/sub/report"])
	assert.Equal(t, "report", got["outputs/report.txt"])
	assert.Equal(t, "b", got["outputs/sub/b.txt"])
	assert.Equal(t, "cv", got["outputs/"+long], "a long non-ASCII path is exported whole")

	// A link to an absolute path or out of outputs fails the export,
	// named; the target is never read.
	for name, target := range map[string]string{"leak": filepath.Join(outside, "secret.txt"), "sub/up": "../../outside"} {
		link := filepath.Join(ws, "outputs", name)
		require.NoError(t, os.Symlink(target, link))
		var out bytes.Buffer
		err := w.ExportOutputs(context.Background(), &out)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "outputs/"+name)
		assert.NotContains(t, out.String(), "secret\x00", "the link's target is never read")
		require.NoError(t, os.Remove(link))
	}

	// Adding and removing the links changed the directories' times, which
	// the archive carries: compare two exports of the tree as it is now.
	var first, again bytes.Buffer
	require.NoError(t, w.ExportOutputs(context.Background(), &first))
	require.NoError(t, w.ExportOutputs(context.Background(), &again))
	assert.Equal(t, first.Bytes(), again.Bytes(), "the same tree gives the same archive")
	assert.Equal(t, got, untar(t, first.Bytes()), "and the same entries as before the links came and went")
}

func TestExportOutputsMissingIsEmpty(t *testing.T) {
	w, _, _ := writeSetup(t)
	var buf bytes.Buffer
	require.NoError(t, w.ExportOutputs(context.Background(), &buf))
	assert.Empty(t, untar(t, buf.Bytes()))
	assert.Equal(t, 1024, buf.Len(), "just the end-of-archive blocks")
}

// An outputs directory that is a link (in or out of the workspace) is not
// followed: the export fails.
func TestExportOutputsLinkedRootFails(t *testing.T) {
	w, ws, outside := writeSetup(t)
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "outputs")))
	var buf bytes.Buffer
	assert.ErrorContains(t, w.ExportOutputs(context.Background(), &buf), "not a directory")
}

func TestExportOutputsBoundsAndCancel(t *testing.T) {
	w, ws, _ := writeSetup(t)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "outputs"), 0o755))
	for i := range ExportMaxEntries {
		require.NoError(t, os.WriteFile(filepath.Join(ws, "outputs", "f"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676))), nil, 0o644))
	}
	assert.ErrorContains(t, w.ExportOutputs(context.Background(), io.Discard), "more than 4096 entries")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, w.ExportOutputs(ctx, io.Discard), context.Canceled)
}

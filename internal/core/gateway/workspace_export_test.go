package gateway_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
)

func TestExportThroughTheRealRuntime(t *testing.T) {
	e := newEnv(t, true)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "outputs", "deep"), 0o755))
	big := bytes.Repeat([]byte("report "), 30<<10) // over three 64 KiB chunks
	require.NoError(t, os.WriteFile(filepath.Join(dir, "outputs", "deep", "report.txt"), big, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not exported"), 0o644))
	e.realRuntime("dev-rt", dir)
	ses := e.localSession("real", script.Kind)

	d, err := e.gw.ExportWorkspace(context.Background(), ses)
	require.NoError(t, err)
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(d.Data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = b
	}
	assert.Equal(t, big, files["outputs/deep/report.txt"])
	assert.NotContains(t, files, "notes.txt")

	// The Session's reservation was dropped: a read runs after it.
	_, err = e.gw.ReadWorkspace(context.Background(), ses, gateway.ReadQuery{Path: "notes.txt", MaxBytes: 64})
	require.NoError(t, err)
}

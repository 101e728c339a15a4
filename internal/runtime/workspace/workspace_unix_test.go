//go:build unix

package workspace_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

// A FIFO is listed as "other" and a byte read of it is refused without
// blocking on the open.
func TestFIFO(t *testing.T) {
	w, ws, _ := setup(t)
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	_, err := w.ReadFile("fifo", 10)
	assert.Equal(t, "rejected/read_unsupported", code(t, err))
	l, err := w.ReadDir("", 10)
	require.NoError(t, err)
	kinds := map[string]string{}
	for _, e := range l.Entries {
		kinds[e.Name] = e.Kind
		if e.Kind != wire.EntryFile {
			assert.Nil(t, e.SizeBytes, e.Name)
		}
	}
	assert.Equal(t, wire.EntryOther, kinds["fifo"])
}

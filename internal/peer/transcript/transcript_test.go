package transcript_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/transcript"
	"github.com/agentwire/agentwire/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func loadTables(t *testing.T) []*fsm.Table {
	t.Helper()
	model, err := spec.LoadDir(os.DirFS("../../../spec"), ".", "spec/")
	require.NoError(t, err)
	var out []*fsm.Table
	for _, m := range model.Machines {
		tb, err := m.Table()
		require.NoError(t, err)
		out = append(out, tb)
	}
	return out
}

// TestDriverScenarios runs every transcript under spec/scenarios/driver
// with both roles' real drivers, over the in-memory pipe and over a real
// WebSocket on loopback. Rewrite the expected outputs with
// `go test ./internal/peer/transcript -run TestDriverScenarios/pipe -rewrite`.
func TestDriverScenarios(t *testing.T) {
	tables := loadTables(t)
	files, err := filepath.Glob("../../../spec/scenarios/driver/*.txt")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, tr := range []transcript.Transport{transcript.TransportPipe, transcript.TransportWebSocket} {
		t.Run(string(tr), func(t *testing.T) {
			for _, f := range files {
				t.Run(filepath.Base(f), func(t *testing.T) {
					transcript.Run(t, f, transcript.Options{
						Transport: tr,
						Tables:    tables,
						Router:    peer.MustCatalogRouter(tables),
					})
				})
			}
		})
	}
}

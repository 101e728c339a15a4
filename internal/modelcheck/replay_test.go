package modelcheck

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

// replay runs a rendered scenario with peer/scenario over the same tables.
func replay(t *testing.T, m *spec.Model, machines []string, sc string) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range machines {
		want[n] = true
	}
	var tables []*fsm.Table
	for _, mc := range m.Machines {
		if want[mc.Name] {
			tb, err := mc.Table()
			require.NoError(t, err)
			tables = append(tables, tb)
		}
	}
	path := filepath.Join(t.TempDir(), "counterexample.txt")
	require.NoError(t, os.WriteFile(path, []byte(sc), 0o644))
	transcript.Run(t, path, transcript.Options{Transport: transcript.TransportPipe, Tables: tables, Router: peer.MustCatalogRouter(tables), NewApp: ReplayApp})
}

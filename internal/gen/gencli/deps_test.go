package gencli_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratorNeedsNothingGenerated keeps the generator's command free of
// the packages it generates into (wire) and of the peers: if it imported
// them, a spec change that breaks the committed generated code would also
// break the one command that can regenerate it.
func TestGeneratorNeedsNothingGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/agentwire/agentwire/cmd/agentwire-gen").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/wire", "/peer", "/core", "/runtime", "/fsm/"} {
			require.NotContains(t, dep, "github.com/agentwire/agentwire"+banned, "agentwire-gen depends on %s", dep)
		}
	}
}

// TestPeersDoNotLinkTheRenderer keeps Graphviz (WebAssembly, compiled when
// a process starts) out of the agentwire command, so Core, the Runtime and
// every CLI call do not pay for it: only agentwire-gen links it.
func TestPeersDoNotLinkTheRenderer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for pkg, want := range map[string]bool{
		"github.com/agentwire/agentwire/cmd/agentwire":     false,
		"github.com/agentwire/agentwire/cmd/agentwire-gen": true,
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, string(out))
		linked := strings.Contains(string(out), "github.com/goccy/go-graphviz")
		require.Equal(t, want, linked, "%s links go-graphviz: %v", pkg, linked)
	}
}

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

package gencli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleOfReadsGoMod: the registry imports machine packages under the
// module the files land in, read from the root's go.mod.
func TestModuleOfReadsGoMod(t *testing.T) {
	dir := t.TempDir()
	require.Empty(t, moduleOf(dir), "no go.mod: agentwire's own module")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("// a team's protocol\nmodule  example.com/team/wire \n\ngo 1.25\n"), 0o644))
	require.Equal(t, "example.com/team/wire", moduleOf(dir))
}

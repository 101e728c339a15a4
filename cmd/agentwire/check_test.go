package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckRealSpec(t *testing.T) {
	out, _, err := runCmd("check", "--spec", "../../spec", "--depth", "5")
	require.NoError(t, err)
	assert.Contains(t, out, "machines: input, preparation, run")
	assert.Contains(t, out, "no invariant violated")
}

// A copy of the spec with the read-only start accepted again: check fails,
// prints the trace and writes the diagram and the replayable scenario.
func TestCheckWritesCounterexamples(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spec")
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../spec")))
	p := filepath.Join(dir, "preparation.yaml")
	src, err := os.ReadFile(p)
	require.NoError(t, err)
	old := `    reject: "read_only_preparation: a read-only handle can never be started"`
	require.Equal(t, 1, strings.Count(string(src), old))
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(src), old, "    to: ready\n    effects: [\"runtime: send preparation_status\"]", 1)), 0o644))
	outDir := filepath.Join(t.TempDir(), "cx")
	out, _, err := runCmd("check", "--spec", dir, "--depth", "7", "--faults", "0", "--invariants", "rejected_start_starts_nothing", "--out", outDir)
	require.Error(t, err)
	assert.Contains(t, out, "VIOLATED rejected_start_starts_nothing")
	mmd, err := os.ReadFile(filepath.Join(outDir, "rejected_start_starts_nothing.mmd"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(mmd), "sequenceDiagram"))
	sc, err := os.ReadFile(filepath.Join(outDir, "rejected_start_starts_nothing.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(sc), "send from=core type=execution_start id=prepare-1")
}

func TestCheckUsage(t *testing.T) {
	_, stderr, err := runCmd("check", "--bound", "huge")
	require.True(t, errors.Is(err, errUsage))
	assert.Contains(t, stderr, "--bound must be ci or long")
	_, _, err = runCmd("check", "--spec", "../../spec", "--machines", "nope", "--depth", "1")
	require.ErrorContains(t, err, `no machine "nope"`)
}

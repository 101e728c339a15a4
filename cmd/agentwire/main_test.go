package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

const doorSpec = "../../internal/gen/testdata/basic/spec"

func runCmd(args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = run(args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestDiagram(t *testing.T) {
	for format, want := range map[string]string{"mermaid": "stateDiagram-v2", "dot": "digraph"} {
		out, _, err := runCmd("diagram", "door", "--format", format, "--spec", doorSpec)
		require.NoError(t, err, format)
		require.Contains(t, out, want, format)
		require.Contains(t, out, "locked", format)
	}
	// SVG needs the renderer, which only the generator's command links.
	_, _, err := runCmd("diagram", "door", "--format", "svg", "--spec", doorSpec)
	require.ErrorContains(t, err, "go run ./cmd/agentwire-gen diagram door --format svg")
	_, _, err = runCmd("generate")
	require.ErrorContains(t, err, "go run ./cmd/agentwire-gen generate")
	_, _, err = runCmd("diagram", "nope", "--spec", doorSpec)
	require.ErrorContains(t, err, `no machine "nope"`)
	_, stderr, err := runCmd("diagram", "door", "--format", "png", "--spec", doorSpec)
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, stderr, `unknown --format "png"`)
	_, _, err = runCmd("diagram")
	require.ErrorIs(t, err, errUsage)
}

func TestUsage(t *testing.T) {
	_, stderr, err := runCmd()
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, stderr, "usage: agentwire")
	_, stderr, err = runCmd("frobnicate")
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, stderr, `unknown command "frobnicate"`)
}

func TestTimeScaleIsTestOnly(t *testing.T) {
	t.Setenv("AGENTWIRE_ALLOW_TIME_SCALE", "")
	_, err := timeScaleClock(60)
	require.Error(t, err)
	require.Contains(t, err.Error(), "AGENTWIRE_ALLOW_TIME_SCALE=1")
	c, err := timeScaleClock(1)
	require.NoError(t, err)
	require.NotNil(t, c)
	t.Setenv("AGENTWIRE_ALLOW_TIME_SCALE", "1")
	c, err = timeScaleClock(60)
	require.NoError(t, err)
	start := c.Now()
	require.False(t, c.Now().Before(start))
	_, err = timeScaleClock(-1)
	require.Error(t, err)
}

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReportListsEachScenarioOnceWithBothSides(t *testing.T) {
	const core, runtime = "github.com/agentwire/agentwire/internal/core/server", "github.com/agentwire/agentwire/runtime/daemon"
	line := func(pkg, action, test, output string) string {
		return `{"Action":"` + action + `","Package":"` + pkg + `","Test":"` + test + `","Output":"` + output + `"}`
	}
	in := strings.Join([]string{
		line(core, "pass", "TestWireScenarios/a.txt", ""),
		line(runtime, "pass", "TestWireScenarios/a.txt", ""),
		line(core, "pass", "TestWireScenarios/b.txt", ""),
		line(runtime, "output", "TestWireScenarios/b.txt", "the daemon sent done twice\\n"),
		line(runtime, "fail", "TestWireScenarios/b.txt", ""),
		line(core, "pass", "TestWireScenarios/c.txt", ""),
		"not JSON: a build error",
	}, "\n")
	var out strings.Builder
	ok, err := report(strings.NewReader(in), &out)
	require.NoError(t, err)
	assert.False(t, ok)
	text := out.String()
	assert.Regexp(t, `a\.txt\s+pass\s+pass`, text)
	assert.Regexp(t, `b\.txt\s+pass\s+fail`, text)
	assert.Regexp(t, `c\.txt\s+pass\s+not run`, text)
	assert.Contains(t, text, "the daemon sent done twice")
	assert.Contains(t, text, "c.txt: the runtime side did not run it")

	out.Reset()
	ok, err = report(strings.NewReader(line(core, "pass", "TestWireScenarios/a.txt", "")+"\n"+line(runtime, "pass", "TestWireScenarios/a.txt", "")), &out)
	require.NoError(t, err)
	assert.True(t, ok, out.String())

	ok, err = report(strings.NewReader(""), &out)
	require.NoError(t, err)
	assert.False(t, ok, "no scenario at all is a failure")
}

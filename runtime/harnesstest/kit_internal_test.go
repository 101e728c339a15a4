package harnesstest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A scenario whose subtest skips did not run: the kit records it failed,
// and Run would fail the test for it, rather than count the skip passed.
func TestRunCountsASkippedScenarioFailed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	k := daemonKit(t)
	k.run(t, "harness", "runs", "streaming", func(t *testing.T) {})
	k.run(t, "harness", "skips", "thinking", func(t *testing.T) { t.Skip("the hook cannot arrange this scenario") })
	k.run(t, "harness", "skips/later", "usage", func(t *testing.T) {
		assert.True(t, true)
		t.SkipNow()
	})

	got := map[string]Outcome{}
	for _, o := range k.report.Scenarios {
		got[o.Name] = o
	}
	require.Len(t, got, 3)
	assert.True(t, got["runs"].Passed, "a scenario that ran and did not fail passes")
	assert.Empty(t, got["runs"].Note)
	for _, name := range []string{"skips", "skips/later"} {
		assert.False(t, got[name].Passed, "%s: a skipped scenario is not a passed one", name)
		assert.Contains(t, got[name].Note, "skipped", name)
	}
	assert.Equal(t, 1, k.report.Passed())
	assert.Contains(t, k.report.String(), "FAIL  harness skips ")
}

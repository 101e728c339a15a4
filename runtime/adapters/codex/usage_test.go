package codex

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

func bd(in, cached, out, reasoning int64) tokenBreakdown {
	return tokenBreakdown{InputTokens: in, CachedInputTokens: cached, OutputTokens: out, ReasoningOutputTokens: reasoning, TotalTokens: in + out}
}

func tokens(t *testing.T, u wire.Usage) [5]int64 {
	t.Helper()
	require.NotNil(t, u.Tokens)
	k := u.Tokens
	return [5]int64{*k.InputTokens, *k.CachedInputTokens, *k.OutputTokens, *k.ReasoningOutputTokens, *k.TotalTokens}
}

// A fresh thread: the first Run's baseline is zero, its snapshots are the
// thread totals; the second Run's baseline is the total the first one
// ended with.
func TestUsageSnapshotsArePerRun(t *testing.T) {
	zero := tokenBreakdown{}
	m := newUsageMeter(&zero, "gpt-5.5", "agentwire")
	u, ok := m.snapshot(threadUsage{Total: bd(120, 20, 30, 8), Last: bd(120, 20, 30, 8)})
	require.True(t, ok)
	assert.Equal(t, [5]int64{120, 20, 30, 8, 150}, tokens(t, u))
	assert.Equal(t, "gpt-5.5", u.Model)
	assert.Equal(t, "agentwire", u.Provider)
	u, ok = m.snapshot(threadUsage{Total: bd(240, 40, 60, 16), Last: bd(120, 20, 30, 8)})
	require.True(t, ok)
	assert.Equal(t, [5]int64{240, 40, 60, 16, 300}, tokens(t, u), "cumulative within the Run, not added")

	end := bd(240, 40, 60, 16)
	m2 := newUsageMeter(&end, "gpt-5.5", "agentwire")
	u, ok = m2.snapshot(threadUsage{Total: bd(360, 60, 90, 24), Last: bd(120, 20, 30, 8)})
	require.True(t, ok)
	assert.Equal(t, [5]int64{120, 20, 30, 8, 150}, tokens(t, u), "the thread total minus the total at the Run's start")
}

// A resumed thread in a new process: the total before the Run is unknown
// until the first update, whose own call is subtracted (360 = 240 + 120,
// the measured resume).
func TestUsageBaselineOfAResumedThread(t *testing.T) {
	m := newUsageMeter(nil, "m", "p")
	u, ok := m.snapshot(threadUsage{Total: bd(360, 60, 90, 24), Last: bd(120, 20, 30, 8)})
	require.True(t, ok)
	assert.Equal(t, [5]int64{120, 20, 30, 8, 150}, tokens(t, u))
	u, ok = m.snapshot(threadUsage{Total: bd(480, 80, 120, 32), Last: bd(120, 20, 30, 8)})
	require.True(t, ok)
	assert.Equal(t, [5]int64{240, 40, 60, 16, 300}, tokens(t, u))
}

// Totals that fall below the baseline leave the usage unknown.
func TestUsageInconsistentTotalsAreUnknown(t *testing.T) {
	base := bd(500, 0, 100, 0)
	m := newUsageMeter(&base, "m", "p")
	_, ok := m.snapshot(threadUsage{Total: bd(120, 20, 30, 8), Last: bd(120, 20, 30, 8)})
	assert.False(t, ok)
}

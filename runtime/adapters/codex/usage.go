package codex

import "github.com/agentwire/agentwire/wire"

// Usage. Codex reports thread/tokenUsage/updated after each model call with
// two breakdowns: last (that call) and total (the thread's, across every
// turn and across resume: measured, 360 = 240 earlier + 120 now). A usage
// frame is the cumulative measurement of the current execution and
// replaces the previous one (daemon-protocol.txt:89), so a Run's snapshot
// is the thread total minus the thread total at the Run's start.

// tokenBreakdown is Codex's TokenUsageBreakdown.
type tokenBreakdown struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
}

func (a tokenBreakdown) minus(b tokenBreakdown) tokenBreakdown {
	return tokenBreakdown{
		InputTokens:           a.InputTokens - b.InputTokens,
		CachedInputTokens:     a.CachedInputTokens - b.CachedInputTokens,
		OutputTokens:          a.OutputTokens - b.OutputTokens,
		ReasoningOutputTokens: a.ReasoningOutputTokens - b.ReasoningOutputTokens,
		TotalTokens:           a.TotalTokens - b.TotalTokens,
	}
}

func (a tokenBreakdown) negative() bool {
	return a.InputTokens < 0 || a.CachedInputTokens < 0 || a.OutputTokens < 0 || a.ReasoningOutputTokens < 0 || a.TotalTokens < 0
}

// threadUsage is the tokenUsage member of thread/tokenUsage/updated.
type threadUsage struct {
	Total tokenBreakdown `json:"total"`
	Last  tokenBreakdown `json:"last"`
}

// usageMeter turns thread totals into one Run's snapshots.
type usageMeter struct {
	base      tokenBreakdown
	baseKnown bool
	model     string
	provider  string
}

// newUsageMeter starts a Run's meter. threadTotal is the thread's total
// when the Run starts, if the Executor has seen one.
//
// decision: a thread resumed by a new process has reported no total yet;
// its first update's total minus that update's own call (last) is the
// total before the Run, since that update is the Run's first model call.
func newUsageMeter(threadTotal *tokenBreakdown, model, provider string) *usageMeter {
	m := &usageMeter{model: model, provider: provider}
	if threadTotal != nil {
		m.base, m.baseKnown = *threadTotal, true
	}
	return m
}

// snapshot is the Run's cumulative usage after u; ok is false when the
// totals do not add up (a total below the baseline), which leaves the
// usage unknown rather than wrong (daemon-protocol.txt:89: an absent
// measurement is unknown, not zero).
func (m *usageMeter) snapshot(u threadUsage) (wire.Usage, bool) {
	if !m.baseKnown {
		m.base, m.baseKnown = u.Total.minus(u.Last), true
	}
	d := u.Total.minus(m.base)
	if d.negative() || m.base.negative() {
		return wire.Usage{}, false
	}
	return wire.Usage{
		Tokens:   wire.NewTokenUsage(d.InputTokens, d.CachedInputTokens, d.OutputTokens, d.ReasoningOutputTokens, d.TotalTokens),
		Model:    m.model,
		Provider: m.provider,
	}, true
}

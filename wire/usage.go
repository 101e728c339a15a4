package wire

import "math"

// Usage is the cumulative usage snapshot of the current execution, sent as
// a usage frame and again as Done.Usage. Every snapshot replaces the one
// before it: snapshots are never added together (see Replace).
//
// An absent measurement is unknown, not zero. Every measurement is
// therefore a pointer (nil = unknown) and is omitted from the wire when
// nil, so an explicit 0 survives a round trip as a measured zero.
//
// The payload is flat, as in the reference: the usage frame's payload is
// this object itself, not an object wrapping it.
type Usage struct {
	// Tokens is the detailed token breakdown. When present, every one of
	// its members must be present: a partial breakdown cannot be told apart
	// from a broken one.
	Tokens   *TokenUsage `json:"tokens,omitempty"`
	Provider string      `json:"provider,omitempty"`
	Model    string      `json:"model,omitempty"`
	// InputTokens and OutputTokens are the coarse counts some Harnesses
	// report instead of a breakdown (32-bit on the wire, as in the reference).
	InputTokens  *int32   `json:"input_tokens,omitempty"`
	OutputTokens *int32   `json:"output_tokens,omitempty"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	// Raw is the Harness's native usage object, passed through unread.
	Raw NativeJSON `json:"raw,omitempty"`
}

// TokenUsage is the token breakdown of a Usage snapshot. The members are
// pointers only so that a decoded object missing one of them is rejected
// instead of read as zero; a valid TokenUsage has all five. Build one with
// NewTokenUsage.
type TokenUsage struct {
	InputTokens           *int64 `json:"input_tokens"`
	CachedInputTokens     *int64 `json:"cached_input_tokens"`
	OutputTokens          *int64 `json:"output_tokens"`
	ReasoningOutputTokens *int64 `json:"reasoning_output_tokens"`
	TotalTokens           *int64 `json:"total_tokens"`
}

// NewTokenUsage returns a complete token breakdown.
func NewTokenUsage(input, cachedInput, output, reasoningOutput, total int64) *TokenUsage {
	return &TokenUsage{
		InputTokens:           &input,
		CachedInputTokens:     &cachedInput,
		OutputTokens:          &output,
		ReasoningOutputTokens: &reasoningOutput,
		TotalTokens:           &total,
	}
}

// Replace returns the snapshot that holds after u arrives when prev was
// the current one: u itself, copied so it shares no memory with either.
// It is deliberately not a merge: a measurement u leaves unknown stays
// unknown even if prev knew it, and no count is ever added, because each
// snapshot already is the cumulative total of the execution. Adding two
// snapshots would count everything before the second one twice.
func (u Usage) Replace(prev Usage) Usage {
	_ = prev // the previous snapshot contributes nothing, by definition
	return u.clone()
}

// IsKnown reports whether the snapshot carries anything at all.
func (u Usage) IsKnown() bool {
	return u.Tokens != nil || u.Provider != "" || u.Model != "" || u.InputTokens != nil ||
		u.OutputTokens != nil || u.CostUSD != nil || len(u.Raw) > 0
}

func (u Usage) clone() Usage {
	out := u
	if u.Tokens != nil {
		t := TokenUsage{
			InputTokens:           usageCopy(u.Tokens.InputTokens),
			CachedInputTokens:     usageCopy(u.Tokens.CachedInputTokens),
			OutputTokens:          usageCopy(u.Tokens.OutputTokens),
			ReasoningOutputTokens: usageCopy(u.Tokens.ReasoningOutputTokens),
			TotalTokens:           usageCopy(u.Tokens.TotalTokens),
		}
		out.Tokens = &t
	}
	out.InputTokens = usageCopy(u.InputTokens)
	out.OutputTokens = usageCopy(u.OutputTokens)
	out.CostUSD = usageCopy(u.CostUSD)
	if u.Raw != nil {
		out.Raw = append(NativeJSON(nil), u.Raw...)
	}
	return out
}

func usageCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Validate checks a usage frame. Beyond the rules of every snapshot, a
// usage frame must carry something: an empty frame would replace a known
// snapshot with an entirely unknown one, which no Harness means to say.
func (u Usage) Validate() error {
	if !u.IsKnown() {
		return fieldErr("", "", RuleRequired, "a usage frame carries at least one measurement")
	}
	return asError(u.validate())
}

// validate checks a snapshot with paths relative to it. The zero snapshot
// is valid: inside done it means no measurement.
func (u Usage) validate() *FieldError {
	c := newChecker("")
	if t := u.Tokens; t != nil {
		usageCount(c, "tokens.input_tokens", t.InputTokens)
		usageCount(c, "tokens.cached_input_tokens", t.CachedInputTokens)
		usageCount(c, "tokens.output_tokens", t.OutputTokens)
		usageCount(c, "tokens.reasoning_output_tokens", t.ReasoningOutputTokens)
		usageCount(c, "tokens.total_tokens", t.TotalTokens)
	}
	c.notBlankWhenSet("provider", u.Provider)
	c.notBlankWhenSet("model", u.Model)
	if u.InputTokens != nil && *u.InputTokens < 0 {
		c.fail("input_tokens", RuleRange, "a token count is never negative")
	}
	if u.OutputTokens != nil && *u.OutputTokens < 0 {
		c.fail("output_tokens", RuleRange, "a token count is never negative")
	}
	if u.CostUSD != nil && (*u.CostUSD < 0 || math.IsNaN(*u.CostUSD) || math.IsInf(*u.CostUSD, 0)) {
		c.fail("cost_usd", RuleRange, "a cost is a finite, non-negative amount")
	}
	c.nativeJSON("raw", u.Raw, optionalObject)
	return c.first
}

func usageCount(c *checker, field string, v *int64) {
	switch {
	case v == nil:
		c.fail(field, RuleRequired, "every token count is required when tokens is present")
	case *v < 0:
		c.fail(field, RuleRange, "a token count is never negative")
	}
}

package harnesstest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

// What a Turn streams: text (streaming), reasoning (thinking), native
// messages (message_items), usage snapshots (usage) and structured output.

func (k *kit) streaming(t *testing.T) {
	plan := Plan{{Say: []string{"one ", "two ", "three"}}}
	s := k.scenario(t, "streaming", "streaming", plan, nil, nil)
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	k.checkText(t, r, plan.Text())
	for i, d := range OfType[wire.Delta](r) {
		assert.NotEmpty(t, d.Delta, "delta %d is empty", i)
	}
	verify(t, r, false)
}

func (k *kit) thinking(t *testing.T) {
	plan := Plan{{Think: "Let me think about it."}, {Say: []string{"Done."}}}
	s := k.scenario(t, "thinking", "thinking", plan, nil, nil)
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	var thought strings.Builder
	firstThink, firstDelta := -1, -1
	for i, e := range r.Events {
		switch v := e.(type) {
		case wire.Thinking:
			thought.WriteString(v.Text)
			if firstThink < 0 {
				firstThink = i
			}
		case wire.Delta:
			if firstDelta < 0 {
				firstDelta = i
			}
		}
	}
	require.GreaterOrEqual(t, firstThink, 0, "no thinking frame")
	assert.Equal(t, "Let me think about it.", thought.String(), "the thinking frames joined are the reasoning text")
	if firstDelta >= 0 {
		assert.Less(t, firstThink, firstDelta, "the reasoning came before the answer, as the native side produced it")
	}
	k.checkText(t, r, "Done.")
	verify(t, r, false)
}

// messageItems: with observe_messages, every delta names its native
// message, and output_message frames report each message's start and its
// completion with the text (daemon-protocol.txt:55); without it, neither.
func (k *kit) messageItems(t *testing.T) {
	plan := Plan{{Say: []string{"Looking", " now."}}, {Tool: &Tool{Name: "ls", Args: json.RawMessage(`{"path":"."}`)}}, {Say: []string{"Found ", "it."}}}
	s := k.scenario(t, "message_items", "message_items", plan, nil, func(s *Scenario) { s.Config.ObserveMessages = true })
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	k.checkText(t, r, plan.Text())
	type item struct {
		started, first, last, ended int
		text                        strings.Builder
		final                       *wire.OutputMessage
	}
	items := map[string]*item{}
	var order []string
	get := func(id string) *item {
		if it, ok := items[id]; ok {
			return it
		}
		it := &item{started: -1, first: -1, ended: -1}
		items[id] = it
		order = append(order, id)
		return it
	}
	for i, e := range r.Events {
		switch v := e.(type) {
		case wire.Delta:
			require.NotEmpty(t, v.ItemID, "delta %d carries no item ID although Core observes messages", i)
			it := get(v.ItemID)
			if it.first < 0 {
				it.first = i
			}
			it.last = i
			it.text.WriteString(v.Delta)
		case wire.OutputMessage:
			it := get(v.ID)
			switch v.Status {
			case wire.OutputInProgress:
				if it.started < 0 {
					it.started = i
				}
			default:
				it.ended = i
				m := v
				it.final = &m
			}
		}
	}
	require.NotEmpty(t, order, "no native message was reported")
	for _, id := range order {
		it := items[id]
		if it.first < 0 {
			continue // a message without text (a tool-only turn) needs no deltas
		}
		assert.GreaterOrEqual(t, it.started, 0, "message %s: no output_message reported its start", id)
		assert.Less(t, it.started, it.first, "message %s: its start is reported before its first delta", id)
		require.GreaterOrEqual(t, it.ended, 0, "message %s: no output_message reported its completion", id)
		assert.Greater(t, it.ended, it.last, "message %s: its completion is reported after its last delta", id)
		assert.Equal(t, wire.OutputCompleted, it.final.Status, "message %s", id)
		require.NotNil(t, it.final.Text, "message %s: the completion carries the message's text", id)
		assert.Equal(t, it.text.String(), *it.final.Text, "message %s: the completion text is its deltas joined", id)
	}
	verify(t, r, false)

	k.run(t, "harness", "message_items/not_observed", "message_items", func(t *testing.T) {
		s := k.scenario(t, "message_items/not_observed", "message_items", plan, nil, func(s *Scenario) { s.Config.ObserveMessages = false })
		r, _ := k.turn(s, nil, drive{})
		completed(t, r)
		noMessageItems(t, r)
	})
}

// noMessageItems asserts a Turn reported no native message identity: a
// request without the opt-in keeps the frames it had without it
// (daemon-protocol.txt:62).
func noMessageItems(t *testing.T, r *Result) {
	t.Helper()
	for i, e := range r.Events {
		switch v := e.(type) {
		case wire.Delta:
			assert.Empty(t, v.ItemID, "delta %d carries an item ID without observe_messages", i)
		case wire.OutputMessage:
			t.Errorf("event %d is an output_message without observe_messages", i)
		}
	}
}

// usage: each snapshot is the cumulative measurement of the execution and
// replaces the one before it (daemon-protocol.txt:100); counts never go
// down, and done's final snapshot is not behind the last frame.
func (k *kit) usage(t *testing.T) {
	u1 := wire.Usage{Tokens: wire.NewTokenUsage(12, 0, 3, 0, 15)}
	u2 := wire.Usage{Tokens: wire.NewTokenUsage(12, 0, 9, 2, 23)}
	plan := Plan{{Say: []string{"Counting"}}, {Usage: []wire.Usage{u1, u2}}, {Say: []string{" done."}}}
	s := k.scenario(t, "usage", "usage", plan, nil, nil)
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	snaps := OfType[wire.Usage](r)
	require.NotEmpty(t, snaps, "no usage frame")
	for i := range snaps {
		require.NoError(t, snaps[i].Validate(), "usage %d", i)
		if i > 0 {
			notBehind(t, snaps[i-1], snaps[i], "usage frame %d", i)
		}
	}
	if !usageZero(r.Done.Usage) {
		notBehind(t, snaps[len(snaps)-1], r.Done.Usage, "done's usage")
	}
	verify(t, r, false)
}

func usageZero(u wire.Usage) bool {
	b, _ := json.Marshal(u)
	return string(b) == "{}"
}

// notBehind asserts that every measurement both snapshots know is not
// smaller in next: cumulative snapshots only grow.
func notBehind(t *testing.T, prev, next wire.Usage, what string, args ...any) {
	t.Helper()
	pairs := [][2]*int64{}
	if prev.Tokens != nil && next.Tokens != nil {
		p, n := prev.Tokens, next.Tokens
		pairs = append(pairs, [2]*int64{p.InputTokens, n.InputTokens}, [2]*int64{p.CachedInputTokens, n.CachedInputTokens},
			[2]*int64{p.OutputTokens, n.OutputTokens}, [2]*int64{p.ReasoningOutputTokens, n.ReasoningOutputTokens}, [2]*int64{p.TotalTokens, n.TotalTokens})
	}
	for _, pr := range pairs {
		if pr[0] != nil && pr[1] != nil {
			assert.GreaterOrEqual(t, *pr[1], *pr[0], append([]any{what + ": a cumulative count went down"}, args...)...)
		}
	}
	if prev.InputTokens != nil && next.InputTokens != nil {
		assert.GreaterOrEqual(t, *next.InputTokens, *prev.InputTokens, what)
	}
	if prev.OutputTokens != nil && next.OutputTokens != nil {
		assert.GreaterOrEqual(t, *next.OutputTokens, *prev.OutputTokens, what)
	}
}

// structured: with a json_schema output format the answer is a JSON
// document that has the schema's required members.
func (k *kit) structured(t *testing.T) {
	schema := `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`
	plan := Plan{{JSON: `{"answer":"forty-two"}`}}
	s := k.scenario(t, "structured_output", "structured_output", plan, nil, func(s *Scenario) {
		s.Config.ObserveMessages = true
		if s.Config.ExecutionControls == nil {
			s.Config.ExecutionControls = &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium}
		}
		s.Config.ExecutionControls.OutputFormat = &wire.OutputFormat{Type: wire.OutputFormatJSONSchema, Schema: wire.NativeJSON(schema)}
	})
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	out := r.Done.Content
	if out == "" {
		out = r.Text()
	}
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), "the structured answer %q is not a JSON object", out)
	answer, ok := doc["answer"].(string)
	assert.True(t, ok, "the required member answer is a string: %v", doc)
	assert.Equal(t, "forty-two", answer)
	verify(t, r, false)
}

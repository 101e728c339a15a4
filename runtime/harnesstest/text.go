package harnesstest

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The shared text assertions every Harness runs (daemon-protocol.txt:98,
// :199): the deltas join to done's content where the adapter fills it,
// order and Unicode survive, a multi-message input keeps its order,
// unsupported content is rejected explicitly, and an error is followed by
// done.

// unicodeChunks exercise what a transport can break: a combining mark, an
// emoji ZWJ sequence with a skin tone, right-to-left Hebrew and Arabic, CJK.
var unicodeChunks = []string{"Cafe\u0301", " 👩🏽\u200d💻", " שלום עולם", " مرحبا", " 日本語", "."}

// checkText asserts the text invariants of one Turn that said want.
func (k *kit) checkText(t *testing.T, r *Result, want string) {
	t.Helper()
	deltas := OfType[wire.Delta](r)
	for i, d := range deltas {
		assert.True(t, utf8.ValidString(d.Delta), "delta %d is not valid UTF-8", i)
		assert.NotContains(t, d.Delta, "\x00", "delta %d carries NUL", i)
	}
	if k.declared("streaming") {
		require.NotEmpty(t, deltas, "a streaming Harness streams the text as deltas")
		assert.Equal(t, want, r.Text(), "the deltas joined are the text, in order, byte for byte")
		if r.Done.Content != "" {
			assert.Equal(t, r.Text(), r.Done.Content, "done's content is the deltas joined")
		}
		return
	}
	assert.Empty(t, deltas, "a Harness that does not declare streaming streams no deltas")
	assert.Equal(t, want, r.Done.Content, "done's content is the text, byte for byte")
	assert.NotContains(t, r.Done.Content, "\x00")
}

func (k *kit) textScenarios(t *testing.T) {
	k.run(t, "harness", "text/stream", "text", func(t *testing.T) {
		plan := Plan{{Say: []string{"Hello", ", ", "world", "!"}}}
		s := k.scenario(t, "text/stream", "text", plan, nil, nil)
		r, _ := k.turn(s, nil, drive{})
		completed(t, r)
		k.checkText(t, r, plan.Text())
		verify(t, r, false)
	})
	k.run(t, "harness", "text/unicode", "text", func(t *testing.T) {
		plan := Plan{{Say: unicodeChunks}}
		s := k.scenario(t, "text/unicode", "text", plan, text(strings.Join(unicodeChunks, "")), nil)
		r, _ := k.turn(s, nil, drive{})
		completed(t, r)
		k.checkText(t, r, plan.Text())
		verify(t, r, false)
	})
	k.run(t, "harness", "text/message_order", "text", func(t *testing.T) {
		// Three messages, the first with two parts: each part must reach
		// the native side, in order.
		in := wire.MessageInput{
			{Content: []wire.InputContent{{Type: wire.ContentText, Text: "alpha-1 "}, {Type: wire.ContentText, Text: "alpha-2 e\u0301"}}},
			{Content: []wire.InputContent{{Type: wire.ContentText, Text: "beta 🎉"}}},
			{Content: []wire.InputContent{{Type: wire.ContentText, Text: "gamma שלום"}}},
		}
		s := k.scenario(t, "text/message_order", "text", Plan{{Echo: true}}, in, nil)
		r, _ := k.turn(s, nil, drive{})
		completed(t, r)
		out := r.Output()
		at := -1
		for _, part := range []string{"alpha-1 ", "alpha-2 e\u0301", "beta 🎉", "gamma שלום"} {
			i := strings.Index(out, part)
			require.GreaterOrEqual(t, i, 0, "the part %q of the input did not reach the native side (answer %q)", part, out)
			assert.Greater(t, i, at, "the part %q came out of order (answer %q)", part, out)
			at = i
		}
		verify(t, r, false)
	})
	k.run(t, "harness", "text/error_then_done", "text", func(t *testing.T) {
		plan := Plan{{Say: []string{"partial"}}, {Fail: "the model broke"}}
		s := k.scenario(t, "text/error_then_done", "text", plan, nil, nil)
		r, _ := k.turn(s, nil, drive{})
		returned(t, r)
		// Either the adapter reports the error itself and returns done, or
		// Run fails and the daemon publishes the error and then done
		// (execution.startRun); either way done follows.
		assert.True(t, len(r.Errors()) > 0 || r.Err != nil, "the native error is reported (an error frame, or Run's error)")
		events := r.Events
		if n := len(events); n > 0 {
			_, isErr := events[n-1].(wire.ErrorFrame)
			if !isErr && len(r.Errors()) > 0 {
				// Frames after the error are allowed only if they are
				// not more of the answer: the Turn ended.
				for _, e := range events[indexOfError(events)+1:] {
					_, isDelta := e.(wire.Delta)
					assert.False(t, isDelta, "the Turn streamed on after its error")
				}
			}
		}
		verify(t, r, false)
	})
	image := wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "What is in this picture? "},
		{Type: wire.ContentImage, ImageURL: "https://example.com/harnesstest/cat.png"}}}}
	if k.declared("message_images") {
		k.run(t, "harness", "message_images", "message_images", func(t *testing.T) {
			s := k.scenario(t, "message_images", "message_images", Plan{{Echo: true}}, image, nil)
			r, _ := k.turn(s, nil, drive{})
			completed(t, r)
			verify(t, r, true)
		})
		return
	}
	k.run(t, "harness", "text/image_rejected", "message_images", func(t *testing.T) {
		s := k.scenario(t, "text/image_rejected", "message_images", Plan{{Echo: true}}, image, nil)
		r, _ := k.turn(s, nil, drive{})
		require.NoError(t, r.Prepared)
		require.True(t, r.Returned)
		refusedExplicitly(t, r)
		// The preparation ran before the input existed; the input itself
		// must start nothing.
		k.noNativeCall(t, r.nativeAtRun)
	})
}

// refusedExplicitly asserts a Turn refused its input: Run returned an
// unsupported error, or reported an error frame, and said nothing.
func refusedExplicitly(t *testing.T, r *Result) {
	t.Helper()
	assert.True(t, errors.Is(r.Err, harness.ErrUnsupportedOperation) || len(r.Errors()) > 0,
		"content the Harness cannot carry is rejected explicitly (Run's error is %v), never dropped", r.Err)
	assert.Empty(t, OfType[wire.Delta](r), "a rejected input produces no answer")
}

func indexOfError(events []wire.Payload) int {
	for i, e := range events {
		if _, ok := e.(wire.ErrorFrame); ok {
			return i
		}
	}
	return len(events)
}

// nativeCalls is Config.NativeCalls, or -1 without one.
func (k *kit) nativeCalls() int {
	if k.cfg.NativeCalls == nil {
		return -1
	}
	return k.cfg.NativeCalls()
}

// noNativeCall asserts no native operation started since before.
func (k *kit) noNativeCall(t *testing.T, before int) {
	t.Helper()
	if before >= 0 {
		assert.Equal(t, before, k.cfg.NativeCalls(), "the refusal started a native operation")
	}
}

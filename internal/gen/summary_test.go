package gen

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestSummary(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		// Fits: the doc whole, its spaces folded.
		{"nothing was sent\n yet", "nothing was sent yet"},
		// A clause that keeps most of the line wins over a word cut.
		{"the Run is observed running; no error frame has arrived yet", "the Run is observed running…"},
		// A clause that would throw most of the line away loses to a word cut.
		{"ok; the cancellation receipt reported applied false with a code", "ok; the cancellation receipt…"},
		{"a text delta (with the native item ID when observe_messages is set)", "a text delta (with the native…"},
		// Before a parenthesis is a clause end too.
		{"the stream closed (done arrived or overflow)", "the stream closed…"},
		// A first word longer than the line stays whole.
		{"https://example.com/a/very/long/path/that/does/not/fit", "https://example.com/a/very/long/path/that/does/not/fit"},
	} {
		got := summary("", c.doc, 30)
		assert.Equal(t, c.want, got, c.doc)
		if got != c.doc {
			assert.LessOrEqual(t, utf8.RuneCountInString(got), 30, "%q is wider than the line", got)
		}
	}
}

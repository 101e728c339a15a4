package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSettleFloating(t *testing.T) {
	want, floating := splitFloating([]string{"~runtime: ack a {}", "runtime: delta run {}", "runtime: done run {}"})
	expected := "~runtime: ack a {}\nruntime: delta run {}\nruntime: done run {}\n"
	for name, found := range map[string][]string{
		"as written":     {"runtime: ack a {}\n", "runtime: delta run {}\n", "runtime: done run {}\n"},
		"floated down":   {"runtime: delta run {}\n", "runtime: done run {}\n", "runtime: ack a {}\n"},
		"floated middle": {"runtime: delta run {}\n", "runtime: ack a {}\n", "runtime: done run {}\n"},
	} {
		assert.Equal(t, expected, settleFloating(found, want, floating), name)
	}
	// The fixed lines keep their order, and a floating line must be sent.
	for name, found := range map[string][]string{
		"fixed swapped":  {"runtime: ack a {}\n", "runtime: done run {}\n", "runtime: delta run {}\n"},
		"floating lost":  {"runtime: delta run {}\n", "runtime: done run {}\n", "runtime: done run {}\n"},
		"floating other": {"runtime: ack b {}\n", "runtime: delta run {}\n", "runtime: done run {}\n"},
	} {
		assert.NotEqual(t, expected, settleFloating(found, want, floating), name)
	}
}

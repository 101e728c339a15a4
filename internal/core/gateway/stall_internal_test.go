package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The stall timeout reaches the connections as the run machine's policy
// timer: the default, the configured one, a long idle period when it is
// disabled, and never over a duration a test set for the timer itself.
func TestStallDurations(t *testing.T) {
	assert.Equal(t, DefaultStallTimeout, stallDurations(Config{})[stallKey])
	assert.Equal(t, 3*time.Minute, stallDurations(Config{StallTimeout: 3 * time.Minute})[stallKey])
	assert.Equal(t, stallDisabledPeriod, stallDurations(Config{StallTimeout: -1})[stallKey])
	mine := map[string]time.Duration{stallKey: time.Second, "connection.read_deadline": time.Minute}
	got := stallDurations(Config{StallTimeout: time.Hour, Durations: mine})
	assert.Equal(t, time.Second, got[stallKey])
	assert.Equal(t, time.Minute, got["connection.read_deadline"])
	got["x"] = 1
	assert.NotContains(t, mine, "x", "the caller's map is not changed")
	assert.Equal(t, "run.stall_wait", stallKey)
}

// Only a Run Core cancelled for silence gets the cause, added to whatever
// evidence the cancellation has.
func TestWithCause(t *testing.T) {
	r := &runRec{}
	assert.JSONEq(t, `{"content":"part"}`, string(r.withCause(json.RawMessage(`{"content":"part"}`))))
	assert.Nil(t, r.withCause(nil))

	require.True(t, r.markStalled())
	assert.False(t, r.markStalled(), "recorded once")
	assert.JSONEq(t, `{"content":"part","cause":"stalled"}`, string(r.withCause(json.RawMessage(`{"content":"part"}`))))
	assert.JSONEq(t, `{"cause":"stalled"}`, string(r.withCause(nil)))
	assert.Equal(t, `[1]`, string(r.withCause(json.RawMessage(`[1]`))), "evidence that is not an object is left alone")
}

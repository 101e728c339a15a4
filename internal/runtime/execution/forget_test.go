package execution_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/internal/runtime/execution"
	"github.com/agentwire/agentwire/wire"
)

// records reads the Session's per-instance records on its loop.
func (r *rig) records() [4]int {
	r.t.Helper()
	var n [4]int
	require.NoError(r.t, r.conn.Do(context.Background(), func(*peer.Driver) { n = r.sess.Records() }))
	return n
}

// tick moves the clock by d and runs the driver's timers on the loop.
//
// It first waits for one turn of the loop: a frame the test already read
// may not yet be reported Written to the driver (the peer can read it as
// soon as the write returns), and the step that report fires must be
// dated before the clock moves, or the instance's retention would start
// after the move (1 in 25 runs failed so).
func (r *rig) tick(clock *peer.ManualClock, d time.Duration) {
	r.t.Helper()
	require.NoError(r.t, r.conn.Do(context.Background(), func(*peer.Driver) {}))
	clock.Advance(d)
	require.NoError(r.t, r.conn.Do(context.Background(), func(d *peer.Driver) { d.Tick() }))
}

// TestFinishedTurnsAreForgottenWithTheDriver: the Session keeps a finished
// Turn's records (its admission, its Run with the final output, the
// function call it asked) only while the driver retains the instances;
// once the driver forgets them, so does the Session.
func TestFinishedTurnsAreForgottenWithTheDriver(t *testing.T) {
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	a := script.New(script.Script{Kind: "test", Steps: []script.Step{
		{Delta: "x"},
		{Function: &wire.FunctionCall{CallID: "call-1", Name: "lookup", Arguments: []byte(`{}`)}},
	}})
	r := newRig(t, a, execution.Config{MaxActive: 4, Clock: clock})
	const turns = 3
	for i := range turns {
		prep, run := fmt.Sprintf("prepare-%d", i), fmt.Sprintf("run-%d", i)
		// Later Turns reuse the first one's idle Executor: ready at once.
		r.send("execution_prepare", prep, prepare(sessionA))
		ready := r.next().Payload
		if ready["state"] == "preparing" {
			ready = r.status(prep, "ready")
		}
		r.start(prep, ready, run)
		r.status(prep, "starting")
		r.status(prep, "started")
		require.Equal(t, "delta", r.next().Type)
		require.Equal(t, "function_call", r.next().Type)
		r.send("function_result", run, map[string]any{"delivery_id": "result-" + run, "call_id": "call-1", "success": true,
			"content": []any{map[string]any{"type": "input_text", "text": "42"}}})
		require.Equal(t, "interaction_decision_ack", r.next().Type)
		require.Equal(t, "delta", r.next().Type, "the script says the result it got")
		done := r.next()
		require.Equal(t, "done", done.Type)
		require.Equal(t, run, done.ID)
	}
	assert.Equal(t, [4]int{turns, turns, 0, 0}, r.records(), "retained with the driver's instances")

	r.tick(clock, 59*time.Second)
	assert.Equal(t, [4]int{turns, turns, 0, 0}, r.records(), "within the driver's retention")
	r.tick(clock, 2*time.Second)
	assert.Equal(t, [4]int{0, 0, 0, 0}, r.records(), "forgotten with the driver's instances")
}

// TestRunningTurnKeepsItsRecords: the driver never forgets a live Run, and
// the Session keeps it for Shutdown and the heartbeat's count however
// long it runs.
func TestRunningTurnKeepsItsRecords(t *testing.T) {
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	a := newCounting()
	a.hang = true
	r := newRig(t, a, execution.Config{MaxActive: 4, Clock: clock})
	ready := r.ready("prepare", prepare(sessionA))
	r.start("prepare", ready, "run")
	r.status("prepare", "starting")
	r.status("prepare", "started")
	r.tick(clock, time.Hour)
	assert.Equal(t, 1, r.records()[1], "the running Run is kept")
	var active int
	require.NoError(t, r.conn.Do(context.Background(), func(*peer.Driver) { active = r.sess.Active() }))
	assert.Equal(t, 1, active)

	r.send("prompt_cancel", "run", map[string]any{"delivery_id": "cancel"})
	require.Equal(t, "done", r.next().Type)
	require.Equal(t, "interaction_decision_ack", r.next().Type)
	r.tick(clock, 2*time.Minute)
	assert.Equal(t, [4]int{0, 0, 0, 0}, r.records(), "forgotten once settled and past the retention")
}

package daemon_test

import (
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/wire"
)

// TestLongStreamInOrderAndSettlesWhenTheConnectionDrops: a Run's events go
// out through a window of frames queued ahead of their writes; Core still
// reads them in order with no gap, and when the connection drops mid-stream
// the Turn settles (its goroutine ends, so the daemon stops; TestMain
// checks that no goroutine is left).
func TestLongStreamInOrderAndSettlesWhenTheConnectionDrops(t *testing.T) {
	const deltas = 5000
	steps := make([]script.Step, deltas)
	for i := range steps {
		steps[i] = script.Step{Delta: "d"}
	}
	c := newCore(t)
	r := start(t, c, registry(t, script.Script{Steps: steps}), &logs{})
	ws := accept(t, c)
	read(t, ws)
	write(t, ws, "execution_prepare", "prepare-1", prepare)
	read(t, ws)
	ready := read(t, ws).Payload.(wire.PreparationStatus)
	require.Equal(t, wire.PreparationReady, ready.State)
	write(t, ws, "execution_start", "prepare-1", `{"executor_id":"`+ready.ExecutorID+`","handle":"`+ready.Handle+`","run_id":"run-1","input":[{"content":[{"type":"input_text","text":"hi"}]}]}`)
	next := uint64(1)
	for next <= deltas/2 {
		m := read(t, ws)
		if d, ok := m.Payload.(wire.Delta); ok {
			require.Equal(t, next, d.Sequence, "deltas arrive in order, none missing")
			next++
		}
	}
	require.NoError(t, ws.Close(websocket.StatusGoingAway, "bye"))
	ws2 := accept(t, c)
	assert.Equal(t, "heartbeat", read(t, ws2).Type, "a new connection starts fresh: nothing of the Run is replayed")
	_ = ws2.CloseNow()
	require.NoError(t, r.stop(t))
}

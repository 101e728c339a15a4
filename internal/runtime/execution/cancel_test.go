package execution_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/execution"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// TestKilledRunAnswersUnappliedReceipt: a cancelled Run whose Harness
// ended only because it was killed publishes done with its partial
// content, no error frame, and a receipt that does not claim the
// cancellation applied: a kill is not native settlement
// (daemon-protocol.txt:147).
func TestKilledRunAnswersUnappliedReceipt(t *testing.T) {
	a := newCounting()
	a.hang, a.killed = true, true
	r := newRig(t, a, execution.Config{MaxActive: 1})
	ready := r.ready("prepare", prepare(sessionA))
	r.start("prepare", ready, "run")
	r.status("prepare", "starting")
	r.status("prepare", "started")
	r.send("prompt_cancel", "run", map[string]any{"delivery_id": "cancel"})
	done := r.next()
	require.Equal(t, "done", done.Type, "no error frame: the kill is the receipt's to report")
	assert.Equal(t, "executor 1", done.Payload["content"])
	ack := r.next()
	require.Equal(t, "interaction_decision_ack", ack.Type)
	assert.Equal(t, "run", ack.ID)
	assert.Equal(t, "cancel", ack.Payload["delivery_id"])
	assert.Equal(t, false, ack.Payload["applied"])
	assert.Equal(t, wire.InteractionCodeRuntimeError, ack.Payload["error_code"])
	assert.Equal(t, "test: killed: "+harness.ErrCancelUnsettled.Error(), ack.Payload["error"], "the adapter's account of the kill")
	assert.Nil(t, ack.Payload["outcome"], "an unapplied receipt carries no outcome")
	assert.Equal(t, "executor 1 closed ok=true", <-a.closed)
}

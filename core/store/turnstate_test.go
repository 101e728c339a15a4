package store_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm/turn"
)

// The stored Turn states are the turn machine's, by name, and the public
// status projects each of them.
func TestTurnStatesAreTheTurnMachines(t *testing.T) {
	ours := []store.TurnState{store.TurnQueued, store.TurnClaimed, store.TurnCancelling, store.TurnStarting,
		store.TurnRunning, store.TurnCompleted, store.TurnCancelled, store.TurnFailed}
	var theirs []store.TurnState
	for s := turn.State(1); s.Valid(); s++ {
		theirs = append(theirs, store.TurnState(s.String()))
	}
	assert.ElementsMatch(t, theirs, ours)
	public := map[string]bool{"queued": true, "running": true, "completed": true, "cancelled": true, "failed": true}
	for _, s := range ours {
		st, _ := turn.ParseState(string(s))
		assert.Equal(t, st.Terminal(), s.Terminal(), s)
		assert.True(t, public[store.Turn{State: s}.Status().State], s)
	}
	assert.False(t, store.TurnState("paused").Valid())
	assert.Error(t, store.TurnMove{TurnID: "t", From: store.TurnQueued, To: store.TurnCompleted}.Validate(), "no rule moves a queued Turn to completed")
}

// A cancellation Core made itself shows its cause beside the
// cancellation's own outcome; other evidence shows none.
func TestStatusShowsCause(t *testing.T) {
	stalled := store.Outcome{Evidence: []byte(`{"cause":"stalled"}`)}
	assert.Equal(t, store.Status{State: "cancelled", Cause: "stalled"}, store.Turn{State: store.TurnCancelled, Outcome: stalled}.Status())
	unconfirmed := store.Outcome{Reason: store.ReasonCancelUnconfirmed, Evidence: []byte(`{"cause":"stalled"}`)}
	assert.Equal(t, store.Status{State: "failed", Reason: "cancel_unconfirmed", Cause: "stalled"},
		store.Turn{State: store.TurnFailed, Outcome: unconfirmed}.Status())
	assert.Equal(t, store.Status{State: "cancelled"}, store.Turn{State: store.TurnCancelled, Outcome: store.Outcome{Evidence: []byte(`{"content":"x"}`)}}.Status())
}

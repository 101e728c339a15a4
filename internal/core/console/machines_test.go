package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/console"
)

// journal writes a Turn and the given events (type, payload) into st.
func journal(t *testing.T, st *memory.Store, turnID string, events ...[2]string) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses-" + turnID, Project: "p", AgentKind: "script", CreatedAt: at}))
	require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: turnID, SessionID: "ses-" + turnID, Input: []byte(`[]`), CreatedAt: at}))
	for _, e := range events {
		_, err := st.AppendEvent(ctx, store.Event{TurnID: turnID, Type: e[0], Payload: []byte(e[1]), At: at})
		require.NoError(t, err)
	}
}

func byMachine(m console.Machines, machine string) []console.Instance {
	var out []console.Instance
	for _, in := range m.Instances {
		if in.Machine == machine {
			out = append(out, in)
		}
	}
	return out
}

// TestTurnMachinesReplaysTheJournal: a Turn with output, a permission
// answered, an input accepted and done, replayed through the generated
// tables.
func TestTurnMachinesReplaysTheJournal(t *testing.T) {
	st := memory.New()
	journal(t, st, "turn-1",
		[2]string{"placement", `{"reason":"no_device","detail":"none"}`},
		[2]string{"delta", `{"delta":"hi","sequence":1}`},
		[2]string{"permission_request", `{"interaction_id":"int-1","kind":"permission","request":{"request_id":"perm-1","tool":"shell","title":"ls"}}`},
		[2]string{"permission_decision", `{"delivery_id":"dlv-1","approved":true}`},
		[2]string{"interaction_decision_ack", `{"delivery_id":"dlv-1","applied":true}`},
		[2]string{"interaction_outcome", `{"delivery_id":"dlv-1","interaction_id":"int-1","outcome":"applied"}`},
		[2]string{"prompt_steer", `{"input_id":"in-1","input":[]}`},
		[2]string{"prompt_steer_ack", `{"input_id":"in-1","accepted":false,"written":true}`},
		[2]string{"prompt_steer_ack", `{"input_id":"in-1","accepted":true}`},
		[2]string{"delta", `{"delta":"more","sequence":2}`},
		[2]string{"done", `{"content":"hi more"}`},
	)
	m, err := console.TurnMachines(context.Background(), st, "turn-1")
	require.NoError(t, err)

	run := byMachine(m, "run")
	require.Len(t, run, 1)
	assert.Equal(t, "completed", run[0].State)
	assert.True(t, run[0].Settled)
	assert.Equal(t, [][2]string{{"idle", "requested"}, {"requested", "streaming"}, {"streaming", "streaming"}, {"streaming", "completed"}}, run[0].Transitions)
	assert.Equal(t, 4, run[0].Steps, "the start, two deltas and done")

	in := byMachine(m, "interaction")
	require.Len(t, in, 1)
	assert.Equal(t, "int-1", in[0].Key)
	assert.Equal(t, "applied", in[0].State)
	assert.Equal(t, [][2]string{{"idle", "pending"}, {"pending", "deciding"}, {"deciding", "applied"}}, in[0].Transitions)

	inputs := byMachine(m, "input")
	require.Len(t, inputs, 1)
	assert.Equal(t, "in-1", inputs[0].Key)
	assert.Equal(t, "accepted", inputs[0].State)
	assert.Equal(t, [2]string{"pending", "sent"}, inputs[0].Transitions[0])

	turn := byMachine(m, "turn")
	require.Len(t, turn, 1)
	assert.Equal(t, "queued", turn[0].State, "the Turn's state is the store's")
	assert.Equal(t, "store", turn[0].Source)
}

// TestTurnMachinesCancellation: prompt_cancel, the drained stream and the
// receipt that echoes the cancellation's delivery ID; the question left
// open is closed unanswered.
func TestTurnMachinesCancellation(t *testing.T) {
	st := memory.New()
	journal(t, st, "turn-2",
		[2]string{"delta", `{"delta":"hi","sequence":1}`},
		[2]string{"permission_request", `{"interaction_id":"int-9","kind":"permission","request":{"request_id":"perm-9","tool":"shell"}}`},
		[2]string{"cancel_requested", `{"delivery_id":"dlv-c"}`},
		[2]string{"done", `{"content":"hi"}`},
		[2]string{"interaction_decision_ack", `{"delivery_id":"dlv-c","applied":true}`},
		[2]string{"interaction_outcome", `{"interaction_id":"int-9","outcome":"unanswered"}`},
	)
	m, err := console.TurnMachines(context.Background(), st, "turn-2")
	require.NoError(t, err)
	run := byMachine(m, "run")
	require.Len(t, run, 1)
	assert.Equal(t, "cancelled", run[0].State)
	assert.Equal(t, [][2]string{{"idle", "requested"}, {"requested", "streaming"}, {"streaming", "cancelling"}, {"cancelling", "cancel_drained"}, {"cancel_drained", "cancelled"}}, run[0].Transitions)
	in := byMachine(m, "interaction")
	require.Len(t, in, 1)
	assert.Equal(t, "unanswered", in[0].State)
}

// TestTurnMachinesBeforeTheStart: a queued Turn has no Run yet; an unknown
// Turn is an error, not an empty view.
func TestTurnMachinesBeforeTheStart(t *testing.T) {
	st := memory.New()
	journal(t, st, "turn-3", [2]string{"placement", `{"reason":"no_device","detail":"none"}`})
	m, err := console.TurnMachines(context.Background(), st, "turn-3")
	require.NoError(t, err)
	assert.Empty(t, byMachine(m, "run"))
	prep := byMachine(m, "preparation")
	require.Len(t, prep, 1)
	assert.Equal(t, "idle", prep[0].State)

	_, err = console.TurnMachines(context.Background(), st, "turn-none")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

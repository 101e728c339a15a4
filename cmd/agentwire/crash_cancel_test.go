package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway"
)

// TestCoreKilledDuringCancellation SIGKILLs Core after prompt_cancel was
// written and before its receipt (the Runtime holds the native
// cancellation open until the test lets it settle) and restarts it: the
// receipt owned the outcome and can no longer arrive, so the Turn is
// failed with cancel_unconfirmed, never cancelled or completed
// (daemon-protocol.txt:133, 163); the journal keeps what was observed and
// the cancellation, the late receipt on the dead connection reaches
// nobody, and nothing is replayed to the reconnected Runtime.
func TestCoreKilledDuringCancellation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	gate := filepath.Join(e.dir, "cancel-settles")
	script := e.writeFile("script.json", `{"steps":[{"delta":"partial"},{"hold_cancel":"`+gate+`"}],"session_id":"native-1"}`)
	rt := e.runtime("--harness", "script="+script)
	e.waitConnected(1)
	ses := e.session("")
	turnID := e.turn(ses, "first")
	e.waitState(turnID, "running")
	e.waitFrame("out", "execution_start", nil)
	e.waitMessage(turnID)

	code, v := e.api.do("POST", "/api/v1/turns/"+turnID+"/cancel", nil)
	require.Equal(t, 202, code, "%v", v)
	delivery, _ := v["delivery_id"].(string)
	require.NotEmpty(t, delivery)
	e.waitFrame("out", "prompt_cancel", func(f tframe) bool { return strings.Contains(string(f.Payload), delivery) })
	// The Runtime cancels natively but cannot settle: no receipt yet.
	require.Empty(t, framesOf(e.frames(), "in", "interaction_decision_ack"))
	assert.Equal(t, "running", e.api.status(turnID)["state"])

	e.core.kill(t)
	// The native cancellation settles now; its done and receipt go to
	// the dead connection.
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	e.startCore()

	assert.Equal(t, map[string]any{"state": "failed", "reason": "cancel_unconfirmed"}, e.api.status(turnID))
	types := e.api.eventTypes(turnID)
	assert.Equal(t, []string{"output_message", "delta", "output_message", gateway.JournalCancelRequested, "observation", "status"}, types,
		"nothing invented: no receipt, no done, no error")

	e.waitConnected(2)
	// A new Turn of the Session runs on the reconnected Runtime; it is the
	// only execution the restarted Core starts.
	next := e.turn(ses, "second")
	e.waitState(next, "running")
	frames := e.frames()
	starts := framesOf(frames, "out", "execution_start")
	require.Len(t, starts, 1)
	assert.Contains(t, string(starts[0].Payload), `"text":"second"`)
	assert.Empty(t, framesOf(frames, "out", "prompt_cancel"), "the cancellation is not replayed")
	assert.Empty(t, framesOf(frames, "in", "interaction_decision_ack"), "the late receipt reached nobody")

	st := e.stopAll(rt)
	ctx := t.Context()
	tr, err := st.GetTurn(ctx, turnID)
	require.NoError(t, err)
	assert.Equal(t, store.TurnFailed, tr.State)
	assert.Equal(t, store.Outcome{Reason: store.ReasonCancelUnconfirmed}, tr.Outcome, "no native evidence invented")
	assert.Equal(t, 1, tr.Attempts, "never claimed again")
	evs, err := st.Events(ctx, turnID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 5)
	var cancel map[string]string
	require.NoError(t, json.Unmarshal(evs[3].Payload, &cancel))
	assert.Equal(t, delivery, cancel["delivery_id"], "the cancellation's record survived the crash")
	assert.Equal(t, tr.RunID, evs[3].RunID)
	assert.JSONEq(t, `{"reason":"cancel_unconfirmed","cause":"core_restarted"}`, string(evs[4].Payload))
}

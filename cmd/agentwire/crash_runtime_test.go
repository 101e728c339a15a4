package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// TestRuntimeKilledMidPreparationAndMidRun SIGKILLs the Runtime process
// twice while Core keeps running: first while a Turn's native preparation
// is in progress (preparing answered, ready not yet), then while a Turn's
// Run streams. Core reports the observation reason of each
// (delivery_unknown, event_stream_incomplete): the native effect is
// unknown, never a confirmed failure or success (daemon-protocol.txt:153,
// 158). Each restarted Runtime reconnects under a new owner epoch and
// nothing is replayed to it (daemon-protocol.txt:159): the only
// execution_prepare and execution_start frames after each reconnection
// are those of a new Turn.
func TestRuntimeKilledMidPreparationAndMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	gate := filepath.Join(e.dir, "prepare-proceeds")
	script := e.writeFile("script.json", `{"steps":[{"delta":"partial"},{"hang":true}],"hold_prepare":"`+gate+`","sessions_file":"`+filepath.Join(e.dir, "native-sessions.json")+`"}`)
	rt1 := e.runtime("--harness", "script="+script)
	e.waitConnected(1)
	ses := e.session("")

	// Mid-preparation: the Runtime answered preparing and prepares natively.
	prepTurn := e.turn(ses, "prepared only")
	prep := e.waitFrame("out", "execution_prepare", nil)
	e.waitFrame("in", "preparation_status", func(f tframe) bool {
		return f.ID == prep.ID && strings.Contains(string(f.Payload), `"preparing"`)
	})
	rt1.kill(t)
	e.waitState(prepTurn, "failed")
	assert.Equal(t, map[string]any{"state": "failed", "reason": "delivery_unknown"}, e.api.status(prepTurn))
	require.NoError(t, os.WriteFile(gate, nil, 0o600))

	rt2 := e.runtime("--harness", "script="+script)
	e.waitConnected(2)
	// Mid-Run: the Run streamed its first delta.
	runTurn := e.turn(ses, "run")
	e.waitState(runTurn, "running")
	e.waitMessage(runTurn)
	prepares := framesOf(e.frames(), "out", "execution_prepare")
	require.Len(t, prepares, 2, "the interrupted preparation is not replayed")
	assert.Equal(t, prep.ID, prepares[0].ID)
	require.Len(t, framesOf(e.frames(), "out", "execution_start"), 1)
	rt2.kill(t)
	e.waitState(runTurn, "failed")
	assert.Equal(t, map[string]any{"state": "failed", "reason": "event_stream_incomplete"}, e.api.status(runTurn))
	types := e.api.eventTypes(runTurn)
	assert.Equal(t, []string{"output_message", "delta", "output_message", "status"}, types, "no error or done invented")

	rt3 := e.runtime("--harness", "script="+script)
	e.waitConnected(3)
	next := e.turn(ses, "after")
	e.waitState(next, "running")
	starts := framesOf(e.frames(), "out", "execution_start")
	require.Len(t, starts, 2, "the interrupted Run is not replayed")
	assert.Contains(t, string(starts[0].Payload), `"text":"run"`)
	assert.Contains(t, string(starts[1].Payload), `"text":"after"`)
	require.Len(t, framesOf(e.frames(), "out", "execution_prepare"), 3)
	code, _ := e.api.do("POST", "/api/v1/turns/"+next+"/cancel", nil)
	require.Equal(t, 202, code)
	e.waitState(next, "cancelled")

	st := e.stopAll(rt3)
	ctx := t.Context()
	for id, want := range map[string]string{prepTurn: store.ReasonDeliveryUnknown, runTurn: store.ReasonEventStreamIncomplete} {
		tr, err := st.GetTurn(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, store.TurnFailed, tr.State)
		assert.Equal(t, store.Outcome{Reason: want}, tr.Outcome, "an observation reason, no engine failure or evidence")
		assert.Equal(t, 1, tr.Attempts, "claimed once, never again")
	}
	active, err := st.ActiveTurns(ctx)
	require.NoError(t, err)
	assert.Empty(t, active)
}

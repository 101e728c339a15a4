package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// TestCoreKilledWithActiveInputInFlight SIGKILLs Core while one active
// input was written natively but not accepted (the script adapter never
// reports acceptance) and a second one, accepted by the API and stored,
// waits behind it undelivered (one input at a time per Run,
// daemon-protocol.txt:124). After the restart neither is delivered again,
// both records survive, and the input cursor is still 0: only an accepted
// receipt moves it, never written (daemon-protocol.txt:133).
func TestCoreKilledWithActiveInputInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	script := e.writeFile("script.json", `{"steps":[{"delta":"partial"},{"hang":true}],"input":"written"}`)
	rt := e.runtime("--harness", "script="+script)
	e.waitConnected(1)
	ses := e.session("")
	turnID := e.turn(ses, "first")
	e.waitState(turnID, "running")
	e.waitMessage(turnID)

	code, v := e.api.do("POST", "/api/v1/turns/"+turnID+"/input", map[string]any{"input_id": "in-1", "input": textInput("written only")["input"]})
	require.Equal(t, 202, code, "%v", v)
	e.waitFrame("out", "prompt_steer", func(f tframe) bool { return strings.Contains(string(f.Payload), `"in-1"`) })
	e.waitFrame("in", "prompt_steer_ack", func(f tframe) bool { return strings.Contains(string(f.Payload), `"written":true`) })
	code, v = e.api.do("POST", "/api/v1/turns/"+turnID+"/input", map[string]any{"input_id": "in-2", "input": textInput("stored only")["input"]})
	require.Equal(t, 202, code, "%v", v)
	assert.Equal(t, float64(2), v["seq"])
	// in-2 waits for in-1's acceptance, which never comes.
	require.Len(t, framesOf(e.frames(), "out", "prompt_steer"), 1)

	e.restartCore()

	assert.Equal(t, map[string]any{"state": "failed", "reason": "event_stream_incomplete"}, e.api.status(turnID))
	types := e.api.eventTypes(turnID)
	assert.Equal(t, []string{"output_message", "delta", "output_message", "prompt_steer", "prompt_steer_ack", "observation", "status"}, types,
		"no acceptance, input outcome, done or error invented")
	code, _ = e.api.do("POST", "/api/v1/turns/"+turnID+"/input", textInput("too late"))
	assert.Equal(t, 409, code, "the interrupted Turn takes no more input")

	// The reconnected Runtime runs the Session's next Turn; no input of
	// the interrupted one reaches it.
	e.waitConnected(2)
	next := e.turn(ses, "second")
	e.waitState(next, "running")
	frames := e.frames()
	require.Len(t, framesOf(frames, "out", "execution_start"), 1)
	assert.Empty(t, framesOf(frames, "out", "prompt_steer"), "no input is replayed")

	st := e.stopAll(rt)
	ctx := t.Context()
	tr, err := st.GetTurn(ctx, turnID)
	require.NoError(t, err)
	assert.Equal(t, store.TurnFailed, tr.State)
	assert.Equal(t, int64(0), tr.InputCursor, "written never advances the cursor")
	ins, err := st.Inputs(ctx, turnID, 0)
	require.NoError(t, err)
	require.Len(t, ins, 2, "both inputs are still recorded")
	assert.Equal(t, []string{"in-1", "in-2"}, []string{ins[0].ID, ins[1].ID})
	assert.Equal(t, []int64{1, 2}, []int64{ins[0].Seq, ins[1].Seq})
}

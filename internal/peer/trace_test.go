package peer_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

const goodTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestEventTrace: an event carries the frame's trace, or a local one
// minted when the frame had none or an invalid one, or when no frame
// caused it; the minted trace is stable for the event (daemon-protocol.txt:67).
func TestEventTrace(t *testing.T) {
	withTrace := peer.Event{Msg: &wire.Message{Envelope: wire.Envelope{Type: "delta", Trace: goodTrace}}}
	assert.Equal(t, goodTrace, withTrace.Trace().String())
	assert.False(t, withTrace.Trace().Local)

	for name, ev := range map[string]*peer.Event{
		"missing": {Msg: &wire.Message{Envelope: wire.Envelope{Type: "delta"}}},
		"invalid": {Msg: &wire.Message{Envelope: wire.Envelope{Type: "delta", Trace: "00-zz-00-01"}}},
		"local":   {},
	} {
		tc := ev.Trace()
		assert.True(t, tc.Local, name)
		assert.NotEqual(t, [16]byte{}, tc.TraceID, name)
		assert.Equal(t, tc, ev.Trace(), "%s: one trace per event", name)
	}
}

// TestRefusalTrace: a refused frame is logged under its own trace, or a
// local one when it carried none or an invalid one; the trace never
// changes the refusal.
func TestRefusalTrace(t *testing.T) {
	p := newPair(t)
	require.Error(t, p.core.Deliver([]byte(`{"type":"teleport","id":"x","payload":{},"trace":"`+goodTrace+`"}`)))
	require.Error(t, p.core.Deliver([]byte(`{"type":"teleport","id":"y","payload":{}}`)))
	require.Error(t, p.core.Deliver([]byte(`{"type":"teleport","id":"z","payload":{},"trace":"not-a-trace"}`)))
	require.Len(t, p.coreApp.refused, 3)
	assert.Equal(t, goodTrace, p.coreApp.refused[0].Trace.String())
	assert.False(t, p.coreApp.refused[0].Trace.Local)
	for _, r := range p.coreApp.refused[1:] {
		assert.True(t, r.Trace.Local, "a local trace was minted for %s", r.Msg.ID)
		assert.Equal(t, peer.RefusedDecode, r.Kind)
	}
	assert.NotEqual(t, p.coreApp.refused[1].Trace.TraceID, p.coreApp.refused[2].Trace.TraceID)
}

// TestReplyAndLogCarryTheFrameTrace: what the driver sends while it
// delivers a traced frame (here the Runtime app's preparing and ready
// statuses) carries the frame's trace context, its step log lines carry
// the trace_id, and a frame sent outside any delivery carries none.
func TestReplyAndLogCarryTheFrameTrace(t *testing.T) {
	var logs bytes.Buffer // the driver logs on the test's goroutine only
	ts := tables(t)
	d, err := peer.New(peer.Config{Role: fsm.RoleRuntime, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleRuntime),
		Clock: peer.NewManualClock(time.Unix(1_800_000_000, 0)), Label: "runtime",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)

	frame, err := wire.Encode(prepID, prepare(t), goodTrace)
	require.NoError(t, err)
	require.NoError(t, d.Deliver(frame))
	n := 0
	for w, ok := d.NextWrite(); ok; w, ok = d.NextWrite() {
		msg, err := wire.Decode(w.Frame, wire.RuntimeToCore)
		require.NoError(t, err)
		assert.Equal(t, goodTrace, msg.Trace, "%s %s", w.Type, w.ID)
		d.Written(w, nil)
		n++
	}
	assert.Equal(t, 2, n, "preparing and ready")
	assert.Contains(t, logs.String(), "trace_id=4bf92f3577b34da6a3ce929d0e0e4736")

	d.Send(peer.Outbound{ID: runID, Refusal: true, Payload: wire.ErrorFrame{Error: "unprompted"}}, nil)
	w, ok := d.NextWrite()
	require.True(t, ok)
	msg, err := wire.Decode(w.Frame, wire.RuntimeToCore)
	require.NoError(t, err)
	assert.Empty(t, msg.Trace, "no frame caused it")
}

// A flood of refused frames writes a bounded number of log lines; every
// refusal still reaches the App, and the next line after the window says
// how many were not logged.
func TestRefusalLogIsBounded(t *testing.T) {
	var logs bytes.Buffer
	ts := tables(t)
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	app := newApp(t, fsm.RoleCore)
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: app, Clock: clock, Label: "core",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	for range 500 {
		require.Error(t, d.Deliver([]byte(`{"type":"teleport","id":"x","payload":{}}`)))
	}
	assert.Equal(t, 20, strings.Count(logs.String(), "frame refused"), "a burst per window")
	assert.Len(t, app.refused, 500, "every refusal reaches the App")
	clock.Advance(time.Second)
	require.Error(t, d.Deliver([]byte(`{"type":"teleport","id":"y","payload":{}}`)))
	assert.Contains(t, logs.String(), "not_logged_before=480")
}

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// runtimeSide is a scripted Runtime on one WebSocket.
type runtimeSide struct {
	t  *testing.T
	ws *websocket.Conn
}

func (e *env) runtime(device string, caps wire.AgentKindCapabilities) *runtimeSide {
	dev := e.issue(store.KindDevice, device, "")
	ws, _, err := e.dial(device, dev)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = ws.CloseNow() })
	r := &runtimeSide{t: e.t, ws: ws}
	yes := true
	r.send("", wire.Heartbeat{TS: 1, SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "codex", Available: &yes, Capabilities: caps}}})
	return r
}

func (r *runtimeSide) send(id string, p wire.Payload) {
	b, err := wire.Encode(id, p, "")
	require.NoError(r.t, err)
	send(r.t, r.ws, b)
}

// next reads Core's next frame.
func (r *runtimeSide) next() wire.Message {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := r.ws.Read(ctx)
	require.NoError(r.t, err)
	m, err := wire.Decode(b, wire.CoreToRuntime)
	require.NoError(r.t, err)
	return m
}

// prepare answers the next execution_prepare with preparing and ready and
// returns its request ID and payload.
func (r *runtimeSide) prepare() (string, wire.ExecutionPrepare) {
	m := r.next()
	require.Equal(r.t, wire.TypeExecutionPrepare, m.Type)
	p := m.Payload.(wire.ExecutionPrepare)
	r.send(m.ID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 1, State: wire.PreparationPreparing})
	r.send(m.ID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 2, State: wire.PreparationReady, ExpiresAt: 1_900_000_000_000})
	return m.ID, p
}

// start reads execution_start and confirms it.
func (r *runtimeSide) start(prepID string) wire.ExecutionStart {
	m := r.next()
	require.Equal(r.t, wire.TypeExecutionStart, m.Type)
	require.Equal(r.t, prepID, m.ID)
	s := m.Payload.(wire.ExecutionStart)
	r.send(prepID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 3, State: wire.PreparationStarted, RunID: s.RunID})
	return s
}

func (e *env) queueTurn(text string) store.Turn {
	ctx := context.Background()
	now := e.clock.Now()
	envID, sesID := "env-"+text, "ses-"+text
	require.NoError(e.t, e.store.CreateEnvironment(ctx, store.Environment{ID: envID, Project: "p", Type: "none", CreatedAt: now}))
	require.NoError(e.t, e.store.CreateSession(ctx, store.Session{ID: sesID, Project: "p", AgentKind: "codex", EnvironmentID: envID, CreatedAt: now}))
	in, err := json.Marshal(wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: text}}}})
	require.NoError(e.t, err)
	t := store.Turn{ID: "turn-" + text, SessionID: sesID, Input: in, CreatedAt: now}
	require.NoError(e.t, e.store.CreateTurn(ctx, t))
	return t
}

func (e *env) waitTurn(id string, want store.TurnState) store.Turn {
	var t store.Turn
	require.Eventually(e.t, func() bool {
		var err error
		t, err = e.store.GetTurn(context.Background(), id)
		return err == nil && t.State == want
	}, 10*time.Second, time.Millisecond, "turn %s never became %s", id, want)
	return t
}

func TestTurnRunsThroughPreparationToCompletion(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("hello")
	r := e.runtime("dev-1", wiretest.Capabilities())

	prepID, prep := r.prepare()
	assert.Equal(t, "ses-hello", prep.SessionID)
	cfg := prep.Configuration
	assert.Equal(t, "codex", cfg.AgentKind)
	assert.Equal(t, wire.AgentStateKey("ses-hello"), cfg.AgentStateKey)
	assert.Empty(t, cfg.RunID, "execution_prepare carries no Run ID")
	assert.Empty(t, cfg.Input, "execution_prepare carries no input")
	assert.True(t, cfg.StrictResume)
	assert.True(t, cfg.ObserveToolObservations)
	assert.True(t, cfg.DisableExecutionEnvironment)
	require.NotNil(t, cfg.ExecutionControls)
	assert.Equal(t, wire.WebSearchDisabled, cfg.ExecutionControls.WebSearch)

	s := r.start(prepID)
	assert.Equal(t, "hello", s.Input.Text())
	assert.Equal(t, turn.ID, e.waitTurn(turn.ID, store.TurnRunning).ID)
	r.send(s.RunID, wire.Delta{Delta: "hel", Sequence: 1})
	r.send(s.RunID, wire.Delta{Delta: "lo", Sequence: 2})
	r.send(s.RunID, wire.Done{})
	done := e.waitTurn(turn.ID, store.TurnCompleted)
	assert.Equal(t, store.Status{State: "completed"}, done.Status())
	assert.Equal(t, s.RunID, done.RunID)

	evs := runEvents(t, e.store, turn.ID)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"delta", "delta", "done"}, types)
	assert.JSONEq(t, `{"delta":"hel","sequence":1}`, string(evs[0].Payload))
}

func TestErrorThenDoneFailsWithEngineClassification(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("boom")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	r.send(s.RunID, wire.NewEngineError("overloaded", "server_overloaded", 0))
	r.send(s.RunID, wire.Done{})
	got := e.waitTurn(turn.ID, store.TurnFailed)
	assert.Equal(t, store.Status{State: "failed", Reason: store.ReasonEngineFailed, EngineErrorCode: "server_overloaded"}, got.Status())
}

func first(a string, _ wire.ExecutionPrepare) string { return a }

func TestDeviceWithoutARequiredCapabilityIsNotSelected(t *testing.T) {
	e := newEnv(t, true)
	// dev-a lacks steering (the always row): the Turn goes to dev-b.
	a := e.runtime("dev-a", wiretest.Capabilities(wiretest.Unsupports("steering")))
	e.waitDeclared("dev-a", true)
	b := e.runtime("dev-b", wiretest.Capabilities())
	e.waitDeclared("dev-b", true)
	turn := e.queueTurn("pick")
	e.gw.Kick()
	prepID, _ := b.prepare()
	s := b.start(prepID)
	got := e.waitTurn(turn.ID, store.TurnRunning)
	assert.Equal(t, "dev-b", got.DeviceID)
	b.send(s.RunID, wire.Done{})
	e.waitTurn(turn.ID, store.TurnCompleted)
	_ = a
}

func TestPreparationCapacityLeavesTheTurnQueuedForRetry(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("busy")
	r := e.runtime("dev-1", wiretest.Capabilities())
	m := r.next()
	require.Equal(t, wire.TypeExecutionPrepare, m.Type)
	r.send(m.ID, wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpPrepare, ErrorCode: wire.PrepCodePreparationCapacity})
	q := e.waitTurn(turn.ID, store.TurnQueued)
	assert.Equal(t, e.clock.Now().Add(time.Second), q.NotBefore, "backoff of the first attempt")
	assert.Equal(t, store.Status{State: "queued"}, q.Status())

	// Once due again the worker retries with a fresh request ID.
	e.clock.Advance(time.Second)
	e.gw.Kick()
	again := r.next()
	require.Equal(t, wire.TypeExecutionPrepare, again.Type)
	assert.NotEqual(t, m.ID, again.ID)
}

func TestOtherPreparationRefusalFailsWithoutReplay(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("refused")
	r := e.runtime("dev-1", wiretest.Capabilities())
	m := r.next()
	r.send(m.ID, wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpPrepare, ErrorCode: wire.PrepCodeExecutorCapacity})
	got := e.waitTurn(turn.ID, store.TurnFailed)
	assert.Equal(t, gateway.ReasonPreparationFailed, got.Outcome.Reason)
	assert.JSONEq(t, `{"preparation_state":"refused","preparation_error":"executor_capacity"}`, string(got.Outcome.Evidence))
}

func TestDisconnectionMidRunIsEventStreamIncomplete(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("lost")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	r.send(s.RunID, wire.Delta{Delta: "partial", Sequence: 1})
	e.waitEvents(turn.ID, 1)
	require.NoError(t, r.ws.Close(websocket.StatusGoingAway, "gone"))
	got := e.waitTurn(turn.ID, store.TurnFailed)
	assert.Equal(t, store.Status{State: "failed", Reason: store.ReasonEventStreamIncomplete}, got.Status())
	evs := runEvents(t, e.store, turn.ID)
	require.Len(t, evs, 1, "no error or done is invented")
	assert.Equal(t, "delta", evs[0].Type)
}

// waitEvents waits until the Turn's journal holds n Run events; the
// scheduler's placement events do not count (one journaled before the
// device connected let a test go on with a delta not yet stored).
func (e *env) waitEvents(turnID string, n int) {
	require.Eventually(e.t, func() bool {
		evs, err := e.store.Events(context.Background(), turnID, 0, 0)
		evs = slices.DeleteFunc(evs, func(ev store.Event) bool { return ev.Type == "placement" })
		return err == nil && len(evs) >= n
	}, 10*time.Second, time.Millisecond)
}

func TestCancelSettledByItsReceipt(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("stop")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(turn.ID, store.TurnRunning)
	delivery, err := e.gw.CancelTurn(context.Background(), turn.ID)
	require.NoError(t, err)
	m := r.next()
	require.Equal(t, wire.TypePromptCancel, m.Type)
	assert.Equal(t, s.RunID, m.ID)
	assert.Equal(t, delivery, m.Payload.(wire.PromptCancel).DeliveryID)
	yes := true
	// A receipt for another delivery proves nothing; the right one settles.
	r.send(s.RunID, wire.InteractionDecisionAck{DeliveryID: delivery, Applied: &yes})
	got := e.waitTurn(turn.ID, store.TurnCancelled)
	assert.Equal(t, store.Status{State: "cancelled"}, got.Status())
	_, err = e.gw.CancelTurn(context.Background(), turn.ID)
	assert.ErrorIs(t, err, gateway.ErrTurnFinished)
}

func TestCancelWithoutReceiptIsUnconfirmedAfter15s(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("hang")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(turn.ID, store.TurnRunning)
	_, err := e.gw.CancelTurn(context.Background(), turn.ID)
	require.NoError(t, err)
	require.Equal(t, wire.TypePromptCancel, r.next().Type)
	e.clock.Advance(15*time.Second - time.Millisecond)
	// Output still flows while cancelling; then the deadline passes.
	r.send(s.RunID, wire.Delta{Delta: "late", Sequence: 1})
	e.waitEvents(turn.ID, 1)
	got, err := e.store.GetTurn(context.Background(), turn.ID)
	require.NoError(t, err)
	require.Equal(t, store.TurnRunning, got.State)
	e.clock.Advance(time.Millisecond)
	got = e.waitTurn(turn.ID, store.TurnFailed)
	assert.Equal(t, store.Status{State: "failed", Reason: store.ReasonCancelUnconfirmed}, got.Status())
}

func TestCancelOfAQueuedTurnCancelsIt(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("idle")
	delivery, err := e.gw.CancelTurn(context.Background(), turn.ID)
	require.NoError(t, err)
	assert.Empty(t, delivery, "nothing is sent for a queued Turn")
	got := e.waitTurn(turn.ID, store.TurnCancelled)
	assert.Equal(t, store.Status{State: "cancelled"}, got.Status())
	_, err = e.gw.CancelTurn(context.Background(), turn.ID)
	assert.ErrorIs(t, err, gateway.ErrTurnFinished)
}

// One connection holds at most 64 open admissions (daemon-protocol.txt:116):
// the 65th Turn waits until one of them settles.
func TestOpenAdmissionsPerConnectionAreBounded(t *testing.T) {
	e := newEnv(t, true)
	for i := 0; i < 66; i++ {
		e.queueTurn(fmt.Sprintf("t%02d", i))
	}
	r := e.runtime("dev-1", wiretest.Capabilities())
	// One reader: a Read with a context that expires closes the socket.
	frames := make(chan wire.Message, 128)
	go func() {
		defer close(frames)
		for {
			_, b, err := r.ws.Read(context.Background())
			if err != nil {
				return
			}
			if m, err := wire.Decode(b, wire.CoreToRuntime); err == nil {
				frames <- m
			}
		}
	}()
	// A failure bound only: nothing here waits for time to pass.
	next := func() (wire.Message, bool) {
		select {
		case m, ok := <-frames:
			return m, ok
		case <-time.After(time.Minute):
			return wire.Message{}, false
		}
	}
	var first wire.Message
	for i := 0; i < 64; i++ {
		m, ok := next()
		require.True(t, ok)
		require.Equal(t, wire.TypeExecutionPrepare, m.Type)
		if i == 0 {
			first = m
		}
	}
	_, ok := e.gw.Sync(context.Background(), "dev-1")
	require.True(t, ok)
	e.clock.Advance(time.Second) // a poll: still nothing placed
	require.NoError(t, e.gw.Settled(context.Background()))
	assert.EqualValues(t, 64, e.gw.OpenAdmissions("dev-1"), "no 65th admission before any settled")
	queued := 0
	for i := 0; i < 66; i++ {
		tr, err := e.store.GetTurn(context.Background(), fmt.Sprintf("turn-t%02d", i))
		require.NoError(t, err)
		if tr.State == store.TurnQueued {
			queued++
		}
	}
	assert.Equal(t, 2, queued, "the 65th and 66th Turns were not claimed")
	r.send(first.ID, wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpPrepare, ErrorCode: wire.PrepCodeExecutorCapacity})
	m, ok := next()
	require.True(t, ok)
	require.Equal(t, wire.TypeExecutionPrepare, m.Type, "a settled admission frees its place")
	assert.NotEqual(t, first.ID, m.ID)
	_ = r.ws.CloseNow()
	for range frames {
	}
}

// runEvents is the Turn's journal without the scheduler's placement
// events (a Turn queued before its device connected says why it waited).
func runEvents(t *testing.T, st store.Store, turnID string) []store.Event {
	t.Helper()
	evs, err := st.Events(context.Background(), turnID, 0, 0)
	require.NoError(t, err)
	out := evs[:0]
	for _, ev := range evs {
		if ev.Type != "placement" {
			out = append(out, ev)
		}
	}
	return out
}

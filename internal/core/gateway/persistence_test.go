package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// follow drains a subscription and returns the types of the events it
// delivered.
func follow(t *testing.T, sub *api.Subscription) []string {
	var types []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, open := <-sub.Events():
			if !open {
				return types
			}
			types = append(types, ev.Type)
		case <-timeout:
			t.Fatal("the event stream did not end")
		}
	}
}

// A store that fails while a Turn streams (a full disk): the Turn fails
// persistence_failed and its event stream ends with that status at once,
// although the store cannot take the failure itself yet; no frame Core
// queued after the lost write leaves (the next active input, which
// followed the receipt Core could not record), the connection closes with
// 1011, and once the store works again the failure is written and the
// next Turn runs on the device.
// newFailingEnv is a gateway on a store that fails on command, its
// Journal the API's (whose view of unwritten failures the tests read).
func newFailingEnv(t *testing.T) (*storetest.Failing, *api.Journal, *env) {
	st := storetest.NewFailing(memory.New())
	j := &api.Journal{Store: st}
	return st, j, newEnvStore(t, true, st, func(c *gateway.Config) { c.Journal = j })
}

func TestStoreFailureFailsTheTurnAndSendsNothingUnstored(t *testing.T) {
	st, j, e := newFailingEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tr := e.queueTurn("full")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(tr.ID, store.TurnRunning)
	for i := uint64(1); i <= 3; i++ {
		r.send(s.RunID, wire.Delta{Delta: "d", Sequence: i})
	}
	e.waitEvents(tr.ID, 3)
	for _, id := range []string{"in-1", "in-2"} {
		raw, err := json.Marshal(wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: id}}}})
		require.NoError(t, err)
		_, err = st.AppendInput(ctx, store.Input{TurnID: tr.ID, ID: id, Content: raw, CreatedAt: e.clock.Now()})
		require.NoError(t, err)
	}
	e.gw.DeliverInput(ctx, tr.ID)
	m := r.next()
	require.Equal(t, wire.TypePromptSteer, m.Type)
	require.Equal(t, "in-1", m.Payload.(wire.PromptSteer).InputID)
	require.Eventually(t, func() bool { return len(runEvents(t, e.store, tr.ID)) == 4 }, 10*time.Second, time.Millisecond, "the delivery is journaled")

	sub := j.SubscribeDurable(ctx, "p", tr.ID, 0, e.clock, 0)
	var types []string
	for ev := range sub.Events() {
		if types = append(types, ev.Type); ev.Type == api.LiveEvent {
			break
		}
	}
	st.Fail()
	yes := true
	r.send(s.RunID, wire.PromptSteerAck{InputID: "in-1", Accepted: &yes})
	r.send(s.RunID, wire.Delta{Delta: "lost", Sequence: 4})
	r.send(s.RunID, wire.Done{})

	// The next thing the Runtime reads is the close: in-2's prompt_steer,
	// queued after the receipt Core could not record, never left.
	_, b, err := r.ws.Read(ctx)
	require.Error(t, err, "Core sent a frame after the failed write: %s", b)
	assert.Equal(t, websocket.StatusInternalError, websocket.CloseStatus(err), "closed with 1011: %v", err)

	types = append(types, follow(t, sub)...)
	require.NoError(t, sub.Err())
	types = slices.DeleteFunc(types, func(s string) bool { return s == "placement" }) // the scheduler's, when it looked before the device connected
	assert.Equal(t, []string{"delta", "delta", "delta", "prompt_steer", api.LiveEvent}, types, "what was stored, and nothing invented")
	assert.Equal(t, store.Status{State: "failed", Reason: store.ReasonPersistenceFailed}, sub.Final().Status(), "the stream ends with the persistence reason")
	held, err := e.store.GetTurn(ctx, tr.ID)
	require.NoError(t, err)
	assert.Equal(t, store.TurnRunning, held.State, "the store could not take the failure yet")
	assert.Equal(t, int64(0), held.InputCursor, "the receipt was not recorded")
	assert.Equal(t, []string{tr.ID}, e.gw.UnwrittenTurns())
	shown, err := j.Turn(ctx, tr.ID)
	require.NoError(t, err)
	assert.Equal(t, store.ReasonPersistenceFailed, shown.Status().Reason, "readers see it failed")
	require.NoError(t, e.gw.Settled(ctx)) // a pass while the store still fails
	assert.Equal(t, []string{tr.ID}, e.gw.UnwrittenTurns(), "still unwritten")
	assert.Contains(t, e.logs.String(), "the store failed to write the connection's journal batch")

	// The store works again: the next pass writes the failure.
	st.Heal()
	require.NoError(t, e.gw.Settled(ctx))
	got := e.waitTurn(tr.ID, store.TurnFailed)
	assert.Equal(t, store.ReasonPersistenceFailed, got.Outcome.Reason)
	assert.Empty(t, e.gw.UnwrittenTurns())
	evs := runEvents(t, e.store, tr.ID)
	var types2 []string
	for _, ev := range evs {
		types2 = append(types2, ev.Type)
	}
	assert.Equal(t, []string{"delta", "delta", "delta", "prompt_steer", "observation"}, types2, "nothing after the lost write was stored; no done is invented")
	assert.JSONEq(t, `{"reason":"persistence_failed","store_error":"Commit: storetest: injected store failure (database or disk is full)"}`, string(evs[len(evs)-1].Payload))

	// The Runtime reconnects and the device's next Turn runs.
	next := e.queueTurn("after")
	r2 := e.runtime("dev-1", wiretest.Capabilities())
	s2 := r2.start(first(r2.prepare()))
	e.waitTurn(next.ID, store.TurnRunning)
	r2.send(s2.RunID, wire.Delta{Delta: "ok", Sequence: 1})
	r2.send(s2.RunID, wire.Done{})
	e.waitTurn(next.ID, store.TurnCompleted)
}

// The first write of a Turn that fails (its move to running, before any
// event) fails it the same way, and the Turn's other connection-loss
// record (event_stream_incomplete) is never written over it.
func TestStoreFailureOfAMoveFailsTheTurn(t *testing.T) {
	st, j, e := newFailingEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tr := e.queueTurn("move")
	r := e.runtime("dev-1", wiretest.Capabilities())
	m := r.next()
	require.Equal(t, wire.TypeExecutionPrepare, m.Type)
	st.Only("Commit")
	st.Fail() // the batch with the move to starting fails
	r.send(m.ID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 1, State: wire.PreparationReady, ExpiresAt: 1_900_000_000_000})
	_, b, err := r.ws.Read(ctx)
	require.Error(t, err, "execution_start did not leave: %s", b)
	assert.Equal(t, websocket.StatusInternalError, websocket.CloseStatus(err))
	require.Eventually(t, func() bool {
		shown, err := j.Turn(ctx, tr.ID)
		return err == nil && shown.Status().Reason == store.ReasonPersistenceFailed
	}, 10*time.Second, time.Millisecond)
	st.Heal()
	require.NoError(t, e.gw.Settled(ctx))
	got := e.waitTurn(tr.ID, store.TurnFailed)
	assert.Equal(t, store.ReasonPersistenceFailed, got.Outcome.Reason)
}

// raceStore fails the first journal batch after arm, once release is
// closed, and holds every later batch with events until the Turn's
// failure was written, so that a batch of the Turn that reached the store
// would land after the failure.
type raceStore struct {
	store.Store
	mu       sync.Mutex
	armed    bool
	failed   bool
	entered  chan struct{}
	release  chan struct{}
	recorded chan struct{}
}

func (s *raceStore) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	s.mu.Lock()
	fail := s.armed && len(b.Events) > 0
	if fail {
		s.armed, s.failed = false, true
	}
	hold := !fail && s.failed && len(b.Events) > 0 && !bytes.Contains(b.Events[0].Payload, []byte(store.ReasonPersistenceFailed))
	s.mu.Unlock()
	if fail {
		close(s.entered)
		<-s.release
		return store.BatchResult{}, storetest.ErrInjected
	}
	if hold {
		select {
		case <-s.recorded:
		case <-ctx.Done():
		}
	}
	res, err := s.Store.Commit(ctx, b)
	if err == nil && !hold && s.failed && len(b.Events) > 0 {
		close(s.recorded) // the failure's own commit
	}
	return res, err
}

// Frames the connection delivered while the failed batch was committing
// (the done here) are never journaled: they would follow a gap. (That the
// mark outlives the failure's own write is TestUnwrittenMarkOutlivesTheFailureWrite.)
func TestNothingFollowsTheFailureIntoTheJournal(t *testing.T) {
	st := &raceStore{Store: memory.New(), entered: make(chan struct{}), release: make(chan struct{}), recorded: make(chan struct{})}
	e := newEnvStore(t, true, st)
	tr := e.queueTurn("race")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(tr.ID, store.TurnRunning)
	r.send(s.RunID, wire.Delta{Delta: "stored", Sequence: 1})
	require.Eventually(t, func() bool { return len(runEvents(t, e.store, tr.ID)) == 1 }, 10*time.Second, time.Millisecond)

	st.mu.Lock()
	st.armed = true
	st.mu.Unlock()
	r.send(s.RunID, wire.Delta{Delta: "lost", Sequence: 2})
	<-st.entered
	r.send(s.RunID, wire.Done{}) // delivered while the failing batch commits
	require.Eventually(t, func() bool { return e.gw.TurnState(tr.ID) == string(store.TurnCompleted) }, 10*time.Second, time.Millisecond)
	close(st.release)
	assert.Equal(t, websocket.StatusInternalError, closedWith(t, r.ws))

	got := e.waitTurn(tr.ID, store.TurnFailed)
	assert.Equal(t, store.ReasonPersistenceFailed, got.Outcome.Reason)
	require.Eventually(t, func() bool { return len(e.gw.Connected()) == 0 }, 10*time.Second, time.Millisecond, "the connection ended, its last batches handled")
	var types []string
	for _, ev := range runEvents(t, e.store, tr.ID) {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"delta", "observation"}, types, "the done delivered meanwhile is not journaled after the failure")
}

// A receipt Core cannot record is not acted on: when the write of the
// input cursor for an accepted input fails, the next input is not sent,
// the Turn fails persistence_failed and the connection closes with 1011.
func TestFailedCursorWriteSendsNoNextInput(t *testing.T) {
	st := storetest.NewFailing(memory.New())
	e := newEnvStore(t, true, st)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := e.queueTurn("cursor")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(tr.ID, store.TurnRunning)
	for _, id := range []string{"in-1", "in-2"} {
		raw, err := json.Marshal(wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: id}}}})
		require.NoError(t, err)
		_, err = st.AppendInput(ctx, store.Input{TurnID: tr.ID, ID: id, Content: raw, CreatedAt: e.clock.Now()})
		require.NoError(t, err)
	}
	e.gw.DeliverInput(ctx, tr.ID)
	require.Equal(t, wire.TypePromptSteer, r.next().Type)

	st.Only("AdvanceInputCursor")
	st.Fail()
	yes := true
	r.send(s.RunID, wire.PromptSteerAck{InputID: "in-1", Accepted: &yes})
	_, b, err := r.ws.Read(ctx)
	require.Error(t, err, "Core sent a frame after the receipt it could not record: %s", b)
	assert.Equal(t, websocket.StatusInternalError, websocket.CloseStatus(err))
	got := e.waitTurn(tr.ID, store.TurnFailed)
	assert.Equal(t, store.ReasonPersistenceFailed, got.Outcome.Reason, "the other writes work: the failure is written at once")
	assert.Equal(t, int64(0), got.InputCursor)
	assert.Contains(t, e.logs.String(), "the store failed to write the input cursor")
}

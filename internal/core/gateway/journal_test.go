package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// gatedStore holds the first batch Commit after arm until release, and
// records how many events each batch carried.
type gatedStore struct {
	store.Store
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
	batches []int
}

func (s *gatedStore) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.entered, s.release = true, make(chan struct{}), make(chan struct{})
}

func (s *gatedStore) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	s.mu.Lock()
	gated := s.armed && len(b.Events) > 0
	if gated {
		s.armed = false
	}
	entered, release := s.entered, s.release
	s.mu.Unlock()
	if gated {
		close(entered)
		<-release
	}
	res, err := s.Store.Commit(ctx, b)
	s.mu.Lock()
	s.batches = append(s.batches, len(b.Events))
	s.mu.Unlock()
	return res, err
}

func (s *gatedStore) eventsPerBatch() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

// While one batch commits, the connection goes on delivering frames; what
// they journal is committed next, in one store write, in order, and the
// Turn's record follows its events.
func TestFramesKeepArrivingWhileABatchCommits(t *testing.T) {
	st := &gatedStore{Store: memory.New()}
	e := newEnvStore(t, true, st)
	turn := e.queueTurn("stream")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(turn.ID, store.TurnRunning)

	st.arm()
	var once sync.Once
	release := func() { once.Do(func() { close(st.release) }) }
	defer release() // a failing check must not leave the writer held
	r.send(s.RunID, wire.Delta{Delta: "a", Sequence: 1})
	<-st.entered // the first delta's batch is committing and holds
	before := len(st.eventsPerBatch())
	r.send(s.RunID, wire.Delta{Delta: "b", Sequence: 2})
	r.send(s.RunID, wire.Delta{Delta: "c", Sequence: 3})
	r.send(s.RunID, wire.Done{})
	// The loop delivers them while the commit holds: the Turn's machine
	// reaches completed in memory, its move waiting for the writer.
	require.Eventually(t, func() bool { return e.gw.TurnState(turn.ID) == string(store.TurnCompleted) }, 10*time.Second, time.Millisecond)
	held, err := e.store.GetTurn(context.Background(), turn.ID)
	require.NoError(t, err)
	assert.Equal(t, store.TurnRunning, held.State, "nothing after the held batch is durable yet")
	release()
	e.waitTurn(turn.ID, store.TurnCompleted)

	var got []string
	for _, ev := range runEvents(t, e.store, turn.ID) {
		got = append(got, ev.Type)
	}
	assert.Equal(t, []string{"delta", "delta", "delta", "done"}, got)
	after := st.eventsPerBatch()[before:]
	require.NotEmpty(t, after)
	assert.Equal(t, 1, after[0], "the held batch")
	sum := 0
	for _, n := range after[1:] {
		sum += n
	}
	assert.Equal(t, 3, sum, "the frames delivered meanwhile: %v", after)
}

// A store that falls behind a Run's frames: once the uncommitted backlog
// would pass its bound, the Run's subscription closes with
// subscription_overflow while the connection stays up. The Turn fails
// event_stream_incomplete, the stream's last event before the status says
// why, no error or done is invented, later frames of the Run are ignored,
// and the next Turn runs on the same connection.
func TestRunSubscriptionOverflowsWhenTheStoreFallsBehind(t *testing.T) {
	st := &gatedStore{Store: memory.New()}
	e := newEnvStore(t, true, st, func(c *gateway.Config) { c.JournalBacklog = 64 })
	tr := e.queueTurn("stream")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(tr.ID, store.TurnRunning)

	st.arm()
	var once sync.Once
	release := func() { once.Do(func() { close(st.release) }) }
	defer release()
	r.send(s.RunID, wire.Delta{Delta: "a", Sequence: 1})
	<-st.entered // about 30 bytes held uncommitted
	r.send(s.RunID, wire.Delta{Delta: strings.Repeat("x", 40), Sequence: 2})
	r.send(s.RunID, wire.Delta{Delta: "late", Sequence: 3})
	r.send(s.RunID, wire.Done{})
	require.Eventually(t, func() bool { return e.gw.TurnState(tr.ID) == string(store.TurnFailed) }, 10*time.Second, time.Millisecond)
	release()
	e.waitTurn(tr.ID, store.TurnFailed)

	got, err := e.store.GetTurn(context.Background(), tr.ID)
	require.NoError(t, err)
	assert.Equal(t, store.ReasonEventStreamIncomplete, got.Outcome.Reason)
	var types []string
	var last string
	for _, ev := range runEvents(t, e.store, tr.ID) {
		types = append(types, ev.Type)
		if ev.Type == "observation" {
			last = string(ev.Payload)
		}
	}
	assert.Equal(t, []string{"delta", "observation"}, types, "the frame that did not fit and everything after it are not journaled; no done is invented")
	assert.JSONEq(t, `{"reason":"subscription_overflow"}`, last)
	assert.Contains(t, e.logs.String(), "run subscription overflow")

	// The connection stayed up: the next Turn is placed on it and runs.
	next := e.queueTurn("after")
	e.gw.Kick() // the worker's poll runs on the manual clock
	s2 := r.start(first(r.prepare()))
	e.waitTurn(next.ID, store.TurnRunning)
	r.send(s2.RunID, wire.Done{})
	e.waitTurn(next.ID, store.TurnCompleted)
}

// countingStore counts the declarations written.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	decls int
}

func (s *countingStore) RecordDeclaration(ctx context.Context, deviceID string, epoch uint64, raw json.RawMessage, at time.Time) error {
	s.mu.Lock()
	s.decls++
	s.mu.Unlock()
	return s.Store.RecordDeclaration(ctx, deviceID, epoch, raw, at)
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decls
}

// An unchanged declaration is written at most once a minute; a changed
// one at once. Liveness itself is the connection, in memory.
func TestHeartbeatsWriteTheStoreOnlyWhenNeeded(t *testing.T) {
	st := &countingStore{Store: memory.New()}
	e := newEnvStore(t, true, st)
	r := e.runtime("dev-1", wiretest.Capabilities())
	// applied waits until Core's connection delivered n frames in all.
	applied := func(n int) {
		require.Eventually(t, func() bool {
			got, ok := e.gw.Sync(context.Background(), "dev-1")
			return ok && got >= n
		}, 10*time.Second, time.Millisecond)
	}
	applied(1)
	require.Equal(t, 1, st.count(), "the first declaration")
	yes := true
	beat := func(ts int64, caps wire.AgentKindCapabilities) {
		r.send("", wire.Heartbeat{TS: ts, ActiveRequests: int(ts % 3), SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "codex", Available: &yes, Capabilities: caps}}})
	}
	for ts := int64(2); ts < 7; ts++ {
		beat(ts, wiretest.Capabilities())
	}
	applied(6)
	assert.Equal(t, 1, st.count(), "the same declaration (timestamp and load aside) is not written again")
	less := wiretest.Capabilities()
	less.Steering = wire.Unsupported
	beat(7, less)
	applied(7)
	assert.Equal(t, 2, st.count(), "a changed declaration is written at once")
	// Half a minute at a time, so that each heartbeat keeps the
	// connection inside Core's read deadline.
	e.clock.Advance(30 * time.Second)
	beat(8, less)
	applied(8)
	assert.Equal(t, 2, st.count(), "not yet")
	e.clock.Advance(30 * time.Second)
	beat(9, less)
	applied(9)
	assert.Equal(t, 3, st.count(), "an unchanged one again after a minute")
}

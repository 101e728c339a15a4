package gateway_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// startGate holds the batch that commits a Turn's move to running until
// released, so a test can act while the Turn runs in memory but is still
// starting in the store.
type startGate struct {
	store.Store
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	// watch, once set, is the Turn whose next read closes read.
	mu    sync.Mutex
	watch string
	read  chan struct{}
}

func (s *startGate) GetTurn(ctx context.Context, id string) (store.Turn, error) {
	t, err := s.Store.GetTurn(ctx, id)
	s.mu.Lock()
	if s.watch != "" && s.watch == id {
		s.watch = ""
		close(s.read)
	}
	s.mu.Unlock()
	return t, err
}

func (s *startGate) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	for _, m := range b.Moves {
		if m.To == store.TurnRunning {
			s.once.Do(func() {
				close(s.entered)
				<-s.release
			})
		}
	}
	return s.Store.Commit(ctx, b)
}

// An input stored after the start's own read of the inputs, while the move
// to running is still being committed, is delivered: the quick start's
// `turn input` right after `turn submit` once waited for ever for a
// prompt_steer Core never sent, because delivery read the Turn as starting
// from the store.
func TestInputStoredWhileTheStartCommitsIsDelivered(t *testing.T) {
	st := &startGate{Store: memory.New(), entered: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(st.release) }) }
	defer release() // a failing check must not leave the writer held
	e := newEnvStore(t, true, st)
	tr := e.queueTurn("steer")
	r := e.runtime("dev-1", wiretest.Capabilities())
	prepID, _ := r.prepare()
	<-st.entered // the start was sent and its pump found no input; running is not durable yet
	start := r.next()
	require.Equal(t, wire.TypeExecutionStart, start.Type)
	require.Equal(t, prepID, start.ID)
	runID := start.Payload.(wire.ExecutionStart).RunID
	r.send(prepID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 3, State: wire.PreparationStarted, RunID: runID})

	held, err := e.store.GetTurn(context.Background(), tr.ID)
	require.NoError(t, err)
	require.Equal(t, store.TurnStarting, held.State, "the store still says starting")
	raw, err := json.Marshal(wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "more"}}}})
	require.NoError(t, err)
	_, err = e.store.AppendInput(context.Background(), store.Input{TurnID: tr.ID, ID: "input-1", Content: raw, CreatedAt: e.clock.Now()})
	require.NoError(t, err)
	st.mu.Lock()
	st.watch, st.read = tr.ID, make(chan struct{})
	st.mu.Unlock()
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		// The loop's Do waits for its batches to be durable, so this
		// returns only after the release below.
		e.gw.DeliverInput(context.Background(), tr.ID)
	}()

	// Delivery read the Turn while running was not yet durable; only then
	// does the commit go on (frames leave once what precedes them is).
	<-st.read
	release()
	<-delivered
	steer := r.next()
	require.Equal(t, wire.TypePromptSteer, steer.Type, "the stored input goes out")
	assert.Equal(t, "input-1", steer.Payload.(wire.PromptSteer).InputID)
	r.send(runID, wire.Done{})
	e.waitTurn(tr.ID, store.TurnCompleted)
}

package turn_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/turn"
)

// recordingStore notes every move written through it, in order.
type recordingStore struct {
	store.Store
	mu    sync.Mutex
	moves []string
}

func (r *recordingStore) MoveTurn(ctx context.Context, m store.TurnMove) error {
	r.mu.Lock()
	r.moves = append(r.moves, fmt.Sprintf("%s->%s", m.From, m.To))
	r.mu.Unlock()
	return r.Store.MoveTurn(ctx, m)
}

func (r *recordingStore) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.moves...)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

type result struct {
	st  turn.Step
	err error
}

// TestInstanceRef: the instance's Ref follows its moves: a claim sets the
// Run ID, a requeue clears it, and later moves carry it.
func TestInstanceRef(t *testing.T) {
	in := turn.NewInstance(turn.Ref{ID: "turn", State: store.TurnQueued})
	assert.Equal(t, turn.Ref{ID: "turn", State: store.TurnQueued}, in.Ref())

	st, err := in.Fire(turn.Claim, turn.Args{Claim: claimOf("run-a"), At: t0})
	require.NoError(t, err)
	require.True(t, st.Moved())
	in.Written()
	assert.Equal(t, turn.Ref{ID: "turn", RunID: "run-a", State: store.TurnClaimed}, in.Ref())

	st, err = in.Fire(turn.Requeue, turn.Args{NotBefore: t0.Add(time.Minute), At: t0})
	require.NoError(t, err)
	assert.Equal(t, "run-a", st.Move.RunID, "the requeue is conditional on the claim's Run")
	in.Written()
	assert.Equal(t, turn.Ref{ID: "turn", State: store.TurnQueued}, in.Ref(), "a requeue clears the Run")

	_, err = in.Fire(turn.Claim, turn.Args{Claim: claimOf("run-b"), At: t0})
	require.NoError(t, err)
	in.Written()
	st, err = in.Fire(turn.Start, turn.Args{At: t0})
	require.NoError(t, err)
	in.Written()
	assert.Equal(t, "run-b", st.Move.RunID)
	assert.Equal(t, turn.Ref{ID: "turn", RunID: "run-b", State: store.TurnStarting}, in.Ref())

	// A rejected event changes nothing.
	_, err = in.Fire(turn.Claim, turn.Args{Claim: claimOf("run-c"), At: t0})
	require.ErrorIs(t, err, turn.ErrRejected)
	assert.Equal(t, turn.Ref{ID: "turn", RunID: "run-b", State: store.TurnStarting}, in.Ref())

	// A terminal move keeps the Run.
	_, err = in.Fire(turn.StartFailed, turn.Args{At: t0})
	require.NoError(t, err)
	in.Written()
	assert.Equal(t, turn.Ref{ID: "turn", RunID: "run-b", State: store.TurnFailed}, in.Ref())
}

// TestInstanceFireWritesToStore: the moves an instance fires, written in
// order, are the moves of the Turn the store holds.
func TestInstanceFireWritesToStore(t *testing.T) {
	s := newStore(t)
	in := turn.NewInstance(turn.RefOf(seedTurn(t, s, "turn", store.TurnQueued)))
	for _, f := range []struct {
		e turn.Event
		a turn.Args
	}{
		{turn.Claim, turn.Args{Claim: claimOf(runID), At: t0}},
		{turn.Start, turn.Args{At: t0}},
		{turn.StartSent, turn.Args{At: t0}},
		{turn.RunCompleted, turn.Args{At: t0}},
	} {
		st, err := in.Fire(f.e, f.a)
		require.NoError(t, err, "%s", f.e)
		require.True(t, st.Moved(), "%s", f.e)
		require.NoError(t, s.MoveTurn(ctx, st.Move), "%s", f.e)
		in.Written()
		tr, err := s.GetTurn(ctx, "turn")
		require.NoError(t, err)
		assert.Equal(t, turn.RefOf(tr), in.Ref())
	}
}

// TestInstanceChanged: Changed is closed at a move, and only at a move.
func TestInstanceChanged(t *testing.T) {
	s := newStore(t)
	in := turn.NewInstance(turn.RefOf(seedTurn(t, s, "turn", store.TurnClaimed)))

	ch := in.Changed()
	assert.True(t, ch == in.Changed(), "the same channel until the next move")
	assert.False(t, closed(ch))

	st, err := in.Fire(turn.Cancel, turn.Args{At: t0})
	require.NoError(t, err)
	require.True(t, st.Moved())
	assert.True(t, closed(ch), "closed at the move")
	next := in.Changed()
	assert.False(t, closed(next), "a fresh channel for the next move")
	require.NoError(t, s.MoveTurn(ctx, st.Move))
	in.Written()

	// cancelling x cancel is ignored.
	st, err = in.Fire(turn.Cancel, turn.Args{At: t0})
	require.NoError(t, err)
	assert.False(t, st.Moved())
	assert.False(t, closed(next), "not closed at an ignored event")

	// cancelling x start is rejected.
	_, err = in.Fire(turn.Start, turn.Args{At: t0})
	require.ErrorIs(t, err, turn.ErrRejected)
	assert.False(t, closed(next), "not closed at a rejected event")

	// A move made by Commit closes it too.
	st, err = in.Commit(ctx, s, turn.Released, turn.Args{At: t0})
	require.NoError(t, err)
	require.True(t, st.Moved())
	assert.True(t, closed(next))

	// A running instance: a cancellation stays in running.
	s2 := newStore(t)
	run := turn.NewInstance(turn.RefOf(seedTurn(t, s2, "turn", store.TurnRunning)))
	ch = run.Changed()
	st, err = run.Fire(turn.Cancel, turn.Args{At: t0})
	require.NoError(t, err)
	assert.True(t, st.SendCancel)
	assert.False(t, st.Moved())
	assert.False(t, closed(ch), "a cancellation sent to the Run is no move")
}

// TestInstanceCommit: Commit writes its own move to the store; a step
// without a move writes nothing.
func TestInstanceCommit(t *testing.T) {
	s := &recordingStore{Store: newStore(t)}
	tr := seedTurn(t, s.Store, "turn", store.TurnClaimed)
	in := turn.NewInstance(turn.RefOf(tr))

	st, err := in.Commit(ctx, s, turn.Cancel, turn.Args{At: t0.Add(time.Minute)})
	require.NoError(t, err)
	assert.True(t, st.ReleaseAdmission)
	assert.Equal(t, store.TurnMove{TurnID: "turn", RunID: runID, From: store.TurnClaimed, To: store.TurnCancelling, At: t0.Add(time.Minute)}, st.Move)
	assert.Equal(t, []string{"claimed->cancelling"}, s.log())
	got, err := s.GetTurn(ctx, "turn")
	require.NoError(t, err)
	assert.Equal(t, store.TurnCancelling, got.State)
	assert.Equal(t, turn.RefOf(got), in.Ref())

	// Ignored: nothing is written.
	st, err = in.Commit(ctx, s, turn.Cancel, turn.Args{At: t0})
	require.NoError(t, err)
	assert.False(t, st.Moved())
	// Rejected: nothing is written.
	_, err = in.Commit(ctx, s, turn.Start, turn.Args{At: t0})
	require.ErrorIs(t, err, turn.ErrRejected)
	assert.Equal(t, []string{"claimed->cancelling"}, s.log())

	st, err = in.Commit(ctx, s, turn.Released, turn.Args{At: t0})
	require.NoError(t, err)
	assert.Equal(t, store.TurnCancelled, st.Move.To)
	got, err = s.GetTurn(ctx, "turn")
	require.NoError(t, err)
	assert.Equal(t, store.TurnCancelled, got.State)
	assert.Equal(t, "cancelled", got.Status().State)
}

// TestInstanceCommitStale: a Commit whose write fails takes its move back:
// Ref is what it was and the next event fires from there.
func TestInstanceCommitStale(t *testing.T) {
	s := newStore(t)
	tr := seedTurn(t, s, "turn", store.TurnRunning)
	// The instance believes the Turn is still claimed; the store moved on.
	in := turn.NewInstance(turn.Ref{ID: tr.ID, RunID: tr.RunID, State: store.TurnClaimed})
	before := in.Ref()

	_, err := in.Commit(ctx, s, turn.Cancel, turn.Args{At: t0})
	require.ErrorIs(t, err, store.ErrStale)
	assert.NotErrorIs(t, err, turn.ErrRejected)
	assert.Equal(t, before, in.Ref(), "the failed move is taken back")
	got, err := s.GetTurn(ctx, "turn")
	require.NoError(t, err)
	assert.Equal(t, store.TurnRunning, got.State, "the store is untouched")

	// The instance still fires from claimed: start is allowed there.
	st, err := in.Fire(turn.Start, turn.Args{At: t0})
	require.NoError(t, err)
	assert.Equal(t, store.TurnClaimed, st.Move.From)
	in.Written()

	// A write error other than ErrStale is taken back too.
	in = turn.NewInstance(turn.Ref{ID: "missing", RunID: runID, State: store.TurnClaimed})
	_, err = in.Commit(ctx, s, turn.Cancel, turn.Args{At: t0})
	require.ErrorIs(t, err, store.ErrNotFound)
	assert.Equal(t, turn.Ref{ID: "missing", RunID: runID, State: store.TurnClaimed}, in.Ref())
}

// TestInstanceCommitWaitsForWritten: Commit does not step before every
// move fired before it was reported written; then it steps from the state
// those moves reached and writes after them.
func TestInstanceCommitWaitsForWritten(t *testing.T) {
	s := &recordingStore{Store: newStore(t)}
	in := turn.NewInstance(turn.RefOf(seedTurn(t, s.Store, "turn", store.TurnClaimed)))

	// Two moves fired, neither written yet.
	start, err := in.Fire(turn.Start, turn.Args{At: t0})
	require.NoError(t, err)
	sent, err := in.Fire(turn.StartSent, turn.Args{At: t0})
	require.NoError(t, err)

	entered := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		close(entered)
		st, err := in.Commit(ctx, s, turn.RunCompleted, turn.Args{At: t0})
		done <- result{st, err}
	}()
	<-entered
	for range 100 {
		runtime.Gosched()
		require.False(t, len(done) > 0, "Commit returned before any earlier move was written")
	}

	require.NoError(t, s.MoveTurn(ctx, start.Move))
	in.Written()
	for range 100 {
		runtime.Gosched()
		require.False(t, len(done) > 0, "Commit returned before every earlier move was written")
	}

	require.NoError(t, s.MoveTurn(ctx, sent.Move))
	in.Written()
	res := <-done
	require.NoError(t, res.err)
	assert.Equal(t, store.TurnRunning, res.st.Move.From)
	assert.Equal(t, store.TurnCompleted, res.st.Move.To)
	assert.Equal(t, []string{"claimed->starting", "starting->running", "running->completed"}, s.log(),
		"Commit writes after the moves fired before it")
	got, err := s.GetTurn(ctx, "turn")
	require.NoError(t, err)
	assert.Equal(t, store.TurnCompleted, got.State)
}

// TestInstanceCommitContext: a Commit that waits for a move never reported
// written returns its context's error, steps nothing and writes nothing.
func TestInstanceCommitContext(t *testing.T) {
	s := &recordingStore{Store: newStore(t)}
	in := turn.NewInstance(turn.RefOf(seedTurn(t, s.Store, "turn", store.TurnClaimed)))
	start, err := in.Fire(turn.Start, turn.Args{At: t0})
	require.NoError(t, err)
	ch := in.Changed()

	cctx, cancel := context.WithCancel(ctx)
	entered := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		close(entered)
		st, err := in.Commit(cctx, s, turn.StartSent, turn.Args{At: t0})
		done <- result{st, err}
	}()
	<-entered
	cancel()
	res := <-done
	require.ErrorIs(t, res.err, context.Canceled)
	assert.ErrorContains(t, res.err, "earlier moves")
	assert.Equal(t, turn.Step{}, res.st)
	assert.Empty(t, s.log(), "nothing is written")
	assert.Equal(t, store.TurnStarting, in.Ref().State, "Commit stepped nothing")
	assert.False(t, closed(ch))

	// Once the earlier move is written, a Commit goes through.
	require.NoError(t, s.MoveTurn(ctx, start.Move))
	in.Written()
	st, err := in.Commit(ctx, s, turn.StartSent, turn.Args{At: t0})
	require.NoError(t, err)
	assert.Equal(t, store.TurnRunning, st.Move.To)
	assert.Equal(t, []string{"claimed->starting", "starting->running"}, s.log())
}

// TestInstanceCancelStartRace: the API's cancellation (Commit) and the
// worker's start (Fire, then its write) race on a claimed instance:
// exactly one wins, the other is refused by the table, and the store ends
// in the winner's state.
func TestInstanceCancelStartRace(t *testing.T) {
	s := newStore(t)
	var cancels, starts int
	for i := range 200 {
		id := fmt.Sprintf("turn-%d", i)
		in := turn.NewInstance(turn.RefOf(seedTurn(t, s, id, store.TurnClaimed)))

		var wg sync.WaitGroup
		begin := make(chan struct{})
		var cancelErr, startErr error
		var cancelStep turn.Step
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-begin
			cancelStep, cancelErr = in.Commit(ctx, s, turn.Cancel, turn.Args{At: t0})
		}()
		go func() {
			defer wg.Done()
			<-begin
			st, err := in.Fire(turn.Start, turn.Args{At: t0})
			startErr = err
			if err != nil {
				return
			}
			defer in.Written()
			if werr := s.MoveTurn(ctx, st.Move); werr != nil {
				startErr = werr
			}
		}()
		close(begin)
		wg.Wait()

		got, err := s.GetTurn(ctx, id)
		require.NoError(t, err)
		switch {
		case cancelErr == nil && startErr == nil:
			t.Fatalf("%s: both the cancellation and the start won", id)
		case cancelErr == nil:
			cancels++
			require.ErrorIs(t, startErr, turn.ErrRejected, "%s: the start loses to the cancellation", id)
			assert.True(t, cancelStep.ReleaseAdmission)
			assert.Equal(t, store.TurnCancelling, got.State)
		case startErr == nil:
			starts++
			require.ErrorIs(t, cancelErr, turn.ErrRejected, "%s: the cancellation loses to the start", id)
			assert.Equal(t, store.TurnStarting, got.State)
		default:
			t.Fatalf("%s: neither won: cancel %v, start %v", id, cancelErr, startErr)
		}
		assert.Equal(t, turn.RefOf(got), in.Ref(), "%s: the instance and the store agree", id)
	}
	t.Logf("cancellation won %d times, start %d times", cancels, starts)
}

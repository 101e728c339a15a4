package turn

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentwire/agentwire/core/store"
)

// Instance is the turn machine of one Turn this process's worker claimed.
// Its state runs ahead of the store by the moves not yet written; those
// reach the store in the order they were made: a move fired with Fire is
// written by its caller (in a connection's batch, say), which reports it
// with Written, and Commit waits for every earlier move before it writes
// its own.
//
// It is safe for concurrent use: the worker, the API and the connection's
// loop each fire on it.
type Instance struct {
	mu      sync.Mutex
	ref     Ref
	pending int           // moves fired and not yet written
	written chan struct{} // closed when pending drops
	changed chan struct{} // closed at the next move
}

// NewInstance is the machine of a Turn in the state r names.
func NewInstance(r Ref) *Instance {
	return &Instance{ref: r, changed: make(chan struct{}), written: make(chan struct{})}
}

// Ref is the Turn as this process sees it (moves not yet written
// included).
func (i *Instance) Ref() Ref {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.ref
}

// Changed is closed at the instance's next move (also one that Commit
// takes back when its write fails, so a waiter reads Ref again).
func (i *Instance) Changed() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.changed
}

// Fire steps the instance. A move it returns is the caller's to write,
// after every move it fired before, and to report with Written once the
// write returned (either way).
func (i *Instance) Fire(e Event, a Args) (Step, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	s, err := i.fire(e, a)
	if err == nil && s.Moved() {
		i.pending++
	}
	return s, err
}

// Written reports that the write of a move Fire returned has returned.
func (i *Instance) Written() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.pending == 0 {
		return // more reports than moves: nothing is waiting for one
	}
	i.pending--
	close(i.written)
	i.written = make(chan struct{})
}

// Commit fires e once every earlier move was written and writes its move
// to s itself, all under the instance's lock, so nothing fires between the
// step and its write. A write that fails takes the move back.
func (i *Instance) Commit(ctx context.Context, s store.Store, e Event, a Args) (Step, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for i.pending > 0 {
		w := i.written
		i.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			i.mu.Lock()
			return Step{}, fmt.Errorf("turn: waiting for Turn %s's earlier moves: %w", i.ref.ID, ctx.Err())
		}
		i.mu.Lock()
	}
	before := i.ref
	st, err := i.fire(e, a)
	if err != nil || !st.Moved() {
		return st, err
	}
	if err := s.MoveTurn(ctx, st.Move); err != nil {
		i.ref = before
		return Step{}, fmt.Errorf("turn: writing Turn %s's move from %s to %s: %w", before.ID, st.Move.From, st.Move.To, err)
	}
	return st, nil
}

// fire is Fire with i.mu held.
func (i *Instance) fire(e Event, a Args) (Step, error) {
	s, err := Fire(i.ref, e, a)
	if err != nil || !s.Moved() {
		return s, err
	}
	i.ref.State = s.Move.To
	switch {
	case s.Move.Claim != nil:
		i.ref.RunID = s.Move.Claim.RunID
	case s.Move.To == store.TurnQueued:
		i.ref.RunID = ""
	}
	close(i.changed)
	i.changed = make(chan struct{})
	return s, nil
}

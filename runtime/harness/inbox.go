package harness

import (
	"context"
	"sync"

	"github.com/agentwire/agentwire/wire"
)

// Inbox is the Steerer of an Executor whose Turn takes active input as
// more input, when it is ready for it: embed it in the Executor, call
// Begin when a Turn starts, Take whenever the Turn can use more input,
// Finish when it is about to end, and End (deferred) once it ends.
//
// Steer's return is the native write (the input waits in the inbox);
// Take is the acceptance, reported through the Turn's Notify as the input
// is handed to the Turn. Finish closes the inbox only when nothing is
// waiting, under the same lock Steer writes under, so an input Steer
// wrote is always either taken by the Turn or refused by End, never lost.
// The zero Inbox is closed and ready to use.
type Inbox struct {
	mu      sync.Mutex
	turn    *Turn // the open Turn; nil when closed
	waiting []waitingInput
}

type waitingInput struct {
	id string
	in wire.MessageInput
}

// Begin opens the inbox for t: Steer writes into it from now on.
func (b *Inbox) Begin(t Turn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.turn, b.waiting = &t, nil
}

// Steer implements Steerer: it writes in into the open Turn runID. It
// refuses with ErrRunInactive when runID is not the open Turn, and with
// an *UnsupportedError when the Turn's declaration does not take in
// (CheckSteer).
func (b *Inbox) Steer(_ context.Context, runID, inputID string, in wire.MessageInput) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.turn == nil || b.turn.RunID != runID {
		return ErrRunInactive
	}
	if err := CheckSteer(b.turn.Declaration.Capabilities, in); err != nil {
		return err
	}
	b.waiting = append(b.waiting, waitingInput{id: inputID, in: in})
	return nil
}

// Take hands the Turn every input written since the last Take, their
// messages in order as one input, and reports each accepted; nil when
// none is waiting.
func (b *Inbox) Take() wire.MessageInput {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out wire.MessageInput
	for _, w := range b.waiting {
		out = append(out, w.in...)
		b.notify(InputNotice{InputID: w.id, Accepted: true})
	}
	b.waiting = nil
	return out
}

// Finish closes the inbox when no input is waiting and reports whether
// it did; with input waiting it stays open and the Turn should Take it
// before it ends.
func (b *Inbox) Finish() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiting) > 0 {
		return false
	}
	b.turn = nil
	return true
}

// End closes the inbox whatever is waiting: a Turn that ends early (it
// failed, or was cancelled) refuses its untaken input as run_inactive.
// After Finish it does nothing.
func (b *Inbox) End() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiting {
		b.notify(InputNotice{InputID: w.id, Code: wire.SteerCodeRunInactive, Error: "the Turn ended before it took the input"})
	}
	b.turn, b.waiting = nil, nil
}

// notify reports n through the open Turn's Notify, when it listens.
func (b *Inbox) notify(n InputNotice) {
	if b.turn != nil && b.turn.Notify != nil {
		b.turn.Notify(n)
	}
}

var _ Steerer = (*Inbox)(nil)

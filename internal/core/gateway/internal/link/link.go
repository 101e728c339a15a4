// Package link holds what every lifecycle module of Core's gateway uses of
// a connection: following one instance it drives from off the loop
// (Tracker), reading a firing's frame (Payload), and telling a frame that
// may have left from one that did not (IsWriteError).
//
// A lifecycle module (export, ...) keeps its records, its machine's Core
// hooks and the procedure that drives its frames; the gateway composes one
// per connection. Modules import link, never each other or the gateway.
package link

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Conn is what a lifecycle module that keeps durable records uses of its
// connection; its Deps embed it.
type Conn struct {
	Clock peer.Clock
	Log   *slog.Logger
	// StoreCtx bounds one store operation; from a hook it also makes what
	// the connection's loop wrote before durable first.
	StoreCtx func() (context.Context, context.CancelFunc)
	// Released is called once the module's work no longer holds what it
	// held (a Session's owner, an Environment): work waiting for it may be
	// placed now.
	Released func()
}

// Payload returns the payload of the frame f fired for, as T; false when f
// fired for no frame (a timer, a local event) or for another payload.
func Payload[T any](f *fsm.Firing[*peer.Event]) (T, bool) {
	var zero T
	if f.Arg == nil || f.Arg.Msg == nil {
		return zero, false
	}
	p, ok := f.Arg.Msg.Payload.(T)
	return p, ok
}

// IsWriteError reports whether a send failed while its frame was being
// written: it may have reached the peer, so nothing is replayed.
func IsWriteError(err error) bool {
	var we *peer.WriteError
	return errors.As(err, &we)
}

// Bounded is err's text cut to 300 bytes, for a reason a caller reads.
func Bounded(err error) string {
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Tracker follows one instance that a procedure drives from off the
// connection's loop: the state the procedure's last frame left it in, the
// state it is in now, and its end. Send and Await run on the procedure's
// goroutine, Moved on the loop.
type Tracker struct {
	machine string
	id      string

	mu        sync.Mutex
	state     fsm.StateID
	sentState fsm.StateID
	end       string // the terminal state's name once the instance ended
	outcome   fsm.Outcome
	signal    chan struct{}
}

// NewTracker follows the instance of machine keyed id.
func NewTracker(machine, id string) *Tracker {
	return &Tracker{machine: machine, id: id, signal: make(chan struct{}, 1)}
}

// Send queues payload as the instance's next frame and waits until it was
// written or refused. Once the frame's own event has fired, the state it
// led to is noted as the state the send left (Await waits for a move
// past it).
func (t *Tracker) Send(ctx context.Context, pc *peer.Conn, payload wire.Payload) error {
	return t.SendEncoded(ctx, pc, payload, nil)
}

// SendEncoded is Send for a frame the caller already encoded
// (peer.Outbound.Encoded); encoded is the caller's again once it returns.
func (t *Tracker) SendEncoded(ctx context.Context, pc *peer.Conn, payload wire.Payload, encoded []byte) error {
	done := make(chan error, 1)
	err := pc.Do(ctx, func(d *peer.Driver) {
		d.Send(peer.Outbound{ID: t.id, Payload: payload, Encoded: encoded}, func(err error) {
			if i, ok := d.Lookup(peer.Key{Machine: t.machine, ID: t.id}); ok {
				t.mu.Lock()
				t.state, t.sentState = i.State(), i.State()
				t.mu.Unlock()
			}
			done <- err
		})
	})
	if err != nil {
		return err
	}
	select {
	case err = <-done:
		return err
	case <-pc.Done():
		select {
		case err = <-done:
			return err
		default:
			return peer.ErrClosed
		}
	}
}

// Moved records where the instance stands after a step (the connection's
// Saver calls it on the loop) and wakes Await.
func (t *Tracker) Moved(i *peer.Instance) {
	t.mu.Lock()
	t.state = i.State()
	if i.Terminal() {
		t.end, t.outcome = i.StateName(), i.Outcome()
	}
	t.mu.Unlock()
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// Await waits until the instance moved past the state the last Send left
// it in, or ended; false when the connection or ctx ended first. The
// machine's own timers bound the wait.
func (t *Tracker) Await(ctx context.Context, pc *peer.Conn) bool {
	return t.await(ctx, pc, func() bool { return t.end != "" || t.state != t.sentState })
}

// AwaitEnd waits until the instance ended; false when the connection or
// ctx ended first.
func (t *Tracker) AwaitEnd(ctx context.Context, pc *peer.Conn) bool {
	return t.await(ctx, pc, func() bool { return t.end != "" })
}

// await waits until cond, read under t.mu, holds.
func (t *Tracker) await(ctx context.Context, pc *peer.Conn, cond func() bool) bool {
	for {
		t.mu.Lock()
		ok := cond()
		t.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-t.signal:
		case <-pc.Done():
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Signal is woken (without blocking, at most one pending) after each
// Moved, for a waiter that waits on more than Await does.
func (t *Tracker) Signal() <-chan struct{} { return t.signal }

// End returns the terminal state's name and outcome; "" while the instance
// has not ended.
func (t *Tracker) End() (string, fsm.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.end, t.outcome
}

// State returns the state the instance was last seen in.
func (t *Tracker) State() fsm.StateID {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

package execution

import (
	"context"
	"sync"

	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// maxEmitWindow bounds the frames one Run may have queued on the
// connection and not yet written. With one frame at a time (each emit
// waiting for its write), a delta stream handed the connection's loop one
// frame per turn and woke the Turn's goroutine for every write; with a
// window, the loop takes the frames that queued up meanwhile and writes
// them back to back (BENCHMARKS.md, the daemon section).
const maxEmitWindow = 16

// emitWindow is the window of each Run: the Runs of a full connection
// (MaxActive) together hold at most half of the driver's send queue, so a
// window never makes a send fail with a full queue; at least 1.
func (s *Session) emitWindow() int {
	return max(1, min(maxEmitWindow, peer.DefaultLimits.MaxPendingSends/(2*s.cfg.MaxActive)))
}

// emitter sends one Run's events, in order.
type emitter struct {
	s     *Session
	runID string
	slots chan struct{} // one per frame queued and not yet written

	mu  sync.Mutex
	err error // a frame that failed, not yet reported
}

func (s *Session) newEmitter(runID string) *emitter {
	return &emitter{s: s, runID: runID, slots: make(chan struct{}, s.emitWindow())}
}

// emit queues p behind the Run's earlier frames and returns once the
// connection's loop has taken it; it waits while the window is full. The
// failure of an earlier frame (refused, not written, the connection lost)
// is returned by the next emit, instead of queueing p.
//
// decision: an emit error still means "this Run's events cannot all be
// sent; settle" (harness.Emit), reported at most one frame late; frames
// never go out of order, and native work stays off the receive loop
// (daemon-protocol.txt:116).
func (e *emitter) emit(ctx context.Context, p wire.Payload) error {
	if err := e.takeErr(); err != nil {
		return err
	}
	conn := e.s.conn
	if conn == nil {
		return errConnectionGone
	}
	select {
	case e.slots <- struct{}{}:
	case <-conn.Done():
		return peer.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := conn.Queue(ctx, peer.Outbound{ID: e.runID, Payload: p}, e.sent); err != nil {
		<-e.slots // the loop did not take it: sent is never called
		return err
	}
	return nil
}

// sent runs on the loop with the outcome of one frame.
func (e *emitter) sent(err error) {
	<-e.slots
	if err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
	}
}

// takeErr returns the failure not yet reported, once.
func (e *emitter) takeErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.err
	e.err = nil
	return err
}

package execution

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentwire/agentwire/fsm/interaction"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/bounded"
	"github.com/agentwire/agentwire/runtime/harness"
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

	mu    sync.Mutex
	err   error         // a frame that failed, not yet reported
	gate  chan struct{} // closed when the last hold ends; nil when none
	holds int
}

// hold makes the Run's later frames (and its done) wait until release:
// an answer handed to the Harness lets the Turn go on at once, and what it
// does next must reach Core after the answer's applied receipt, which
// would otherwise race it onto the connection.
//
// decision: the receipt of an applied decision precedes every frame the
// Turn sends after the answer (daemon-protocol.txt:144: the receipt says
// the decision settled; Core should not see the Turn's consequences of it
// first). A hold lasts one bounded native write plus one loop turn.
func (e *emitter) hold() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gate == nil {
		e.gate = make(chan struct{})
	}
	e.holds++
}

// release ends one hold.
func (e *emitter) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holds--; e.holds == 0 {
		close(e.gate)
		e.gate = nil
	}
}

// waitHeld returns once no hold is in force, the connection ended or ctx
// did.
func (e *emitter) waitHeld(ctx context.Context) {
	e.mu.Lock()
	g := e.gate
	e.mu.Unlock()
	if g == nil {
		return
	}
	var gone <-chan struct{}
	if c := e.s.conn; c != nil {
		gone = c.Done()
	}
	select {
	case <-g:
	case <-gone:
	case <-ctx.Done():
	}
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
	e.waitHeld(ctx)
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
	out := peer.Outbound{ID: e.runID, Payload: p}
	if w, ok := p.(harness.Withdrawal); ok {
		// permission_cancel travels under the interaction ID
		// (daemon-protocol.txt:76), not the Run ID.
		out = peer.Outbound{ID: w.RequestID, Payload: wire.PermissionCancel{}}
	}
	if err := conn.Queue(ctx, out, e.sent); err != nil {
		<-e.slots // the loop did not take it: sent is never called
		return err
	}
	return nil
}

// sent runs on the loop with the outcome of one frame. A frame the driver
// refused before it left also fails the Run (refusedFrame).
func (e *emitter) sent(err error) {
	<-e.slots
	if err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
		var se *peer.SendError
		if errors.As(err, &se) {
			e.s.refusedFrame(e.runID, se)
		}
	}
}

// refusedFrame (on the loop) fails a Run one of whose frames the driver
// refused before it left: the Run's stream can no longer say what the
// native side did, and an adapter waiting for the answer to a question
// that never went out would wait forever. The native work is cancelled,
// and when it settles an error frame naming the refused frame precedes
// done, so Core sees a failed Turn rather than a short or empty one that
// completed (publishDone).
//
// decision: the adapter's own reading of the emit error ("settle with
// what was produced") does not decide the outcome: a Turn whose frame was
// refused never completes normally (daemon-protocol.txt:106: an execution
// error is followed by done and belongs to its outcome).
func (s *Session) refusedFrame(runID string, se *peer.SendError) {
	r := s.runs[runID]
	if r == nil || r.settled || r.failure != "" {
		return
	}
	r.failure = refusalText(se)
	s.cfg.Logger.Warn("a frame of the Run was refused; the Run fails", "run_id", runID, "err", se)
	r.cancel()
}

// refusalText says why a Run's frame was refused, in words for Core.
//
// decision: decision and permission-cancel envelopes carry only the
// interaction ID (daemon-protocol.txt:76, :80), so Core and the Runtime
// can tell two questions apart only by it: an ID is unique on a
// connection for as long as either peer retains its interaction, and a
// Harness that reuses one (a request_id or ask_id of an earlier Turn, or
// of another open question) fails its Turn with this error instead of
// asking a question no answer could reach. Function call IDs are scoped
// by their Run ID and may repeat across Runs.
func refusalText(se *peer.SendError) string {
	if se.Key.Machine == interaction.Table.Name && (se.Type == wire.TypePermissionRequest || se.Type == wire.TypePromptForUserChoice) {
		return boundedError(fmt.Errorf("the Harness asked %s with interaction ID %q, which this connection still holds "+
			"for an earlier question; interaction IDs must be unique on a connection, so the Turn ends", se.Type, bounded.Text(se.Key.ID, 64)))
	}
	return boundedError(fmt.Errorf("the Runtime could not send the Run's %s frame (%w), so the Turn ends", se.Type, se.Err))
}

// takeErr returns the failure not yet reported, once.
func (e *emitter) takeErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.err
	e.err = nil
	return err
}

// Package read is the workspace_read lifecycle on Core's side of one
// connection (daemon-protocol.txt:179–183): the reads in flight with their
// scoped authorization, the fenced owners, the machine's Core hooks, and
// Once, which sends one read and waits for the machine to settle it.
// Where a read goes (a Run, or an idle Session's read-only handle) and
// when its data may leave is the gateway's.
package read

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_read"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/link"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// Unknown is the reason of a read that broke off, timed out, was not sent
// or whose result was unclear: it proves nothing about the workspace.
const Unknown = "read_unknown"

// Ended is a read that returned no result: the Runtime's finite rejection
// (Rejected, its code), or Unknown.
type Ended struct {
	Rejected bool
	Code     string
	Detail   string
}

func (e *Ended) Error() string { return fmt.Sprintf("read: %s: %s", e.Code, e.Detail) }

// Book is one connection's reads and fenced owners. Its hooks run on the
// connection's loop, Once on a worker.
type Book struct {
	mu     sync.Mutex
	reads  map[string]*rec // by operation ID
	fenced map[string]bool // owners after an unknown read
}

// rec is Core's record of one workspace_read it sent: the read's scoped
// authorization, which GuardOwnerReadable checks and release_reservation
// revokes, and the worker's waiter.
//
// decision: no credential travels with a read (callers cannot supply one,
// daemon-protocol.txt:179); the scoped read credential Core holds is this
// record, naming the one operation, its owner and its Environment. It is
// revoked when the read settles, however it settles, and dropped by the
// worker after a read that never dispatched (daemon-protocol.txt:183).
type rec struct {
	req     wire.WorkspaceRead
	owner   string // "handle:<h>" or "run:<id>", on this connection
	revoked bool   // on the loop only
	done    chan settledRead
	sent    bool // on the loop only
}

type settledRead struct {
	outcome fsm.Outcome
	result  wire.WorkspaceReadResult
}

func (r *rec) settle(s settledRead) {
	if !r.sent {
		r.sent = true
		r.done <- s
	}
}

func (b *Book) rec(opID string) *rec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reads[opID]
}

// Once sends req on pc for owner ("handle:<h>" or "run:<id>") and waits
// for the machine to settle it; any end but a completed read is an
// *Ended. It never retries (daemon-protocol.txt:181). ctx is the
// gateway's lifetime; the machine's read_op timer bounds the wait.
func (b *Book) Once(ctx context.Context, pc *peer.Conn, req wire.WorkspaceRead, owner string) (wire.WorkspaceReadResult, error) {
	opID := credential.NewID("read")
	r := &rec{req: req, owner: owner, done: make(chan settledRead, 1)}
	b.mu.Lock()
	if b.fenced[owner] {
		b.mu.Unlock()
		return wire.WorkspaceReadResult{}, &Ended{Code: Unknown, Detail: "an earlier read on this owner is unknown"}
	}
	if b.reads == nil {
		b.reads, b.fenced = map[string]*rec{}, map[string]bool{}
	}
	b.reads[opID] = r
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.reads, opID)
		b.mu.Unlock()
	}()
	if err := pc.Send(ctx, peer.Outbound{ID: opID, Payload: req}); err != nil && !link.IsWriteError(err) {
		// Refused before it left, or the connection went first: nothing
		// was dispatched. A failed write is dispatched (send_failed), and
		// the read_op timer bounds its wait.
		return wire.WorkspaceReadResult{}, &Ended{Code: Unknown, Detail: "workspace_read was not sent: " + link.Bounded(err)}
	}
	var s settledRead
	select {
	case s = <-r.done:
	case <-pc.Done():
		select {
		case s = <-r.done:
		default:
			s.outcome = fsm.OutcomeUnknown
		}
	case <-ctx.Done():
		return wire.WorkspaceReadResult{}, &Ended{Code: Unknown, Detail: "Core is shutting down"}
	}
	switch s.outcome {
	case fsm.OutcomeSuccess:
		return s.result, nil
	case fsm.OutcomeFailure:
		return wire.WorkspaceReadResult{}, &Ended{Code: s.result.ErrorCode, Rejected: true}
	}
	return wire.WorkspaceReadResult{}, &Ended{Code: Unknown, Detail: "the read broke off or its result was unclear"}
}

// Hooks returns the workspace_read machine's Core hooks over b.
func (b *Book) Hooks() workspace_read.CoreHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

// GuardOwnerReadable: the read is one this gateway registered, not yet
// revoked, aimed at the owner it was registered for on this connection,
// with the exact Environment, and the owner is not fenced.
func (h hooks) GuardOwnerReadable(f *fsm.Firing[*peer.Event]) bool {
	p, ok := link.Payload[wire.WorkspaceRead](f)
	if !ok {
		return false
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	r := h.b.reads[f.Arg.Key.ID]
	return r != nil && !r.revoked && !h.b.fenced[r.owner] &&
		p.Handle == r.req.Handle && p.RunID == r.req.RunID && p.EnvironmentID == r.req.EnvironmentID
}

// GuardCloseAcknowledged: the close is acknowledged and the result
// answers the request it settles.
//
// decision: a result beyond the request's bounds (more bytes or entries
// than asked, a listing for a byte read) is ambiguous, so it goes the
// unknown way and is never returned (daemon-protocol.txt:181).
func (h hooks) GuardCloseAcknowledged(f *fsm.Firing[*peer.Event]) bool {
	res, ok := link.Payload[wire.WorkspaceReadResult](f)
	r := h.b.rec(f.Arg.Key.ID)
	return ok && r != nil && guard.CloseAcknowledged(res) && res.Answers(r.req) == nil
}

// DoHoldReservation: an idle read's worker took the Session's reservation
// before execution_prepare and keeps it through the read and the release;
// a read aimed at a Run holds none. Nothing more to take here.
func (h hooks) DoHoldReservation(*fsm.Firing[*peer.Event]) error { return nil }

// DoReleaseReservation revokes the read's scoped authorization. The
// Session's reservation of an idle read is dropped by its worker once the
// handle's close settled, still before the result is delivered
// (daemon-protocol.txt:183: kept through the bounded read and release).
func (h hooks) DoReleaseReservation(f *fsm.Firing[*peer.Event]) error {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if r := h.b.reads[f.Arg.Key.ID]; r != nil {
		r.revoked = true
	}
	return nil
}

// DoDeliverResult hands the settled result to the read's worker, which
// returns it publicly only after the close (daemon-protocol.txt:183).
func (h hooks) DoDeliverResult(f *fsm.Firing[*peer.Event]) error { return h.settle(f) }

// DoRecordRejection hands the finite code, without data, to the worker.
func (h hooks) DoRecordRejection(f *fsm.Firing[*peer.Event]) error { return h.settle(f) }

// DoFenceOwner: no later read on this owner; the worker gets unknown.
func (h hooks) DoFenceOwner(f *fsm.Firing[*peer.Event]) error {
	r := h.b.rec(f.Arg.Key.ID)
	if r == nil {
		return nil
	}
	h.b.mu.Lock()
	h.b.fenced[r.owner] = true
	h.b.mu.Unlock()
	return h.settle(f)
}

// settle passes the outcome the table gives the step's target state
// (never a state name) and the result frame, if any, to the worker.
func (h hooks) settle(f *fsm.Firing[*peer.Event]) error {
	r := h.b.rec(f.Arg.Key.ID)
	if r == nil {
		return fmt.Errorf("gateway: no record of read %s", f.Arg.Key.ID)
	}
	s := settledRead{outcome: f.Table.State(f.To).Outcome}
	if res, ok := link.Payload[wire.WorkspaceReadResult](f); ok && s.outcome != fsm.OutcomeUnknown {
		s.result = res
	}
	r.settle(s)
	return nil
}

// DoDetachObserver: the worker, not the public caller, waits for the
// read, so a caller that gives up detaches nothing; the bounded waiter
// keeps running to the release (daemon-protocol.txt:181).
func (h hooks) DoDetachObserver(*fsm.Firing[*peer.Event]) error { return nil }

// DoCloseAdmission: Core sends one read per registered record and never
// aims one at a closed owner, so there is nothing to close.
func (h hooks) DoCloseAdmission(*fsm.Firing[*peer.Event]) error { return nil }

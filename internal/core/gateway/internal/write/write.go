// Package write is the workspace_write lifecycle on Core's side of one
// connection (daemon-protocol.txt:185): the writes in flight, the
// machine's Core hooks, which keep each write's durable record in step
// with the state the table moved to, and Run, which sends begin, the body
// in 64 KiB chunks (each awaiting its received offset) and commit,
// recording the commit attempt before commit can leave. A write is never
// resent or replayed. Where a write goes and the Session's reservation
// around it are the gateway's.
package write

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_write"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/link"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Store is what the module needs of Core's store.
type Store interface {
	UnsettledWorkspaceWrite(ctx context.Context, sessionID string) (store.WorkspaceWrite, error)
	TransitionWorkspaceWrite(ctx context.Context, m store.Move, release bool, code, reason string) error
	OpenWorkspaceWrites(ctx context.Context) ([]store.WorkspaceWrite, error)
}

// Deps are the connection's parts the module uses. Released is called
// once a write released its Session's owner (Turns of the Session may be
// claimed again).
type Deps struct {
	link.Conn
	Store Store
}

// Result is how a write ended, as the machine settled it.
type Result struct {
	// State is the workspace_write machine's state: completed, rejected,
	// aborted (nothing reached the installer), unknown, or unconfirmed
	// (no receipt within the deadline; a late one may still settle it).
	State     string
	ErrorCode string
	Reason    string
	SizeBytes int64
}

// Move is the store's move of write id from one state of the
// workspace_write machine to another.
func Move(id, from, to string, at time.Time) store.Move {
	return store.Move{Machine: workspace_write.Name, Key: id, From: from, To: to, At: at}
}

// LossSettleWait bounds how long Run waits, after its connection closed,
// for the machine's connection_lost step to settle the write.
//
// decision: the loop fires connection_lost on every instance as it ends
// (daemon-protocol.txt:158); should that step not be seen in time, the
// caller is told what the durable record says (unknown while the owner is
// held), never an invented outcome.
var LossSettleWait = 5 * time.Second

// Book is one connection's writes in flight, by mutation ID. Its hooks
// run on the connection's loop, Run on a worker.
type Book struct {
	deps Deps
	mu   sync.Mutex
	recs map[string]*rec
}

// NewBook returns the writes of one connection.
func NewBook(deps Deps) *Book { return &Book{deps: deps, recs: map[string]*rec{}} }

// rec is Core's record of one write it sends; the Book's mu guards it.
type rec struct {
	t           *link.Tracker
	sessionID   string
	stored      string // the state the store last recorded
	inflightEnd int64
	last        wire.WorkspaceWriteResult
	end         *Result
	state       workspace_write.State // the state the last step left (Moved)
	pump        *pump
}

func (b *Book) rec(id string) *rec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recs[id]
}

func (b *Book) stored(r *rec) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return r.stored
}

// Run sends write id (reserved in the store in state first for
// sessionID) on pc: begin, the chunks (pump.go: each leaves once the
// previous frame was answered), then commit, and returns how the machine
// settled it. progress, when set, is told the bytes the Runtime confirmed
// as staged. ctx is the gateway's lifetime.
func (b *Book) Run(ctx context.Context, pc *peer.Conn, id, sessionID, first string, begin wire.WorkspaceWrite, body []byte, progress func(staged, total int64)) Result {
	r := &rec{t: link.NewTracker(workspace_write.Name, id), sessionID: sessionID, stored: first, state: workspace_write.StateBeginning}
	r.pump = newPump(b, r, pc, id, body)
	defer r.pump.close()
	b.mu.Lock()
	b.recs[id] = r
	b.mu.Unlock()
	r.pump.beginSent()
	err := r.t.Send(ctx, pc, begin)
	if err != nil && !link.IsWriteError(err) {
		// Refused before it left: a begin sent nothing at all.
		b.mu.Lock()
		delete(b.recs, id)
		b.mu.Unlock()
		sctx, cancel := b.deps.StoreCtx()
		defer cancel()
		// decision: a begin that never left reached no Runtime, so the
		// reservation is released as aborted, the table's end for an
		// upload that stopped before commit (daemon-protocol.txt:185).
		_ = b.deps.Store.TransitionWorkspaceWrite(sctx, Move(id, b.stored(r), workspace_write.StateAborted.String(), b.deps.Clock.Now().UTC()), true, "", "not_sent")
		return Result{State: workspace_write.StateAborted.String(), Reason: "not_sent"}
	}
	if err != nil || !r.pump.run(ctx, progress) {
		return b.stopped(ctx, pc, r)
	}
	// The commit attempt is recorded before the frame can leave: a Core
	// that stops after this point cannot tell whether the native writer
	// ran (daemon-protocol.txt:185).
	//
	// decision: the machine's record_commit_attempt runs after the send
	// event fired, which the driver fires once the write completed; so
	// Core stores the attempt here, before Send, and the hook only checks
	// it was stored. If the store refuses, commit is never sent and the
	// upload deadline aborts the write.
	sctx, cancel := b.deps.StoreCtx()
	committing := workspace_write.StateCommitting.String()
	err = b.deps.Store.TransitionWorkspaceWrite(sctx, Move(id, b.stored(r), committing, b.deps.Clock.Now().UTC()), false, "", "")
	cancel()
	if err != nil {
		b.deps.Log.Error("gateway: workspace write: the commit attempt could not be recorded; commit is not sent", "mutation_id", id, "err", err)
		return b.awaitEnd(ctx, pc, r)
	}
	b.mu.Lock()
	r.stored = committing
	b.mu.Unlock()
	_ = r.t.Send(ctx, pc, wire.WorkspaceWrite{Step: wire.StepCommit})
	return b.awaitEnd(ctx, pc, r)
}

// stopped is how a write ends whose chunks stopped before the last one
// was answered: a settlement, a chunk that failed to leave (the machine's
// deadlines settle it), or the connection or ctx gone.
func (b *Book) stopped(ctx context.Context, pc *peer.Conn, r *rec) Result {
	if e := b.end(r); e != nil {
		return *e
	}
	select {
	case <-pc.Done():
		return b.lossEnd(r)
	case <-ctx.Done():
		return b.lossEnd(r)
	default:
	}
	return b.awaitEnd(ctx, pc, r)
}

// frameBufs are chunk frame buffers, kept across writes: a 64 KiB chunk is
// an 87 KiB frame, and a fresh buffer per frame was most of a write's
// allocated bytes (issue 25).
var frameBufs = sync.Pool{New: func() any { return new([]byte) }}

// getFrameBuf returns a pooled buffer that holds a full chunk's frame of
// write id without growing.
func getFrameBuf(id string) *[]byte {
	buf := frameBufs.Get().(*[]byte)
	if n := wire.ChunkFrameCap(wire.ChunkBytes, id); cap(*buf) < n {
		*buf = make([]byte, 0, n)
	}
	return buf
}

func (b *Book) end(r *rec) *Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	return r.end
}

// awaitEnd waits until the machine settles the write (terminal, or
// unconfirmed at the upload deadline).
func (b *Book) awaitEnd(ctx context.Context, pc *peer.Conn, r *rec) Result {
	for {
		if e := b.end(r); e != nil {
			return *e
		}
		select {
		case <-r.t.Signal():
		case <-pc.Done():
			return b.lossEnd(r)
		case <-ctx.Done():
			return b.lossEnd(r)
		}
	}
}

// lossEnd waits, bounded, for connection_lost to settle the write.
func (b *Book) lossEnd(r *rec) Result {
	t := b.deps.Clock.NewTimer(LossSettleWait)
	defer t.Stop()
	for {
		if e := b.end(r); e != nil {
			return *e
		}
		select {
		case <-r.t.Signal():
		case <-t.C():
			return Result{State: workspace_write.StateUnknown.String(), Reason: "connection_lost"}
		}
	}
}

// ObserverCancelled tells write id's machine that its caller is gone; the
// write runs to its settlement.
func (b *Book) ObserverCancelled(ctx context.Context, pc *peer.Conn, id string) {
	_ = pc.Do(ctx, func(d *peer.Driver) {
		key := peer.Key{Machine: workspace_write.Name, ID: id}
		if _, ok := d.Lookup(key); ok {
			_ = d.Local(key, fsm.EventID(workspace_write.EventObserverCancelled), nil)
		}
	})
}

// Moved is the connection's Saver for write instances: it keeps the
// instance's state and, once the machine settled the write (terminal, or
// unconfirmed), its end. A loss that moves an unconfirmed write to unknown
// has no effect in the table; the durable state follows it here.
func (b *Book) Moved(i *peer.Instance) {
	b.mu.Lock()
	r := b.recs[i.Key.ID]
	if r == nil {
		b.mu.Unlock()
		return
	}
	st := workspace_write.State(i.State())
	settled := i.Terminal() || st == workspace_write.StateUnconfirmed
	stored := r.stored
	from := r.state
	r.state = st
	if settled && r.end == nil {
		r.end = &Result{State: i.StateName(), ErrorCode: r.last.ErrorCode, Reason: r.last.Reason, SizeBytes: r.last.SizeBytes}
	}
	if i.Terminal() {
		delete(b.recs, i.Key.ID)
	}
	b.mu.Unlock()
	if i.Terminal() && i.Outcome() == fsm.OutcomeUnknown && stored != i.StateName() {
		b.storeState(i.Key.ID, r, i.StateName(), false)
	}
	r.t.Moved(i)
	r.pump.moved(from, st)
}

// storeState moves the durable record to state; release frees the owner.
func (b *Book) storeState(id string, r *rec, state string, release bool) {
	b.mu.Lock()
	from, last := r.stored, r.last
	b.mu.Unlock()
	if from == state && !release {
		return
	}
	ctx, cancel := b.deps.StoreCtx()
	defer cancel()
	err := b.deps.Store.TransitionWorkspaceWrite(ctx, Move(id, from, state, b.deps.Clock.Now().UTC()), release, last.ErrorCode, last.Reason)
	if err != nil {
		b.deps.Log.Error("gateway: workspace write: record the machine's state", "mutation_id", id, "state", state, "err", err)
		return
	}
	b.mu.Lock()
	r.stored = state
	b.mu.Unlock()
	b.deps.Log.Info("gateway: workspace write recorded", "mutation_id", id, "state", state, "released", release, "code", last.ErrorCode)
	if release && b.deps.Released != nil {
		b.deps.Released()
	}
}

// Reconcile settles the open writes that match (all when match is nil)
// and whose connection is gone with the Core process that sent them, as
// the table says for process_exit: before a commit attempt nothing
// reached the installer (aborted, owner released); after it the outcome
// is unknown and the owner stays held. Nothing is resent. cause is the
// reason recorded on each write moved: a Core that owns its store alone
// passes every write left by its predecessors at start; a replica that
// reaped an expired lease passes the writes reserved under that lease's
// epoch.
func Reconcile(ctx context.Context, st Store, now time.Time, log *slog.Logger, cause string, match func(store.WorkspaceWrite) bool) {
	open, err := st.OpenWorkspaceWrites(ctx)
	if err != nil {
		log.Error("gateway: reconcile: open workspace writes", "err", err)
		return
	}
	for _, w := range open {
		if match != nil && !match(w) {
			continue
		}
		from, err := workspace_write.ParseState(w.State)
		if err != nil {
			log.Error("gateway: reconcile: workspace write in an unknown state; kept held", "mutation_id", w.MutationID, "state", w.State)
			continue
		}
		step, err := workspace_write.Transition(from, workspace_write.EventProcessExit, 0)
		if err != nil || step.Disposition() != fsm.Moved {
			continue // settled as far as the table goes (unknown): the operator resolves it
		}
		to := step.To()
		release := to.Outcome() != fsm.OutcomeUnknown
		err = st.TransitionWorkspaceWrite(ctx, Move(w.MutationID, w.State, to.String(), now), release, "", cause)
		if err != nil && !errors.Is(err, store.ErrStale) {
			log.Warn("gateway: reconcile: workspace write", "mutation_id", w.MutationID, "err", err)
			continue
		}
		log.Info("gateway: reconciled a workspace write whose Core process is gone", "mutation_id", w.MutationID,
			"device_id", w.DeviceID, "owner_epoch", w.OwnerEpoch, "from", w.State, "state", to.String(), "released", release, "cause", cause)
	}
}

// Hooks returns the workspace_write machine's Core hooks over b. They
// read the state the table moved to (f.To) and keep the durable record in
// step with it; they decide nothing.
func (b *Book) Hooks() workspace_write.CoreHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

// GuardOwnerFree reads the durable owner: the Session's one unsettled
// write in the store is this one (reserved before begin was sent).
func (h hooks) GuardOwnerFree(f *fsm.Firing[*peer.Event]) bool {
	r := h.b.rec(f.Arg.Key.ID)
	if r == nil {
		return false
	}
	ctx, cancel := h.b.deps.StoreCtx()
	defer cancel()
	w, err := h.b.deps.Store.UnsettledWorkspaceWrite(ctx, r.sessionID)
	return err == nil && w.MutationID == f.Arg.Key.ID
}

// GuardChunkInBounds: Core builds its chunks within the bounds; the
// Runtime's guard is the one that refuses (the table's decision).
func (h hooks) GuardChunkInBounds(f *fsm.Firing[*peer.Event]) bool {
	p, ok := link.Payload[wire.WorkspaceWrite](f)
	return ok && len(p.Data) > 0 && len(p.Data) <= wire.ChunkBytes
}

func (h hooks) GuardOffsetMatches(f *fsm.Firing[*peer.Event]) bool {
	res, ok := link.Payload[wire.WorkspaceWriteResult](f)
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	r := h.b.recs[f.Arg.Key.ID]
	return ok && r != nil && res.Offset == r.inflightEnd
}

// GuardDigestMatches: Core declares the digest of the body it sends.
func (h hooks) GuardDigestMatches(*fsm.Firing[*peer.Event]) bool { return true }

// DoReserveOwner: the reservation was stored before begin could leave
// (the gateway's WriteWorkspace), so there is nothing left to store.
//
// decision: the driver runs effects after the send event fired, i.e.
// after the frame was written; a reservation made here could follow a
// begin that already reached the Runtime, so Core reserves first
// (daemon-protocol.txt:185: "before public admission").
func (h hooks) DoReserveOwner(*fsm.Firing[*peer.Event]) error { return nil }

// DoRecordCommitAttempt checks that the attempt was stored before commit
// was written (Run stores it first).
func (h hooks) DoRecordCommitAttempt(f *fsm.Firing[*peer.Event]) error {
	if r := h.b.rec(f.Arg.Key.ID); r != nil && h.b.stored(r) != workspace_write.StateCommitting.String() {
		h.b.deps.Log.Error("gateway: workspace write: commit left without its recorded attempt", "mutation_id", f.Arg.Key.ID)
	}
	return nil
}

func (h hooks) DoReleaseOwner(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	if r := h.b.rec(f.Arg.Key.ID); r != nil {
		h.b.storeState(f.Arg.Key.ID, r, workspace_write.State(f.To).String(), true)
	}
	return nil
}

// DoMarkUnknown keeps the owner with the state the table moved to
// (unconfirmed at the deadline, unknown on a loss or an ambiguous
// receipt); the write is never replayed.
func (h hooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	if r := h.b.rec(f.Arg.Key.ID); r != nil {
		h.b.storeState(f.Arg.Key.ID, r, workspace_write.State(f.To).String(), false)
	}
	h.b.deps.Log.Warn("gateway: workspace write outcome unknown; the Session's mutation owner stays held", "mutation_id", f.Arg.Key.ID)
	return nil
}

// DoSettleLate: the late receipt's release follows in the same step
// (release_owner), which moves the record from unconfirmed.
func (h hooks) DoSettleLate(f *fsm.Firing[*peer.Event]) error {
	h.b.deps.Log.Info("gateway: workspace write settled by a late receipt", "mutation_id", f.Arg.Key.ID)
	return nil
}

func (h hooks) DoDetachObserver(f *fsm.Firing[*peer.Event]) error {
	h.b.deps.Log.Info("gateway: workspace write caller gone; the write runs to its settlement", "mutation_id", f.Arg.Key.ID)
	return nil
}

func (h hooks) keep(f *fsm.Firing[*peer.Event]) {
	res, ok := link.Payload[wire.WorkspaceWriteResult](f)
	if !ok {
		return
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if r := h.b.recs[f.Arg.Key.ID]; r != nil {
		r.last = res
	}
}

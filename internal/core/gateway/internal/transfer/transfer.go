// Package transfer is the transfer lifecycle on Core's side of one
// connection (daemon-protocol.txt:104): Environment initialization sent
// through runtime_prepare, one transfer at a time (begin, ready, each
// chunk awaiting its received offset, commit, completed). The transfer
// machine decides every outcome; the hooks keep the connection's one
// slot, and Initialize reads each transfer's end off the table.
//
// decision: an Environment is initialized on a connection the first time
// that connection is chosen for work of one of its Sessions (a Turn, or an
// idle read), before execution_prepare; the text leaves "when" to the
// Environment contract (daemon-protocol.txt:104). Eagerly pushing every
// Environment to every connecting device would install files of
// Environments the device never serves. Transfer state is connection-local
// (daemon-protocol.txt:78), so a new connection initializes afresh when it
// is next used: that is a new initialization, not a replay of the old one
// (daemon-protocol.txt:159), and an interrupted transfer is never resumed.
package transfer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	transferfsm "github.com/agentwire/agentwire/fsm/transfer"
	"github.com/agentwire/agentwire/internal/core/envinit"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/link"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// CommitWait bounds Core's wait for the commit's result. The machine's
// budget ends at commit (application time is not counted), so Initialize
// bounds its own wait.
//
// decision: 120 s, the reference's transfer bound (wire-reference.md §4);
// a commit still unanswered then is reported unknown while the machine
// keeps the connection's slot (nothing is replayed, daemon-protocol.txt:159).
var CommitWait = 120 * time.Second

// Book is one connection's transfers and the Environments initialized on
// it. Its hooks run on the connection's loop, Initialize on a worker.
type Book struct {
	mu    sync.Mutex
	slot  string          // the transfer holding the connection's one slot
	recs  map[string]*rec // by transfer ID, until settled
	inits map[string]*env // by Core Environment ID
	busy  int             // initializations running (the scheduler avoids the connection)
	sem   chan struct{}   // one initialization at a time
	once  sync.Once
}

func (b *Book) init() {
	b.once.Do(func() {
		b.recs, b.inits, b.sem = map[string]*rec{}, map[string]*env{}, make(chan struct{}, 1)
	})
}

// env is an Environment's initialization on one connection: done, failed
// for good on this connection (the next connection starts afresh), or
// stopped by a transient refusal before step next, where a later attempt
// on this connection goes on (completed steps are not sent again).
type env struct {
	done    bool
	failed  bool
	failure store.Initialization
	next    int
}

// rec is one transfer Core sent; the Book's mu guards it.
type rec struct {
	t           *link.Tracker
	inflightEnd int64 // the offset the chunk in flight ends at
	last        wire.RuntimePrepareResult
}

// end is how one transfer ended, as the table says.
type end struct {
	state   string // the transfer machine's state, or not_sent, commit_unanswered, connection_lost
	outcome fsm.Outcome
	result  wire.RuntimePrepareResult
	retry   bool // nothing was applied and the cause is not the transfer's own
}

// Busy reports whether an initialization runs on the connection: the
// worker places no other work there meanwhile, since the Runtime
// initializes only while nothing is active and an installation must not
// race a Turn.
func (b *Book) Busy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy > 0
}

// Outcome is what an initialization attempt on one connection gave.
type Outcome struct {
	OK    bool
	Retry bool // nothing applied, cause transient: the work may be placed again
	// Status is the outcome (its Outcome, Step, ErrorCode and ExitCode
	// filled in on top of the base given); Record says it is new and is
	// to be recorded on the Environment (a step ran).
	Status store.Initialization
	Record bool
}

// Initialize runs steps on pc unless the Environment envID already
// completed initialization on this connection. base is the record to
// fill. ctx is the gateway's lifetime; clock times the commit's wait.
func (b *Book) Initialize(ctx context.Context, pc *peer.Conn, clock peer.Clock, log *slog.Logger, envID string, steps []envinit.Step, base store.Initialization) Outcome {
	b.init()
	b.mu.Lock()
	b.busy++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.busy--
		b.mu.Unlock()
	}()
	select {
	case b.sem <- struct{}{}:
	case <-pc.Done():
		base.Outcome = "not_sent"
		return Outcome{Retry: true, Status: base}
	case <-ctx.Done():
		base.Outcome = "not_sent"
		return Outcome{Retry: true, Status: base}
	}
	defer func() { <-b.sem }()
	b.mu.Lock()
	prev := b.inits[envID]
	b.mu.Unlock()
	first := 0
	switch {
	case prev != nil && prev.done:
		return Outcome{OK: true}
	case prev != nil && prev.failed:
		// decision: an initialization that ended for good on this
		// connection is not run again on it (daemon-protocol.txt:159); the
		// Environment's work fails at once with the recorded outcome until
		// a new connection initializes afresh.
		return Outcome{Status: prev.failure}
	case prev != nil:
		first = prev.next
	}
	for n := first; n < len(steps); n++ {
		st := steps[n]
		e := b.run(ctx, pc, clock, st)
		if e.outcome == fsm.OutcomeSuccess {
			continue
		}
		s := base
		s.Outcome, s.Step, s.ErrorCode = e.state, st.Name, e.result.ErrorCode
		if e.result.ExitCode != nil {
			s.ExitCode = int(*e.result.ExitCode)
		}
		log.Warn("gateway: environment initialization ended", "step", st.Name, "state", e.state, "code", s.ErrorCode)
		b.mu.Lock()
		b.inits[envID] = &env{failed: !e.retry, failure: s, next: n}
		b.mu.Unlock()
		return Outcome{Retry: e.retry, Status: s, Record: true}
	}
	b.mu.Lock()
	b.inits[envID] = &env{done: true}
	b.mu.Unlock()
	base.Outcome = "completed"
	return Outcome{OK: true, Status: base, Record: true}
}

// transientCodes are refusals that applied nothing and say the Runtime
// could not take a transfer now (busy, fenced, or its slot held).
//
// decision: such a refusal leaves the work unclaimed for a later attempt,
// as preparation_capacity does for a Turn (daemon-protocol.txt:116): a
// rejected transfer applied nothing (wire-reference.md §7), so a new one
// replays nothing.
var transientCodes = map[string]bool{"resource_unavailable": true, "runtime_preparation_capacity": true}

// run sends one step's transfer on pc and waits for the machine to settle
// it. It never resends a frame.
func (b *Book) run(ctx context.Context, pc *peer.Conn, clock peer.Clock, st envinit.Step) end {
	// runtime_prepare's transfer ID is a canonical UUID (wire-reference.md §2.1).
	id := credential.NewUUID()
	r := &rec{t: link.NewTracker(transferfsm.Name, id)}
	b.mu.Lock()
	b.recs[id] = r
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.recs, id)
		b.mu.Unlock()
	}()

	frames := []wire.RuntimePrepare{st.Begin}
	for off := 0; off < len(st.Body); off += wire.ChunkBytes {
		stop := min(off+wire.ChunkBytes, len(st.Body))
		frames = append(frames, wire.RuntimePrepare{Step: wire.StepChunk, Offset: int64(off), Data: st.Body[off:stop]})
	}
	frames = append(frames, wire.RuntimePrepare{Step: wire.StepCommit})

	for n, f := range frames {
		b.mu.Lock()
		if f.Step == wire.StepChunk {
			r.inflightEnd = f.Offset + int64(len(f.Data))
		}
		b.mu.Unlock()
		sendErr := r.t.Send(ctx, pc, f)
		if sendErr != nil && !link.IsWriteError(sendErr) {
			// Refused before it left (the machine, or the connection went):
			// a begin sent nothing; a later frame leaves the transfer to its
			// budget, which the machine settles.
			if n == 0 {
				return end{state: "not_sent", outcome: fsm.OutcomeFailure, retry: closed(pc) || ctx.Err() != nil}
			}
			e, _ := b.await(ctx, pc, clock, r, -1)
			return e
		}
		// A failed write may have delivered the frame: the machine waits
		// for its answer as after a send.
		wait := time.Duration(0)
		if f.Step == wire.StepCommit {
			wait = CommitWait
		}
		e, answered := b.await(ctx, pc, clock, r, wait)
		switch {
		case e.state != "":
			// A definite end: retry only if nothing was applied and the
			// cause was not this transfer (the connection went, or a
			// transient refusal).
			e.retry = e.outcome == fsm.OutcomeFailure && (transientCodes[e.result.ErrorCode] || closed(pc))
			return e
		case !answered:
			// Only the commit's wait is bounded here: its result never came.
			return end{state: "commit_unanswered", outcome: fsm.OutcomeUnknown}
		}
	}
	// The commit's answer always ends the transfer; this is not reached.
	return end{state: "commit_unanswered", outcome: fsm.OutcomeUnknown}
}

func closed(pc *peer.Conn) bool {
	select {
	case <-pc.Done():
		return true
	default:
		return false
	}
}

// await waits until the instance moves after the last send (the answer)
// or ends. wait > 0 bounds it; 0 leaves the bound to the machine's
// budget; -1 waits only for the end. A zero end (state "") means it moved
// without ending; answered is false when the wait ran out.
func (b *Book) await(ctx context.Context, pc *peer.Conn, clock peer.Clock, r *rec, wait time.Duration) (e end, answered bool) {
	ended := func() (end, bool) {
		state, outcome := r.t.End()
		if state == "" {
			return end{}, false
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		return end{state: state, outcome: outcome, result: r.last}, true
	}
	if wait < 0 {
		// Only the end: the connection's loss reaches every instance.
		if !r.t.AwaitEnd(ctx, pc) {
			return b.lost(r), true
		}
		e, _ = ended()
		return e, true
	}
	waitCtx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = withClockTimeout(ctx, clock, wait)
		defer cancel()
	}
	if !r.t.Await(waitCtx, pc) {
		switch {
		case ctx.Err() != nil:
			return end{state: "connection_lost", outcome: fsm.OutcomeUnknown}, true
		case waitCtx.Err() != nil:
			return end{}, false
		}
		return b.lost(r), true
	}
	e, _ = ended()
	return e, true
}

// lost is the end of a transfer whose connection closed: the last move
// may have landed as the loop ended; otherwise its outcome is unknown.
func (b *Book) lost(r *rec) end {
	state, outcome := r.t.End()
	if state == "" {
		return end{state: "connection_lost", outcome: fsm.OutcomeUnknown}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return end{state: state, outcome: outcome, result: r.last}
}

// withClockTimeout is context.WithTimeout on the gateway's clock (a test
// clock advances it).
func withClockTimeout(ctx context.Context, clock peer.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	t := clock.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			cancel()
		case <-ctx.Done():
		}
		t.Stop()
	}()
	return ctx, cancel
}

// Moved is the connection's Saver for transfer instances.
func (b *Book) Moved(i *peer.Instance) {
	b.init()
	b.mu.Lock()
	r := b.recs[i.Key.ID]
	b.mu.Unlock()
	if r != nil {
		r.t.Moved(i)
	}
}

// Hooks returns the transfer machine's Core hooks over b; log names the
// connection.
func (b *Book) Hooks(log *slog.Logger) transferfsm.CoreHooks[*peer.Event] {
	b.init()
	return hooks{b, log}
}

type hooks struct {
	b   *Book
	log *slog.Logger
}

// GuardSlotFree: no other transfer of this connection is pending or ended
// unknown (daemon-protocol.txt:104: one transfer per connection).
func (h hooks) GuardSlotFree(f *fsm.Firing[*peer.Event]) bool {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	return h.b.slot == "" || h.b.slot == f.Arg.Key.ID
}

// GuardOffsetMatches: the received offset names the end of the chunk in
// flight.
func (h hooks) GuardOffsetMatches(f *fsm.Firing[*peer.Event]) bool {
	res, ok := link.Payload[wire.RuntimePrepareResult](f)
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	r := h.b.recs[f.Arg.Key.ID]
	return ok && r != nil && res.Offset == r.inflightEnd
}

func (h hooks) DoTakeSlot(f *fsm.Firing[*peer.Event]) error {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	h.b.slot = f.Arg.Key.ID
	return nil
}

// DoReleaseSlot frees the slot after a definite end and keeps the result
// that ended it for Initialize.
func (h hooks) DoReleaseSlot(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if h.b.slot == f.Arg.Key.ID {
		h.b.slot = ""
	}
	return nil
}

// DoMarkUnknown keeps the slot: the installation may still run, so no new
// transfer starts on this connection and nothing is replayed.
func (h hooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	h.log.Warn("gateway: transfer outcome unknown; the connection's transfer slot stays held", "transfer_id", f.Arg.Key.ID)
	return nil
}

func (h hooks) keep(f *fsm.Firing[*peer.Event]) {
	res, ok := link.Payload[wire.RuntimePrepareResult](f)
	if !ok {
		return
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if r := h.b.recs[f.Arg.Key.ID]; r != nil {
		r.last = res
	}
}

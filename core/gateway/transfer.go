package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/envinit"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/turn"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/transfer"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// Environment initialization (daemon-protocol.txt:104). Core sends an
// Environment's declared initialization (core/envinit) through
// runtime_prepare, one transfer at a time: begin, ready, each chunk
// awaiting its received offset, commit, completed. The transfer machine
// decides every outcome; its hooks keep the connection's slot and hand the
// settled result to the worker, which reads the outcome off the table.
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

// Public reasons of work that an initialization stopped.
const (
	// ReasonInitializationFailed: the Turn failed because its
	// Environment's initialization ended without completing; the
	// Environment's initialization status keeps the transfer's code.
	ReasonInitializationFailed = "initialization_failed"
	// ReadInitializationFailed is the unavailable reason of such a read.
	ReadInitializationFailed = "initialization_failed"
)

// initCommitWait bounds Core's wait for the commit's result. The machine's
// budget ends at commit (application time is not counted), so the worker
// bounds its own wait.
//
// decision: 120 s, the reference's transfer bound (wire-reference.md §4);
// a commit still unanswered then is reported unknown while the machine
// keeps the connection's slot (nothing is replayed, daemon-protocol.txt:159).
var initCommitWait = 120 * time.Second

// xferBook is one connection's transfers and the Environments initialized
// on it; guarded by the connection's mu.
type xferBook struct {
	slot  string              // the transfer holding the connection's one slot
	recs  map[string]*xferRec // by transfer ID, until settled
	inits map[string]*envInit // by Core Environment ID
	sem   chan struct{}       // one initialization at a time
	busy  int                 // initializations running (the scheduler avoids the connection)
}

// envInit is an Environment's initialization on one connection: done,
// failed for good on this connection (the next connection starts afresh),
// or stopped by a transient refusal before step next, where a later
// attempt on this connection goes on (completed steps are not sent again).
type envInit struct {
	done    bool
	failed  bool
	failure store.Initialization
	next    int
}

// xferRec is Core's record of one transfer it sent; guarded by c.mu.
type xferRec struct {
	inflightEnd int64       // the offset the chunk in flight ends at
	state       fsm.StateID // the instance's state as last seen
	sentState   fsm.StateID // its state right after the last frame was sent
	last        wire.RuntimePrepareResult
	end         *xferEnd
	signal      chan struct{}
}

// xferEnd is how one transfer ended, as the table says.
type xferEnd struct {
	state   string // the transfer machine's state, or "not_sent"
	outcome fsm.Outcome
	result  wire.RuntimePrepareResult
	retry   bool // nothing was applied and the cause is not the transfer's own
}

func (c *conn) xbook() *xferBook {
	if c.xb == nil {
		c.xb = &xferBook{recs: map[string]*xferRec{}, inits: map[string]*envInit{}, sem: make(chan struct{}, 1)}
	}
	return c.xb
}

func (c *conn) xrec(id string) *xferRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.xbook().recs[id]
}

// initializing reports whether an initialization runs on c; the worker
// places no other work there meanwhile, since the Runtime initializes only
// while nothing is active and an installation must not race a Turn.
func (c *conn) initializing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.xb != nil && c.xb.busy > 0
}

// xferMoved is the Saver's part for transfer instances: it keeps the
// instance's state (the worker's next frame waits for the answer to move
// it on from where the send left it) and a terminal end.
func (c *conn) xferMoved(i *peer.Instance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.xbook()
	r := b.recs[i.Key.ID]
	if r == nil {
		return
	}
	r.state = i.State()
	if i.Terminal() && r.end == nil {
		r.end = &xferEnd{state: i.StateName(), outcome: i.Outcome(), result: r.last}
		delete(b.recs, i.Key.ID)
	}
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// newUUID is a random canonical UUID: runtime_prepare's transfer ID must
// be one (wire-reference.md §2.1), as are a write's mutation ID and a
// suspension's IDs.
func newUUID() string { return credential.NewUUID() }

// initOutcome is what an initialization attempt on one connection gave.
type initOutcome struct {
	ok     bool
	retry  bool // nothing applied, cause transient: the work may be placed again
	status store.Initialization
}

// initialize runs the Environment's declared initialization on c unless it
// already completed there. It records the outcome on the Environment.
func (g *Gateway) initialize(c *conn, env store.Environment, sessionID string) initOutcome {
	spec, err := envinit.Parse(env.Initialization)
	base := store.Initialization{EnvironmentID: env.ID, DeviceID: c.deviceID, OwnerEpoch: c.epoch, ExitCode: -1}
	if err != nil {
		// The API validates a declaration before storing it; a stored one
		// that no longer parses is sent nowhere.
		base.Outcome, base.ErrorCode = "not_sent", "invalid_declaration"
		return g.recordInit(initOutcome{status: base})
	}
	if spec.Empty() {
		return initOutcome{ok: true}
	}
	var binding wire.LocalEnvironment
	if len(env.Binding) == 0 || json.Unmarshal(env.Binding, &binding) != nil || !wire.IsCanonicalUUID(binding.ID) {
		base.Outcome, base.ErrorCode = "not_sent", "invalid_binding"
		return g.recordInit(initOutcome{status: base})
	}
	c.mu.Lock()
	b := c.xbook()
	b.busy++
	pc := c.pc
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		b.busy--
		c.mu.Unlock()
		g.kick() // work that avoided the connection may go now
	}()
	select {
	case b.sem <- struct{}{}:
	case <-pc.Done():
		base.Outcome = "not_sent"
		return initOutcome{retry: true, status: base}
	case <-g.ctx.Done():
		base.Outcome = "not_sent"
		return initOutcome{retry: true, status: base}
	}
	defer func() { <-b.sem }()
	c.mu.Lock()
	prev := b.inits[env.ID]
	c.mu.Unlock()
	first := 0
	switch {
	case prev != nil && prev.done:
		return initOutcome{ok: true}
	case prev != nil && prev.failed:
		// decision: an initialization that ended for good on this
		// connection is not run again on it (daemon-protocol.txt:159); the
		// Environment's work fails at once with the recorded outcome until
		// a new connection initializes afresh.
		return initOutcome{status: prev.failure}
	case prev != nil:
		first = prev.next
	}
	log := c.log.With("environment_id", env.ID)
	steps := spec.Steps(binding.ID, envinit.SessionUUID(sessionID))
	for n := first; n < len(steps); n++ {
		st := steps[n]
		end := g.runTransfer(c, pc, st)
		if end.outcome == fsm.OutcomeSuccess {
			continue
		}
		s := base
		s.Outcome, s.Step, s.ErrorCode = end.state, st.Name, end.result.ErrorCode
		if end.result.ExitCode != nil {
			s.ExitCode = int(*end.result.ExitCode)
		}
		log.Warn("gateway: environment initialization ended", "step", st.Name, "state", end.state, "code", s.ErrorCode)
		out := initOutcome{retry: end.retry, status: s}
		c.mu.Lock()
		b.inits[env.ID] = &envInit{failed: !out.retry, failure: s, next: n}
		c.mu.Unlock()
		return g.recordInit(out)
	}
	c.mu.Lock()
	b.inits[env.ID] = &envInit{done: true}
	c.mu.Unlock()
	base.Outcome = "completed"
	return g.recordInit(initOutcome{ok: true, status: base})
}

func (g *Gateway) recordInit(o initOutcome) initOutcome {
	o.status.At = g.cfg.Clock.Now().UTC()
	ctx, cancel := g.storeCtx()
	defer cancel()
	if err := g.cfg.Store.RecordInitialization(ctx, o.status); err != nil {
		g.cfg.Logger.Warn("gateway: record initialization", "environment_id", o.status.EnvironmentID, "err", err)
	}
	return o
}

// transientCodes are refusals that applied nothing and say the Runtime
// could not take a transfer now (busy, fenced, or its slot held).
//
// decision: such a refusal leaves the work unclaimed for a later attempt,
// as preparation_capacity does for a Turn (daemon-protocol.txt:116): a
// rejected transfer applied nothing (wire-reference.md §7), so a new one
// replays nothing.
var transientCodes = map[string]bool{"resource_unavailable": true, "runtime_preparation_capacity": true}

// runTransfer sends one step's transfer on c and waits for the machine to
// settle it. It never resends a frame.
func (g *Gateway) runTransfer(c *conn, pc *peer.Conn, st envinit.Step) xferEnd {
	id := newUUID()
	rec := &xferRec{signal: make(chan struct{}, 1)}
	c.mu.Lock()
	c.xbook().recs[id] = rec
	c.mu.Unlock()

	frames := []wire.RuntimePrepare{st.Begin}
	for off := 0; off < len(st.Body); off += wire.ChunkBytes {
		end := min(off+wire.ChunkBytes, len(st.Body))
		frames = append(frames, wire.RuntimePrepare{Step: wire.StepChunk, Offset: int64(off), Data: st.Body[off:end]})
	}
	frames = append(frames, wire.RuntimePrepare{Step: wire.StepCommit})

	for n, f := range frames {
		c.mu.Lock()
		if f.Step == wire.StepChunk {
			rec.inflightEnd = f.Offset + int64(len(f.Data))
		}
		c.mu.Unlock()
		sendErr := g.sendTransferFrame(c, pc, rec, id, f)
		if sendErr != nil && !isWriteError(sendErr) {
			// Refused before it left (the machine, or the connection went):
			// a begin sent nothing; a later frame leaves the transfer to its
			// budget, which the machine settles.
			if n == 0 {
				c.mu.Lock()
				delete(c.xbook().recs, id)
				c.mu.Unlock()
				return xferEnd{state: "not_sent", outcome: fsm.OutcomeFailure, retry: isClosed(pc) || g.ctx.Err() != nil}
			}
			end, _ := g.awaitTransfer(c, pc, rec, -1)
			return *end
		}
		// A failed write may have delivered the frame: the machine waits
		// for its answer as after a send.
		wait := time.Duration(0)
		if f.Step == wire.StepCommit {
			wait = initCommitWait
		}
		end, answered := g.awaitTransfer(c, pc, rec, wait)
		switch {
		case end != nil:
			// A definite end: retry only if nothing was applied and the
			// cause was not this transfer (the connection went, or a
			// transient refusal).
			end.retry = end.outcome == fsm.OutcomeFailure && (transientCodes[end.result.ErrorCode] || isClosed(pc))
			return *end
		case !answered:
			// Only the commit's wait is bounded here: its result never came.
			return xferEnd{state: "commit_unanswered", outcome: fsm.OutcomeUnknown}
		}
	}
	// The commit's answer always ends the transfer; this is not reached.
	return xferEnd{state: "commit_unanswered", outcome: fsm.OutcomeUnknown}
}

// sendTransferFrame queues one frame on c's loop and returns the send's
// result. Right after the send event fired (on the loop, before any later
// frame is delivered), it notes the state the send left the instance in.
func (g *Gateway) sendTransferFrame(c *conn, pc *peer.Conn, rec *xferRec, id string, f wire.RuntimePrepare) error {
	done := make(chan error, 1)
	err := pc.Do(g.ctx, func(d *peer.Driver) {
		d.Send(peer.Outbound{ID: id, Payload: f}, func(err error) {
			if i, ok := d.Lookup(peer.Key{Machine: transfer.Name, ID: id}); ok {
				c.mu.Lock()
				rec.state, rec.sentState = i.State(), i.State()
				c.mu.Unlock()
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

func isClosed(pc *peer.Conn) bool {
	select {
	case <-pc.Done():
		return true
	default:
		return false
	}
}

// awaitTransfer waits until the instance moves after the last send (the
// answer) or ends. wait > 0 bounds it; 0 leaves the bound to the machine's
// budget; -1 waits only for the end. answered is false when the send was
// never performed (no move can follow) or the wait ran out.
func (g *Gateway) awaitTransfer(c *conn, pc *peer.Conn, rec *xferRec, wait time.Duration) (end *xferEnd, answered bool) {
	var timeout <-chan time.Time
	if wait > 0 {
		t := g.cfg.Clock.NewTimer(wait)
		defer t.Stop()
		timeout = t.C()
	}
	for {
		c.mu.Lock()
		e, moved := rec.end, rec.state != rec.sentState
		c.mu.Unlock()
		if e != nil {
			return e, true
		}
		if moved && wait >= 0 {
			return nil, true
		}
		select {
		case <-rec.signal:
		case <-timeout:
			return nil, false
		case <-pc.Done():
			// connection_lost reaches every instance as the loop ends; give
			// the last move a chance to land, then report what is known.
			c.mu.Lock()
			e = rec.end
			c.mu.Unlock()
			if e == nil {
				return &xferEnd{state: "connection_lost", outcome: fsm.OutcomeUnknown, retry: false}, true
			}
			return e, true
		case <-g.ctx.Done():
			return &xferEnd{state: "connection_lost", outcome: fsm.OutcomeUnknown}, true
		}
	}
}

// xferHooks are the transfer machine's Core hooks on one connection.
type xferHooks struct{ c *conn }

var _ transfer.CoreHooks[*peer.Event] = xferHooks{}

// GuardSlotFree: no other transfer of this connection is pending or ended
// unknown (daemon-protocol.txt:104: one transfer per connection).
func (h xferHooks) GuardSlotFree(f *fsm.Firing[*peer.Event]) bool {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	s := h.c.xbook().slot
	return s == "" || s == f.Arg.Key.ID
}

// GuardOffsetMatches: the received offset names the end of the chunk in
// flight.
func (h xferHooks) GuardOffsetMatches(f *fsm.Firing[*peer.Event]) bool {
	res, ok := readPayload[wire.RuntimePrepareResult](f)
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	r := h.c.xbook().recs[f.Arg.Key.ID]
	return ok && r != nil && res.Offset == r.inflightEnd
}

func (h xferHooks) DoTakeSlot(f *fsm.Firing[*peer.Event]) error {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.xbook().slot = f.Arg.Key.ID
	return nil
}

// DoReleaseSlot frees the slot after a definite end and keeps the result
// that ended it for the worker.
func (h xferHooks) DoReleaseSlot(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if b := h.c.xbook(); b.slot == f.Arg.Key.ID {
		b.slot = ""
	}
	return nil
}

// DoMarkUnknown keeps the slot: the installation may still run, so no new
// transfer starts on this connection and nothing is replayed.
func (h xferHooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	h.c.log.Warn("gateway: transfer outcome unknown; the connection's transfer slot stays held", "transfer_id", f.Arg.Key.ID)
	return nil
}

func (h xferHooks) keep(f *fsm.Firing[*peer.Event]) {
	res, ok := readPayload[wire.RuntimePrepareResult](f)
	if !ok {
		return
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if r := h.c.xbook().recs[f.Arg.Key.ID]; r != nil {
		r.last = res
	}
}

// placeable reports whether the worker may place p's work on c now: no
// initialization runs there, and no suspension attempt holds p's
// Environment (suspension.go; other Environments' attempts do not).
func (g *Gateway) placeable(ctx context.Context, c *conn, p turnPlan) bool {
	return !c.initializing() && !g.suspended(ctx, p.env.ID)
}

// initializeTurn initializes the claimed Turn's Environment on c before
// its execution_prepare. Nothing of the Turn was sent yet, so a transient
// end returns it to the queue with backoff; any other end fails it with
// ReasonInitializationFailed and the transfer's outcome as evidence.
func (g *Gateway) initializeTurn(c *conn, p turnPlan, in *turn.Instance, log *slog.Logger) bool {
	o := g.initialize(c, p.env, p.session.ID)
	if o.ok {
		return true
	}
	if o.retry {
		g.requeue(log, in, p.turn.Attempts)
		return false
	}
	ev, _ := json.Marshal(map[string]string{"initialization": o.status.Outcome, "step": o.status.Step, "initialization_error": o.status.ErrorCode})
	g.fail(log, in, turn.InitializationFailed, store.Outcome{Evidence: ev}, nil)
	return false
}

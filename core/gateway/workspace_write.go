package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/envinit"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_write"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// Workspace writes (daemon-protocol.txt:185). Core takes the Session's
// scheduling reservation, durably reserves the write in the store (one
// conditional insert: one held mutation owner per Session), and only then
// sends begin; the body follows in 64 KiB chunks, each awaiting its
// received offset, then commit. Before commit leaves, the store records
// the commit attempt, so a restarted Core knows whether the native writer
// may have run. The workspace_write machine decides every outcome; its
// hooks keep the durable record in step with the state the table moved to.
// A write is never resent or replayed.

// WriteResult is how a write ended, as the machine settled it.
type WriteResult struct {
	MutationID string
	// State is the workspace_write machine's state: completed, rejected,
	// aborted (nothing reached the installer), unknown, or unconfirmed
	// (no receipt within the deadline; a late one may still settle it).
	State string
	// Outcome is the public projection: completed, rejected, aborted or
	// unknown.
	Outcome   string
	ErrorCode string
	Reason    string
	SizeBytes int64
	DeviceID  string
}

// WriteBlockedError: an earlier write of the Session still holds its
// mutation owner (in flight, or with an unknown outcome an operator has
// to resolve).
type WriteBlockedError struct {
	MutationID string
	State      string
}

func (e *WriteBlockedError) Error() string {
	return fmt.Sprintf("gateway: write %s of this Session is unsettled (%s); successors wait for its exact settlement", e.MutationID, e.State)
}

// Errors of WriteWorkspace besides *WriteBlockedError and ErrNoWorkspace.
var (
	// ErrWriteNoDevice: no connected device admits the Session's work.
	ErrWriteNoDevice = errors.New("gateway: no connected device admits the Session's work")
	// ErrWriteTooLarge: the body is over the 50 MiB transfer bound.
	ErrWriteTooLarge = errors.New("gateway: the body is over the 50 MiB workspace write bound")
)

// WriteOptions are a write's optional observers.
type WriteOptions struct {
	// Progress is called with the bytes the Runtime confirmed as staged.
	Progress func(staged, total int64)
	// MutationID, when set, is the write's durable ID (a canonical UUID);
	// otherwise one is minted.
	MutationID string
}

// writeRec is Core's record of one write it sends; guarded by c.mu.
type writeRec struct {
	sessionID   string
	stored      string // the state the store last recorded
	inflightEnd int64
	state       fsm.StateID
	sentState   fsm.StateID
	last        wire.WorkspaceWriteResult
	end         *WriteResult
	signal      chan struct{}
}

func (c *conn) wrec(id string) *writeRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wb[id]
}

// decision: a workspace write is a successor mutation for the Session's
// Turns too: the Runtime excludes execution while it receives or applies
// a write (daemon-protocol.txt:185), and a write whose receipt is missing
// may still be applying, so no Turn of the Session is claimed while one
// holds the mutation owner (here or, after a restart, in the store), and
// no write starts while a Turn or a read holds the Session.

// WriteWorkspace writes body to path (workspace-relative) in the
// Session's bound workspace. It returns the machine's settlement; a
// settlement other than completed/rejected/aborted keeps the Session's
// mutation owner until an operator resolves it (ResolveWrite). If ctx ends
// first, the write still runs to its settlement and ctx's error is
// returned.
func (g *Gateway) WriteWorkspace(ctx context.Context, sessionID, path string, body []byte, opt WriteOptions) (WriteResult, error) {
	if int64(len(body)) > wire.MaxTransferBytes {
		return WriteResult{}, ErrWriteTooLarge
	}
	ses, err := g.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return WriteResult{}, err
	}
	env, err := g.cfg.Store.GetEnvironment(ctx, ses.EnvironmentID)
	if err != nil {
		return WriteResult{}, err
	}
	envType, err := wire.ParseEnvironmentType(env.Type)
	if err != nil || !envType.Local() || len(env.Binding) == 0 {
		return WriteResult{}, ErrNoWorkspace
	}
	var binding wire.LocalEnvironment
	if err := json.Unmarshal(env.Binding, &binding); err != nil || binding.ID == "" {
		return WriteResult{}, ErrNoWorkspace
	}
	id := opt.MutationID
	if id == "" {
		id = newUUID()
	}
	sum := sha256.Sum256(body)
	size := int64(len(body))
	begin := wire.WorkspaceWrite{Step: wire.StepBegin, EnvironmentID: binding.ID, SessionID: envinit.SessionUUID(sessionID),
		Path: path, SizeBytes: &size, SHA256: hex.EncodeToString(sum[:])}
	if err := begin.Validate(); err != nil {
		return WriteResult{}, &ReadError{Code: "invalid_request", Rejected: true, Detail: boundedErr(err)}
	}
	if w, err := g.cfg.Store.UnsettledWorkspaceWrite(ctx, sessionID); err == nil {
		return WriteResult{}, &WriteBlockedError{MutationID: w.MutationID, State: w.State}
	}
	g.awaitFinishedTurns(ctx, sessionID)
	if !g.holdForWrite(sessionID, env.ID) {
		return WriteResult{}, ErrSessionBusy
	}
	p := turnPlan{session: ses, env: env, admit: wire.AdmissionInput{Environment: envType}}
	if p.required, err = wire.RequiredCapabilities(p.admit); err != nil {
		g.dropWriteHold(sessionID)
		return WriteResult{}, err
	}
	var c *conn
	for _, cand := range g.candidates(p) {
		if decl, ok := cand.snapshot(); ok && g.owns(cand) && g.placeable(ctx, cand, p) {
			if _, ok := admits(decl, p); ok {
				c = cand
				break
			}
		}
	}
	if c == nil {
		g.dropWriteHold(sessionID)
		return WriteResult{}, ErrWriteNoDevice
	}
	if o := g.initialize(c, env, sessionID); !o.ok { // transfer.go
		g.dropWriteHold(sessionID)
		return WriteResult{}, &ReadError{Code: ReadInitializationFailed, Detail: "the Environment's initialization ended " + o.status.Outcome + " " + o.status.ErrorCode}
	}
	// The durable reservation, under the Session's reservation and before
	// anything is sent (daemon-protocol.txt:185).
	first := workspace_write.StateBeginning.String()
	rec := &writeRec{sessionID: sessionID, stored: first, signal: make(chan struct{}, 1)}
	err = g.cfg.Store.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: id, SessionID: sessionID, Path: path,
		CreatedAt: g.cfg.Clock.Now().UTC(), WriteDetail: store.WriteDetail{State: first, DeviceID: c.deviceID, SizeBytes: size, SHA256: begin.SHA256}})
	if err != nil {
		g.dropWriteHold(sessionID)
		if errors.Is(err, store.ErrConflict) {
			if w, err2 := g.cfg.Store.UnsettledWorkspaceWrite(ctx, sessionID); err2 == nil {
				return WriteResult{}, &WriteBlockedError{MutationID: w.MutationID, State: w.State}
			}
		}
		return WriteResult{}, err
	}
	c.log.Info("gateway: workspace write reserved", "mutation_id", id, "session_id", sessionID, "size_bytes", size)
	c.mu.Lock()
	if c.wb == nil {
		c.wb = map[string]*writeRec{}
	}
	c.wb[id] = rec
	pc := c.pc
	c.mu.Unlock()

	out := make(chan WriteResult, 1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		res := g.runWrite(c, pc, rec, id, begin, body, opt.Progress)
		res.MutationID, res.DeviceID = id, c.deviceID
		res.Outcome = publicWriteOutcome(res.State)
		// The Session's reservation goes once the machine settled the
		// write; the durable owner stays while the outcome is unknown.
		g.dropWriteHold(sessionID)
		out <- res
	}()
	select {
	case res := <-out:
		return res, nil
	case <-ctx.Done():
		g.observerCancelled(pc, id)
		return WriteResult{MutationID: id}, ctx.Err()
	}
}

func publicWriteOutcome(state string) string {
	switch state {
	case workspace_write.StateCompleted.String(), workspace_write.StateRejected.String(), workspace_write.StateAborted.String():
		return state
	}
	return workspace_write.StateUnknown.String()
}

// runWrite sends the write's frames one at a time, each after the
// previous one was answered, and returns how the machine settled it.
func (g *Gateway) runWrite(c *conn, pc *peer.Conn, rec *writeRec, id string, begin wire.WorkspaceWrite, body []byte, progress func(int64, int64)) WriteResult {
	total := int64(len(body))
	frames := 1 + (len(body)+wire.ChunkBytes-1)/wire.ChunkBytes + 1
	for n := 0; n < frames; n++ {
		var f wire.WorkspaceWrite
		switch {
		case n == 0:
			f = begin
		case n == frames-1:
			f = wire.WorkspaceWrite{Step: wire.StepCommit}
			// The commit attempt is recorded before the frame can leave: a
			// Core that stops after this point cannot tell whether the
			// native writer ran (daemon-protocol.txt:185).
			//
			// decision: the machine's record_commit_attempt runs after the
			// send event fired, which the driver fires once the write
			// completed; so Core stores the attempt here, before Send, and
			// the hook only checks it was stored. If the store refuses,
			// commit is never sent and the upload deadline aborts the write.
			ctx, cancel := g.storeCtx()
			err := g.cfg.Store.TransitionWorkspaceWrite(ctx, writeMove(id, rec.storedState(c), workspace_write.StateCommitting.String(), g.cfg.Clock.Now().UTC()), false, "", "")
			cancel()
			if err != nil {
				c.log.Error("gateway: workspace write: the commit attempt could not be recorded; commit is not sent", "mutation_id", id, "err", err)
				return g.awaitWriteEnd(c, pc, rec, id)
			}
			c.mu.Lock()
			rec.stored = workspace_write.StateCommitting.String()
			c.mu.Unlock()
		default:
			off := (n - 1) * wire.ChunkBytes
			end := min(off+wire.ChunkBytes, len(body))
			f = wire.WorkspaceWrite{Step: wire.StepChunk, Offset: int64(off), Data: body[off:end]}
			c.mu.Lock()
			rec.inflightEnd = int64(end)
			c.mu.Unlock()
		}
		err := g.sendWriteFrame(c, pc, rec, id, f)
		if err != nil && !isWriteError(err) {
			// Refused before it left: a begin sent nothing at all.
			if n == 0 {
				c.mu.Lock()
				delete(c.wb, id)
				c.mu.Unlock()
				ctx, cancel := g.storeCtx()
				defer cancel()
				// decision: a begin that never left reached no Runtime, so the
				// reservation is released as aborted, the table's end for an
				// upload that stopped before commit (daemon-protocol.txt:185).
				_ = g.cfg.Store.TransitionWorkspaceWrite(ctx, writeMove(id, rec.stored, workspace_write.StateAborted.String(), g.cfg.Clock.Now().UTC()), true, "", "not_sent")
				return WriteResult{State: workspace_write.StateAborted.String(), Reason: "not_sent"}
			}
			return g.awaitWriteEnd(c, pc, rec, id)
		}
		if f.Step == wire.StepCommit {
			return g.awaitWriteEnd(c, pc, rec, id)
		}
		if end := g.awaitWriteMove(c, pc, rec); end != nil {
			return *end
		}
		if f.Step == wire.StepChunk && progress != nil {
			progress(rec.inflightEnd, total)
		}
	}
	return g.awaitWriteEnd(c, pc, rec, id)
}

func (r *writeRec) storedState(c *conn) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return r.stored
}

// sendWriteFrame queues one frame and returns the send's result, noting
// the state the send left the instance in.
func (g *Gateway) sendWriteFrame(c *conn, pc *peer.Conn, rec *writeRec, id string, f wire.WorkspaceWrite) error {
	done := make(chan error, 1)
	err := pc.Do(g.ctx, func(d *peer.Driver) {
		d.Send(peer.Outbound{ID: id, Payload: f}, func(err error) {
			if i, ok := d.Lookup(peer.Key{Machine: workspace_write.Name, ID: id}); ok {
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

// lossSettleWait bounds how long a worker waits, after its connection
// closed, for the machine's connection_lost step to settle the write.
//
// decision: the loop fires connection_lost on every instance as it ends
// (daemon-protocol.txt:158); should that step not be seen in time, the
// caller is told what the durable record says (unknown while the owner is
// held), never an invented outcome.
var lossSettleWait = 5 * time.Second

// awaitWriteMove waits for the answer to the last frame; it returns the
// end if the write settled instead.
func (g *Gateway) awaitWriteMove(c *conn, pc *peer.Conn, rec *writeRec) *WriteResult {
	for {
		c.mu.Lock()
		e, moved := rec.end, rec.state != rec.sentState
		c.mu.Unlock()
		if e != nil {
			return e
		}
		if moved {
			return nil
		}
		select {
		case <-rec.signal:
		case <-pc.Done():
			return g.lossEnd(c, rec)
		case <-g.ctx.Done():
			return g.lossEnd(c, rec)
		}
	}
}

// awaitWriteEnd waits until the machine settles the write (terminal, or
// unconfirmed at the upload deadline).
func (g *Gateway) awaitWriteEnd(c *conn, pc *peer.Conn, rec *writeRec, id string) WriteResult {
	for {
		c.mu.Lock()
		e := rec.end
		c.mu.Unlock()
		if e != nil {
			return *e
		}
		select {
		case <-rec.signal:
		case <-pc.Done():
			return *g.lossEnd(c, rec)
		case <-g.ctx.Done():
			return *g.lossEnd(c, rec)
		}
	}
}

func (g *Gateway) lossEnd(c *conn, rec *writeRec) *WriteResult {
	t := g.cfg.Clock.NewTimer(lossSettleWait)
	defer t.Stop()
	for {
		c.mu.Lock()
		e := rec.end
		c.mu.Unlock()
		if e != nil {
			return e
		}
		select {
		case <-rec.signal:
		case <-t.C():
			return &WriteResult{State: workspace_write.StateUnknown.String(), Reason: "connection_lost"}
		}
	}
}

func (g *Gateway) observerCancelled(pc *peer.Conn, id string) {
	_ = pc.Do(g.ctx, func(d *peer.Driver) {
		if _, ok := d.Lookup(peer.Key{Machine: workspace_write.Name, ID: id}); ok {
			_ = d.Local(peer.Key{Machine: workspace_write.Name, ID: id}, fsm.EventID(workspace_write.EventObserverCancelled), nil)
		}
	})
}

// writeMoved is the Saver's part for write instances: it keeps the
// instance's state and, once the machine settled the write (terminal, or
// unconfirmed), its end. A loss that moves an unconfirmed write to unknown
// has no effect in the table; the durable state follows it here.
func (c *conn) writeMoved(i *peer.Instance) {
	c.mu.Lock()
	r := c.wb[i.Key.ID]
	if r == nil {
		c.mu.Unlock()
		return
	}
	r.state = i.State()
	st := workspace_write.State(i.State())
	settled := i.Terminal() || st == workspace_write.StateUnconfirmed
	stored := r.stored
	if settled && r.end == nil {
		r.end = &WriteResult{State: i.StateName(), ErrorCode: r.last.ErrorCode, Reason: r.last.Reason, SizeBytes: r.last.SizeBytes}
	}
	if i.Terminal() {
		delete(c.wb, i.Key.ID)
	}
	c.mu.Unlock()
	if i.Terminal() && i.Outcome() == fsm.OutcomeUnknown && stored != i.StateName() {
		c.storeWrite(i.Key.ID, r, i.StateName(), false)
	}
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// writeMove is the store's move of write id from one state of the
// workspace_write machine to another.
func writeMove(id, from, to string, at time.Time) store.Move {
	return store.Move{Machine: workspace_write.Name, Key: id, From: from, To: to, At: at}
}

// storeWrite moves the durable record to state; release frees the owner.
func (c *conn) storeWrite(id string, r *writeRec, state string, release bool) {
	c.mu.Lock()
	from, last := r.stored, r.last
	c.mu.Unlock()
	if from == state && !release {
		return
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	err := c.g.cfg.Store.TransitionWorkspaceWrite(ctx, writeMove(id, from, state, c.g.cfg.Clock.Now().UTC()), release, last.ErrorCode, last.Reason)
	if err != nil {
		c.log.Error("gateway: workspace write: record the machine's state", "mutation_id", id, "state", state, "err", err)
		return
	}
	c.mu.Lock()
	r.stored = state
	c.mu.Unlock()
	c.log.Info("gateway: workspace write recorded", "mutation_id", id, "state", state, "released", release, "code", last.ErrorCode)
	if release {
		c.g.kick() // Turns of the Session may be claimed again
	}
}

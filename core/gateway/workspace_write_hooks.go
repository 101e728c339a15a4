package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/workspace_write"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// writeHooks are the workspace_write machine's Core hooks on one
// connection. They read the state the table moved to (f.To) and keep the
// durable record in step with it; they decide nothing.
type writeHooks struct{ c *conn }

var _ workspace_write.CoreHooks[*peer.Event] = writeHooks{}

// GuardOwnerFree reads the durable owner: the Session's one unsettled
// write in the store is this one (reserved before begin was sent).
func (h writeHooks) GuardOwnerFree(f *fsm.Firing[*peer.Event]) bool {
	r := h.c.wrec(f.Arg.Key.ID)
	if r == nil {
		return false
	}
	ctx, cancel := h.c.storeCtx()
	defer cancel()
	w, err := h.c.g.cfg.Store.UnsettledWorkspaceWrite(ctx, r.sessionID)
	return err == nil && w.MutationID == f.Arg.Key.ID
}

// GuardChunkInBounds: Core builds its chunks within the bounds; the
// Runtime's guard is the one that refuses (the table's decision).
func (h writeHooks) GuardChunkInBounds(f *fsm.Firing[*peer.Event]) bool {
	p, ok := readPayload[wire.WorkspaceWrite](f)
	return ok && len(p.Data) > 0 && len(p.Data) <= wire.ChunkBytes
}

func (h writeHooks) GuardOffsetMatches(f *fsm.Firing[*peer.Event]) bool {
	res, ok := readPayload[wire.WorkspaceWriteResult](f)
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	r := h.c.wb[f.Arg.Key.ID]
	return ok && r != nil && res.Offset == r.inflightEnd
}

// GuardDigestMatches: Core declares the digest of the body it sends.
func (h writeHooks) GuardDigestMatches(*fsm.Firing[*peer.Event]) bool { return true }

// DoReserveOwner: the reservation was stored before begin could leave
// (WriteWorkspace), so there is nothing left to store.
//
// decision: the driver runs effects after the send event fired, i.e.
// after the frame was written; a reservation made here could follow a
// begin that already reached the Runtime, so Core reserves first
// (daemon-protocol.txt:185: "before public admission").
func (h writeHooks) DoReserveOwner(*fsm.Firing[*peer.Event]) error { return nil }

// DoRecordCommitAttempt checks that the attempt was stored before commit
// was written (runWrite stores it first).
func (h writeHooks) DoRecordCommitAttempt(f *fsm.Firing[*peer.Event]) error {
	if r := h.c.wrec(f.Arg.Key.ID); r != nil && r.storedState(h.c) != workspace_write.StateCommitting.String() {
		h.c.log.Error("gateway: workspace write: commit left without its recorded attempt", "mutation_id", f.Arg.Key.ID)
	}
	return nil
}

func (h writeHooks) DoReleaseOwner(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	if r := h.c.wrec(f.Arg.Key.ID); r != nil {
		h.c.storeWrite(f.Arg.Key.ID, r, workspace_write.State(f.To).String(), true)
	}
	return nil
}

// DoMarkUnknown keeps the owner with the state the table moved to
// (unconfirmed at the deadline, unknown on a loss or an ambiguous
// receipt); the write is never replayed.
func (h writeHooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	h.keep(f)
	if r := h.c.wrec(f.Arg.Key.ID); r != nil {
		h.c.storeWrite(f.Arg.Key.ID, r, workspace_write.State(f.To).String(), false)
	}
	h.c.log.Warn("gateway: workspace write outcome unknown; the Session's mutation owner stays held", "mutation_id", f.Arg.Key.ID)
	return nil
}

// DoSettleLate: the late receipt's release follows in the same step
// (release_owner), which moves the record from unconfirmed.
func (h writeHooks) DoSettleLate(f *fsm.Firing[*peer.Event]) error {
	h.c.log.Info("gateway: workspace write settled by a late receipt", "mutation_id", f.Arg.Key.ID)
	return nil
}

func (h writeHooks) DoDetachObserver(f *fsm.Firing[*peer.Event]) error {
	h.c.log.Info("gateway: workspace write caller gone; the write runs to its settlement", "mutation_id", f.Arg.Key.ID)
	return nil
}

func (h writeHooks) keep(f *fsm.Firing[*peer.Event]) {
	res, ok := readPayload[wire.WorkspaceWriteResult](f)
	if !ok {
		return
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if r := h.c.wb[f.Arg.Key.ID]; r != nil {
		r.last = res
	}
}

// reconcileWrites settles the writes an earlier Core process left held,
// as the table says for process_exit: before a commit attempt nothing
// reached the installer (aborted, owner released); after it the outcome
// is unknown and the owner stays held. Nothing is resent.
func (g *Gateway) reconcileWrites(ctx context.Context) {
	open, err := g.cfg.Store.OpenWorkspaceWrites(ctx)
	if err != nil {
		g.cfg.Logger.Error("gateway: reconcile: open workspace writes", "err", err)
		return
	}
	now := g.cfg.Clock.Now().UTC()
	for _, w := range open {
		st, err := workspace_write.ParseState(w.State)
		if err != nil {
			g.cfg.Logger.Error("gateway: reconcile: workspace write in an unknown state; kept held", "mutation_id", w.MutationID, "state", w.State)
			continue
		}
		step, err := workspace_write.Transition(st, workspace_write.EventProcessExit, 0)
		if err != nil || step.Disposition() != fsm.Moved {
			continue // settled as far as the table goes (unknown): the operator resolves it
		}
		to := step.To()
		release := to.Outcome() != fsm.OutcomeUnknown
		err = g.cfg.Store.TransitionWorkspaceWrite(ctx, writeMove(w.MutationID, w.State, to.String(), now), release, "", "core_restarted")
		if err != nil && !errors.Is(err, store.ErrStale) {
			g.cfg.Logger.Warn("gateway: reconcile: workspace write", "mutation_id", w.MutationID, "err", err)
			continue
		}
		g.cfg.Logger.Info("gateway: reconciled a workspace write left by an earlier Core process", "mutation_id", w.MutationID,
			"from", w.State, "state", to.String(), "released", release)
	}
}

// ResolveWrite records an operator's resolution of a write whose outcome
// is unknown and releases the Session's mutation owner. resolution is
// store.ResolutionApplied or store.ResolutionNotApplied.
//
// decision: only an operator may release an unknown write, since no
// receipt can prove what happened (daemon-protocol.txt:185); Core keeps
// the receipt's evidence and records who decided what, and never resends
// the write.
func (g *Gateway) ResolveWrite(ctx context.Context, mutationID, resolution, note string) (store.WorkspaceWrite, error) {
	if resolution != store.ResolutionApplied && resolution != store.ResolutionNotApplied {
		return store.WorkspaceWrite{}, store.ErrInvalid
	}
	if err := g.cfg.Store.ResolveWorkspaceWrite(ctx, mutationID, resolution, note, g.cfg.Clock.Now().UTC()); err != nil {
		return store.WorkspaceWrite{}, err
	}
	g.cfg.Logger.Info("gateway: workspace write resolved by an operator", "mutation_id", mutationID, "resolution", resolution)
	g.kick()
	return g.cfg.Store.GetWorkspaceWrite(ctx, mutationID)
}

// writeBlocksTurns reports whether a write holds the Session's mutation
// owner in the store (a Turn waits; see the decision in workspace_write.go).
func (g *Gateway) writeBlocksTurns(ctx context.Context, sessionID string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := g.cfg.Store.UnsettledWorkspaceWrite(ctx, sessionID)
	return !errors.Is(err, store.ErrNotFound)
}

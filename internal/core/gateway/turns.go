package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/turn"
)

// This file connects Core's turn machine (package core/turn) to the
// gateway: every Turn the worker claims has an instance here from its
// placement until its worker is done, and every move of a Turn, by the
// worker, the API or a Run's hooks, is an event fired on it. Moves made on
// a connection's loop go into the loop's batch (journal.go); the others
// are written at once, after every earlier move of the Turn.

// turn is the instance of a Turn this process's worker holds, or nil.
func (g *Gateway) turn(id string) *turn.Instance {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.turns[id]
}

// moveTurn fires e on the Turn's instance and writes its move, then wakes
// the Turn's event streams.
//
// A Turn whose record failed to write moves no more (its failure is
// written first, persistence.go); a move the store fails to write, when
// neither the caller's context nor the gateway's ended, marks the Turn
// so: its Run (if any) was placed under the Run ID it holds.
func (g *Gateway) moveTurn(ctx context.Context, in *turn.Instance, e turn.Event, a turn.Args) (turn.Step, error) {
	ref := in.Ref()
	if g.isUnwritten(ref.ID) {
		return turn.Step{}, fmt.Errorf("gateway: moving Turn %s on %s: %w", ref.ID, e, errUnwritten)
	}
	a.At = g.cfg.Clock.Now()
	st, err := in.Commit(ctx, g.cfg.Store, e, a)
	if err == nil && st.Moved() {
		g.cfg.Journal.Notify(st.Move.TurnID)
	}
	if err != nil && ctx.Err() == nil && g.ctx.Err() == nil && ref.RunID != "" && !errors.Is(err, turn.ErrRejected) &&
		!errors.Is(err, store.ErrStale) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrInvalid) {
		g.cfg.Logger.Error("gateway: the store failed to write a move of the Turn; it fails persistence_failed", "turn_id", ref.ID, "event", e.String(), "err", err)
		g.markUnwritten(ref.ID, ref.RunID, err)
	}
	return st, err
}

// moveStored fires e on a Turn as the store holds it, with no instance
// (one no worker of this process holds: queued, or left by an earlier
// process), and writes its move.
func (g *Gateway) moveStored(ctx context.Context, t store.Turn, e turn.Event, a turn.Args) (turn.Step, error) {
	a.At = g.cfg.Clock.Now()
	st, err := turn.Fire(turn.RefOf(t), e, a)
	if err != nil || !st.Moved() {
		return st, err
	}
	if err := g.cfg.Store.MoveTurn(ctx, st.Move); err != nil {
		return turn.Step{}, err
	}
	g.cfg.Journal.Notify(t.ID)
	return st, nil
}

// fireTurn fires e on the Turn's instance on the connection's loop: its
// move goes into the loop's batch, before the batch's events (a start) or
// after them (a Run's terminal record), and the instance learns once the
// batch is written.
func (c *conn) fireTurn(in *turn.Instance, e turn.Event, a turn.Args, afterEvents bool) (turn.Step, error) {
	a.At = c.g.cfg.Clock.Now()
	st, err := in.Fire(e, a)
	if err != nil || !st.Moved() {
		return st, err
	}
	if afterEvents {
		c.pending.Finishes = append(c.pending.Finishes, st.Move)
	} else {
		c.pending.Moves = append(c.pending.Moves, st.Move)
	}
	c.after = append(c.after, in.Written)
	return st, nil
}

// logMove logs a move that failed for a reason other than the table's
// refusal.
func logMove(log interface{ Warn(string, ...any) }, what string, err error) {
	if err != nil && !errors.Is(err, turn.ErrRejected) {
		log.Warn("gateway: "+what, "err", err)
	}
}

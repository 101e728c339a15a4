package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/peer"
)

// A store failure is never silent (issue 23). When the store fails to
// write a connection's journal batch (the Run events, the Turn moves and
// the terminal records its hooks made in one loop turn) or a record a hook
// writes at once (hookStore: an input cursor, an interaction), and, for
// every point but the abort, a move of a Turn the worker writes itself
// (whose Run never started or has ended, so its connection goes on):
//
//   - every Turn with a write in the failed batch is marked unwritten
//     here, in memory: the API shows it failed with reason
//     persistence_failed (core/api, unrecorded.go), so its event stream
//     ends with that status at once, even while the store cannot take the
//     Turn's own failure record;
//   - nothing more of an unwritten Turn is written by its connection
//     (withoutUnwritten), since events after a lost one would make a
//     journal that looks whole and is not;
//   - the connection is aborted before any frame queued after the lost
//     writes leaves (peer.Conn.Abort): the Runtime gets a close status
//     1011, cancels the native work of the connection when it sees the
//     loss, and reconnects with backoff;
//   - the scheduler's every pass (recordUnwritten) writes each unwritten
//     Turn's failure, from the state the store holds it in, with an
//     observation event naming the cause, until the store takes it: a
//     Turn is never running for ever while Core lives. A Core that stops
//     first leaves it to the reconciliation at the next start, which
//     fails it event_stream_incomplete (spec/turn.yaml, restart).
//
// decision: the connection is closed rather than the one Run cancelled
// with prompt_cancel. prompt_cancel must be journaled before it leaves
// (cancel.go) and its receipt would own the Turn's outcome
// (daemon-protocol.txt:133), while the write that failed is the very
// journal; the Runtime acknowledges nothing Core sends, so what Core must
// not do is act on a write it does not have: send the next active input
// after an outcome it did not record, or any frame its Durable waited for
// (daemon-protocol.txt:138: a frame sent proves only that it was queued).
// A store that fails one group commit fails the next one too (a full
// disk), and the group commit mixes the connection's Runs, so the
// connection's other work stops with it: its Runs end as a lost
// connection ends them, with their effect unknown and nothing invented
// (daemon-protocol.txt:151, 158), and nothing is replayed on reconnection
// (daemon-protocol.txt:159). The persistence failure is Core's own
// observation and no other reason replaces it (daemon-protocol.txt:173).

// StoreFailedReason is the close reason of a connection whose journal
// batch the store failed to write.
const StoreFailedReason = "Core could not store the connection's work"

// unwritten is a Turn whose record the store failed to write. Its entry
// outlives the write of its failure (written) until the worker let the
// Turn go: until then its connection may still hand the writer a batch
// with the Turn's later frames, which must not follow the failure into
// the journal.
type unwritten struct {
	runID    string
	cause    string
	attempts int
	written  bool
}

// storeFailed handles a failed commit of the connection's batch b: its
// Turns become unwritten and the connection is aborted before any frame
// that waited for the commit leaves. It runs on the connection's writer,
// before Durable returns.
func (c *conn) storeFailed(b store.Batch, err error) {
	runs := map[string]string{} // Turn ID → Run ID
	note := func(turnID, runID string) {
		if runs[turnID] == "" {
			runs[turnID] = runID
		}
	}
	for _, m := range b.Moves {
		note(m.TurnID, m.RunID)
	}
	for _, e := range b.Events {
		note(e.TurnID, e.RunID)
	}
	for _, m := range b.Finishes {
		note(m.TurnID, m.RunID)
	}
	ids := slices.Sorted(maps.Keys(runs))
	c.log.Error("gateway: the store failed to write the connection's journal batch; its Turns fail persistence_failed and the connection closes",
		"turn_ids", ids, "moves", len(b.Moves), "events", len(b.Events), "finishes", len(b.Finishes), "err", err)
	for _, id := range ids {
		c.g.markUnwritten(id, runs[id], err)
	}
	c.abortStore(fmt.Errorf("gateway: committing the journal batch: %w", err))
}

// abortStore aborts the connection because the store failed to write its
// work (the close status and reason say so).
func (c *conn) abortStore(err error) {
	c.storeLost.Store(true)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if pc != nil {
		pc.Abort(err, peer.StatusInternal, StoreFailedReason)
	}
}

// hookStore is the store the connection's input and interaction modules
// write through from their hooks. A write it fails records a receipt or a
// question the lifecycle goes on from (the next input follows an accepted
// one; an answer needs its question): the Turn fails persistence_failed
// and the connection is aborted before anything that followed it leaves,
// as for a failed batch. A refusal of the write itself (ErrStale, ...) and
// a context that ended are not store failures.
type hookStore struct {
	store.Store
	c *conn
}

func (s hookStore) AdvanceInputCursor(ctx context.Context, turnID string, from, to int64) error {
	err := s.Store.AdvanceInputCursor(ctx, turnID, from, to)
	if hookWriteFailed(ctx, err) {
		s.c.hookFailed("the input cursor", turnID, s.c.runOfTurn(turnID), err)
	}
	return err
}

func (s hookStore) CreateInteraction(ctx context.Context, i store.Interaction) error {
	err := s.Store.CreateInteraction(ctx, i)
	if hookWriteFailed(ctx, err) {
		s.c.hookFailed("an interaction", i.TurnID, i.RunID, err)
	}
	return err
}

func (s hookStore) TransitionInteraction(ctx context.Context, id string, from, to store.InteractionState, answer json.RawMessage, at time.Time) error {
	err := s.Store.TransitionInteraction(ctx, id, from, to, answer, at)
	if hookWriteFailed(ctx, err) {
		// A read still works on a full disk; it names the Turn.
		if it, rerr := s.Store.GetInteraction(ctx, id); rerr == nil {
			s.c.hookFailed("an interaction's state", it.TurnID, it.RunID, err)
		} else {
			s.c.log.Error("gateway: the store failed to write an interaction's state; the connection closes", "interaction_id", id, "err", err)
			s.c.abortStore(fmt.Errorf("gateway: writing an interaction's state: %w", err))
		}
	}
	return err
}

func hookWriteFailed(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrStale) && !errors.Is(err, store.ErrNotFound) &&
		!errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrInvalid)
}

// hookFailed fails the Turn of a hook's failed write and aborts the
// connection.
func (c *conn) hookFailed(what, turnID, runID string, err error) {
	c.log.Error("gateway: the store failed to write "+what+"; the Turn fails persistence_failed and the connection closes", "turn_id", turnID, "run_id", runID, "err", err)
	c.g.markUnwritten(turnID, runID, err)
	c.abortStore(fmt.Errorf("gateway: writing %s: %w", what, err))
}

// runOfTurn is the Run ID of the connection's Run of turnID ("" if none).
func (c *conn) runOfTurn(turnID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, r := range c.runs {
		if r.turnID == turnID {
			return id
		}
	}
	return ""
}

// storeFailure reports whether err from Commit means the batch was not
// written: Commit's own ErrNotFound (events of a Turn that does not exist)
// leaves the rest committed.
func storeFailure(err error) bool { return err != nil && !errors.Is(err, store.ErrNotFound) }

// markUnwritten marks the Turn of Run runID unwritten (the first cause
// stays), shows it failed to its readers and wakes the scheduler, whose
// next pass tries to write its failure.
func (g *Gateway) markUnwritten(turnID, runID string, cause error) {
	g.mu.Lock()
	if g.unwritten == nil {
		g.unwritten = map[string]*unwritten{}
	}
	_, had := g.unwritten[turnID]
	if !had {
		g.unwritten[turnID] = &unwritten{runID: runID, cause: boundedErr(cause)}
	}
	g.mu.Unlock()
	if had {
		return
	}
	g.cfg.Journal.Unrecorded(turnID, runID, g.persistenceOutcome(turnID))
	g.kick()
}

// isUnwritten reports whether the store failed to write the Turn's record
// (its failure may be written by now): nothing else of it is written.
func (g *Gateway) isUnwritten(turnID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.unwritten[turnID]
	return ok
}

// persistenceOutcome is the failed Turn's outcome: the reason and the
// store's error as evidence.
func (g *Gateway) persistenceOutcome(turnID string) store.Outcome {
	g.mu.Lock()
	u := g.unwritten[turnID]
	g.mu.Unlock()
	o := store.Outcome{Reason: store.ReasonPersistenceFailed}
	if u != nil {
		o.Evidence, _ = json.Marshal(map[string]string{"store_error": u.cause})
	}
	return o
}

// withoutUnwritten drops from b every write of an unwritten Turn: its
// failure is written by recordUnwritten alone, and nothing follows it.
func (g *Gateway) withoutUnwritten(b store.Batch) store.Batch {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.unwritten) == 0 {
		return b
	}
	keep := func(id string) bool { return g.unwritten[id] == nil }
	out := store.Batch{}
	for _, m := range b.Moves {
		if keep(m.TurnID) {
			out.Moves = append(out.Moves, m)
		}
	}
	for _, e := range b.Events {
		if keep(e.TurnID) {
			out.Events = append(out.Events, e)
		}
	}
	for _, m := range b.Finishes {
		if keep(m.TurnID) {
			out.Finishes = append(out.Finishes, m)
		}
	}
	return out
}

// errUnwritten refuses a move of a Turn whose failure is being written.
var errUnwritten = errors.New("gateway: the store failed to write the Turn's record; its failure (persistence_failed) is written first")

// recordUnwritten writes the failure of every unwritten Turn the store
// takes now; the scheduler runs it at each pass (every PollInterval, and
// when kicked), so a store that works again gets them within one.
func (g *Gateway) recordUnwritten() {
	g.mu.Lock()
	var ids []string
	for id, u := range g.unwritten {
		switch {
		case !u.written:
			ids = append(ids, id)
		case g.turns[id] == nil:
			delete(g.unwritten, id) // its worker, and so its connection, is done with it
		}
	}
	g.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		if g.ctx.Err() != nil {
			return
		}
		g.recordOne(id)
	}
}

// recordOne writes one unwritten Turn's failure from the state the store
// holds it in, with an observation event that says why, in one commit.
func (g *Gateway) recordOne(id string) {
	g.mu.Lock()
	u := g.unwritten[id]
	g.mu.Unlock()
	if u == nil || u.written {
		return
	}
	ctx, cancel := g.storeCtx()
	defer cancel()
	err := g.writeFailure(ctx, id, u)
	switch {
	case errors.Is(err, errSettled):
		g.forgetUnwritten(id)
	case err == nil:
		g.cfg.Logger.Info("gateway: the Turn's failure is written (persistence_failed)", "turn_id", id, "run_id", u.runID, "attempts", u.attempts+1)
		g.forgetUnwritten(id)
	case errors.Is(err, store.ErrStale):
		// It moved meanwhile: the next pass reads it again.
	default:
		g.mu.Lock()
		u.attempts++
		n := u.attempts
		g.mu.Unlock()
		if n&(n-1) == 0 { // the 1st, 2nd, 4th, 8th ... failure: a full disk does not fill the log
			g.cfg.Logger.Warn("gateway: writing the Turn's failure (persistence_failed) failed; retrying at the next pass", "turn_id", id, "attempts", n, "err", err)
		}
	}
}

// errSettled: the store holds the Turn finished, or under another Run.
var errSettled = errors.New("gateway: the Turn is settled")

func (g *Gateway) writeFailure(ctx context.Context, id string, u *unwritten) error {
	t, err := g.cfg.Store.GetTurn(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the Turn: %w", err)
	}
	if t.State.Terminal() || t.RunID != u.runID {
		return errSettled
	}
	now := g.cfg.Clock.Now()
	st, err := turn.Fire(turn.RefOf(t), turn.PersistenceFailed, turn.Args{Outcome: g.persistenceOutcome(id), At: now})
	if err != nil || !st.Moved() {
		return errSettled // a state the table does not fail from: nothing ran
	}
	payload, _ := json.Marshal(map[string]string{"reason": store.ReasonPersistenceFailed, "store_error": u.cause})
	obs := store.Event{TurnID: id, RunID: u.runID, Type: "observation", Payload: payload, At: now}
	res, err := g.cfg.Store.Commit(ctx, store.Batch{Events: []store.Event{obs}, Finishes: []store.TurnMove{st.Move}})
	if err == nil && len(res.Finishes) == 1 {
		err = res.Finishes[0]
	}
	if err != nil {
		return fmt.Errorf("writing the Turn's failure: %w", err)
	}
	return nil
}

// forgetUnwritten notes that the store holds the Turn's record; the mark
// itself goes with the Turn's worker (recordUnwritten).
func (g *Gateway) forgetUnwritten(id string) {
	g.mu.Lock()
	if u := g.unwritten[id]; u != nil {
		u.written = true
	}
	g.mu.Unlock()
	g.cfg.Journal.Recorded(id)
	g.cfg.Journal.Notify(id)
}

// UnwrittenTurns lists the Turns whose failure is not written yet, for
// tests and diagnostics.
func (g *Gateway) UnwrittenTurns() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ids []string
	for id, u := range g.unwritten {
		if !u.written {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/wire"
)

// The journal batch. Hooks do not write the Turn journal one event at a
// time: they add to the connection's batch, and the loop commits the batch
// in one store write (group commit) at its Ready, after the frames it
// delivered together and before the frames it queued are written (peer
// ConnConfig.Ready). Only then are the Turns' event streams woken. Any
// other store write a hook makes commits the batch first (conn.storeCtx),
// so the store sees every write of the loop in the order the hooks made
// them, and no frame, receipt or API answer depends on an event that is
// not durable yet.

// storeCommitTimeout bounds one commit of the batch, as storeCtx bounds
// one write.
const storeCommitTimeout = 3 * time.Second

// validated is the payload of a frame as it arrived and was validated
// (wire.Decode checked exactly these bytes), for the journal; a frame Core
// queued itself has no arrived bytes and is encoded.
func validated(m *wire.Message) any {
	if len(m.Envelope.Payload) > 0 {
		return m.Envelope.Payload
	}
	return m.Payload
}

// event is a journal record of r. A payload that is already JSON (a
// frame's validated bytes) is stored as it is, not decoded and encoded
// again.
func (c *conn) event(r *runRec, typ string, payload any) (store.Event, error) {
	raw, ok := payload.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(payload); err != nil {
			return store.Event{}, err
		}
	}
	return store.Event{TurnID: r.turnID, RunID: r.runID, Type: typ, Payload: raw, At: c.g.cfg.Clock.Now()}, nil
}

// commit writes the batch (on the loop), then wakes the event streams of
// its Turns and runs what waited for it. A failed commit is logged with
// what it lost, as a failed write was; it is not retried, since a later
// batch would then overtake it.
func (c *conn) commit(ctx context.Context) {
	if c.pending.Empty() && len(c.after) == 0 {
		return
	}
	batch, after := c.pending, c.after
	c.pending, c.after = store.Batch{}, nil
	ctx, cancel := context.WithTimeout(ctx, storeCommitTimeout)
	defer cancel()
	res, err := c.g.cfg.Store.Commit(ctx, batch)
	if err != nil {
		c.log.Warn("gateway: commit", "moves", len(batch.Moves), "events", len(batch.Events), "finishes", len(batch.Finishes), "err", err)
	}
	// The Turns' machines made these moves from the states they hold, so
	// a move the store refuses means the store and the machine disagree.
	for i, merr := range append(res.Moves, res.Finishes...) {
		if merr != nil {
			m := append(batch.Moves, batch.Finishes...)[i]
			c.log.Warn("gateway: move turn", "turn_id", m.TurnID, "from", m.From, "to", m.To, "err", merr)
		}
	}
	woken := map[string]bool{}
	wake := func(turnID string) {
		if !woken[turnID] {
			woken[turnID] = true
			c.g.cfg.Journal.Notify(turnID)
		}
	}
	for _, m := range batch.Moves {
		wake(m.TurnID)
	}
	for _, e := range batch.Events {
		wake(e.TurnID)
	}
	for _, f := range batch.Finishes {
		wake(f.TurnID)
	}
	for _, fn := range after {
		fn()
	}
}

// storeCtx is storeCtx for a write a hook makes on the loop: the journal
// batch is committed first, so the write lands after the events the hooks
// recorded before it.
func (c *conn) storeCtx() (context.Context, context.CancelFunc) {
	c.commit(context.Background())
	return storeCtx()
}

// journalNow appends one event at once, off the loop (the batch is the
// loop's): a cancellation's record must be durable before its frame is
// queued.
func (c *conn) journalNow(r *runRec, typ string, payload any) error {
	e, err := c.event(r, typ, payload)
	if err != nil {
		return err
	}
	ctx, cancel := storeCtx()
	defer cancel()
	_, err = c.g.cfg.Journal.Append(ctx, e)
	return err
}

package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/run"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// The journal batch. Hooks do not write the Turn journal one event at a
// time: they add to the connection's batch, which the loop hands to the
// connection's writer at its Ready, after the frames it delivered
// together; the writer commits it in one store write (group commit, taking
// every batch queued while the last one committed) while the loop goes on
// reading. Before the loop writes a frame, before a Do returns and before
// the loop ends, it waits until the writer is done (peer ConnConfig.Durable).
// The Turns' event streams are woken only after the commit. Any other
// store write a hook makes waits for the writer first (conn.storeCtx), so
// the store sees every write of the loop in the order the hooks made them,
// and no frame, receipt or API answer depends on an event that is not
// durable yet.

// storeCommitTimeout bounds one commit of the batch, as storeCtx bounds
// one write.
const storeCommitTimeout = 3 * time.Second

// DefaultJournalBacklog is how many bytes of Run events a connection may
// hold that the store has not committed yet (Config.JournalBacklog).
const DefaultJournalBacklog = 16 << 20

// overflows reports whether journaling n more bytes of r's frames would
// exceed the connection's backlog; if so it closes r's subscription
// (subscription_overflow, once) instead.
//
// decision: a store that falls behind a Run's frames must not grow Core's
// memory without bound, and stalling the connection's reader would stall
// every other Run, read and heartbeat on it. The Run whose frame does not
// fit loses its subscription with an explicit observation error while the
// connection stays up, as daemon-protocol.txt:151 describes: the Turn
// fails event_stream_incomplete, no error or done is invented, and later
// frames of the Run are ignored (spec/run.yaml, incomplete).
func (c *conn) overflows(r *runRec, n int64) bool {
	if r.overflowed {
		return true
	}
	if c.backlog.Load()+n <= c.g.cfg.JournalBacklog {
		return false
	}
	r.overflowed = true
	c.log.Warn("gateway: run subscription overflow: the store is behind the Run's frames", "run_id", r.runID, "turn_id", r.turnID,
		"backlog_bytes", c.backlog.Load(), "limit_bytes", c.g.cfg.JournalBacklog)
	_ = c.d.Local(peer.Key{Machine: run.Table.Name, ID: r.runID}, fsm.EventID(run.EventSubscriptionOverflow), nil)
	return true
}

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

// commit is the loop's Ready: it hands the batch its hooks made to the
// connection's writer and returns, so the loop goes on reading while the
// batch commits (Durable waits for it where the loop must). The writer
// takes every batch queued by then in one store write, then wakes the
// event streams of their Turns and runs what waited for them, in order,
// off the loop. A failed commit is not retried, since a later batch would
// then overtake it: its Turns fail persistence_failed and the connection
// is aborted before any frame that waited for it leaves (persistence.go).
func (c *conn) commit(context.Context) {
	if c.pending.Empty() && len(c.after) == 0 {
		return
	}
	w := &c.writer
	w.mu.Lock()
	w.queue = append(w.queue, queued{batch: c.pending, after: c.after})
	start := !w.busy
	if start {
		w.busy = true
		w.idle = make(chan struct{})
	}
	w.mu.Unlock()
	c.pending, c.after = store.Batch{}, nil
	if start {
		go c.write()
	}
}

// batchWriter is a connection's writer of journal batches: a goroutine
// that runs only while batches are queued.
type batchWriter struct {
	mu    sync.Mutex
	queue []queued
	busy  bool
	idle  chan struct{} // closed when busy ends
}

// queued is one Ready's batch and what waits for its commit.
type queued struct {
	batch store.Batch
	after []func()
}

// write commits the queued batches until none is left.
func (c *conn) write() {
	w := &c.writer
	for {
		w.mu.Lock()
		q := w.queue
		w.queue = nil
		if len(q) == 0 {
			w.busy = false
			close(w.idle)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		c.commitQueued(q)
	}
}

// commitQueued writes q's batches in one store write. Merging keeps every
// Turn's order: a Turn's moves come before its events and its finish
// after them in the lifecycle itself, so one batch's finish is never
// followed by a later batch's move of the same Turn.
func (c *conn) commitQueued(q []queued) {
	batch := q[0].batch
	for _, x := range q[1:] {
		batch.Moves = append(batch.Moves, x.batch.Moves...)
		batch.Events = append(batch.Events, x.batch.Events...)
		batch.Finishes = append(batch.Finishes, x.batch.Finishes...)
	}
	var bytes int64
	for _, e := range batch.Events {
		bytes += int64(len(e.Payload))
	}
	// A Turn whose earlier write failed gets nothing more written here:
	// its failure is written alone (persistence.go).
	batch = c.g.withoutUnwritten(batch)
	var res store.BatchResult
	var err error
	if !batch.Empty() {
		ctx, cancel := context.WithTimeout(c.g.stores, storeCommitTimeout)
		res, err = c.g.cfg.Store.Commit(ctx, batch)
		cancel()
	}
	c.backlog.Add(-bytes)
	switch {
	case storeFailure(err):
		c.storeFailed(batch, err)
	case err != nil:
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
	for _, x := range q {
		for _, fn := range x.after {
			fn()
		}
	}
}

// durable is the loop's Durable: it waits until every batch handed to the
// writer is committed.
func (c *conn) durable(ctx context.Context) {
	w := &c.writer
	w.mu.Lock()
	busy, idle := w.busy, w.idle
	w.mu.Unlock()
	if !busy {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// storeCtx is storeCtx for a write a hook makes on the loop: the journal
// batch is committed first, so the write lands after the events the hooks
// recorded before it.
func (c *conn) storeCtx() (context.Context, context.CancelFunc) {
	c.commit(c.g.stores)
	c.durable(c.g.stores)
	return c.g.storeCtx()
}

// journalNow appends one event at once, off the loop (the batch is the
// loop's): a cancellation's record must be durable before its frame is
// queued.
func (c *conn) journalNow(r *runRec, typ string, payload any) error {
	e, err := c.event(r, typ, payload)
	if err != nil {
		return err
	}
	ctx, cancel := c.g.storeCtx()
	defer cancel()
	_, err = c.g.cfg.Journal.Append(ctx, e)
	return err
}

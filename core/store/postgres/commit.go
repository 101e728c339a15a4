package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentwire/agentwire/core/store"
)

// appendEventSQL numbers an event with its Turn's event_seq and stores it
// (as appendInputSQL does an input); no Turn, no row. Arguments: turn,
// run, type, payload, at.
const appendEventSQL = `WITH t AS (UPDATE turns SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq)
	INSERT INTO events(turn_id, seq, run_id, type, payload, at) SELECT $1, event_seq, $2, $3, $4, $5 FROM t RETURNING seq`

// lockTurnsSQL locks a batch's Turns in the order of their IDs before
// anything else in it: two batches that share Turns then wait for each
// other instead of each locking one the other needs next. FOR NO KEY
// UPDATE is what the batch's UPDATEs take anyway; it lets inserts that
// only reference a Turn (an interaction) through.
const lockTurnsSQL = `SELECT 1 FROM turns WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`

// lockSessionsSQL locks the Sessions of a batch's claims, in the order
// of their IDs, after its Turns. A claim is conditional on no other Turn
// of its Session being active, which a claim of another replica could
// make true at the same moment: under READ COMMITTED, the claim's own
// statement reads a snapshot taken when it starts, so it would not see a
// sibling claimed concurrently. With the Session's row locked first, the
// claim's statement starts only once any other claim of the Session
// committed, and its snapshot then sees it: a Session's Turns run one at
// a time across every replica (the Session reservation of
// internal/core/gateway/reservation.go, made durable for Turns).
//
// decision: DueTurns takes no FOR UPDATE SKIP LOCKED. It is a read outside
// any transaction, so a row lock would end with the statement, before the
// worker placed the Turn; what makes a claim exclusive is the claim's own
// conditional UPDATE (from queued, with no Run) and this Session lock.
// Replicas that list the same head Turn both try; one claim applies and
// the other is ErrStale (TestReplicasClaimRace).
const lockSessionsSQL = `SELECT 1 FROM sessions WHERE id IN (SELECT session_id FROM turns WHERE id = ANY($1)) ORDER BY id FOR NO KEY UPDATE`

// commitAttempts bounds how often a batch that the database aborted as a
// deadlock (or a serialization failure) is sent again: it was rolled back
// whole, so sending it again is safe.
const commitAttempts = 3

// Commit sends the batch as one pgx batch: one round trip, and one
// transaction (pgx runs a batch's statements in an implicit transaction
// that ends with its Sync), so the whole batch commits or none of it
// does. Each move answers whether it applied and whether its Turn exists
// (moveSQL), so nothing is read after a move to classify it.
func (s *Store) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	if err := s.check(ctx); err != nil {
		return store.BatchResult{}, err
	}
	var err error
	for range commitAttempts {
		var res store.BatchResult
		var missing []string
		res, missing, err = s.commitOnce(ctx, b)
		if err == nil {
			return res, store.MissingTurns(missing)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "40P01" && pe.Code != "40001") || ctx.Err() != nil {
			break
		}
	}
	return store.BatchResult{}, s.fail("committing a batch", err)
}

func (s *Store) commitOnce(ctx context.Context, b store.Batch) (store.BatchResult, []string, error) {
	res := store.BatchResult{
		Moves:    validate(b.Moves),
		Events:   make([]store.Event, len(b.Events)),
		Finishes: validate(b.Finishes),
	}
	var ids []string
	for i, m := range b.Moves {
		if res.Moves[i] == nil {
			ids = append(ids, m.TurnID)
		}
	}
	for _, e := range b.Events {
		ids = append(ids, e.TurnID)
	}
	for i, m := range b.Finishes {
		if res.Finishes[i] == nil {
			ids = append(ids, m.TurnID)
		}
	}
	if len(ids) == 0 {
		copy(res.Events, b.Events)
		return res, nil, nil
	}
	slices.Sort(ids)
	batch := &pgx.Batch{}
	batch.Queue(lockTurnsSQL, slices.Compact(ids))
	var claims []string
	for i, m := range b.Moves {
		if res.Moves[i] == nil && m.Claim != nil {
			claims = append(claims, m.TurnID)
		}
	}
	if len(claims) > 0 {
		batch.Queue(lockSessionsSQL, claims)
	}
	queueMoves(batch, b.Moves, res.Moves)
	for _, e := range b.Events {
		batch.Queue(appendEventSQL, e.TurnID, e.RunID, e.Type, blob(e.Payload), ts(e.At))
	}
	queueMoves(batch, b.Finishes, res.Finishes)

	br := s.pool.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	if _, err := br.Exec(); err != nil {
		return res, nil, fmt.Errorf("locking the batch's Turns: %w", err)
	}
	if len(claims) > 0 {
		if _, err := br.Exec(); err != nil {
			return res, nil, fmt.Errorf("locking the Sessions of the batch's claims: %w", err)
		}
	}
	if err := readMoves(br, b.Moves, res.Moves); err != nil {
		return res, nil, err
	}
	var missing []string
	for i, e := range b.Events {
		res.Events[i] = e
		err := br.QueryRow().Scan(&res.Events[i].Seq)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			missing = append(missing, e.TurnID)
		case err != nil:
			return res, nil, fmt.Errorf("appending a %s event to Turn %s: %w", e.Type, e.TurnID, err)
		}
	}
	if err := readMoves(br, b.Finishes, res.Finishes); err != nil {
		return res, nil, err
	}
	// Close reads the end of the batch: its commit.
	if err := br.Close(); err != nil {
		return res, nil, err
	}
	return res, missing, nil
}

// validate is each move's result before it reaches the database: its
// error from the turn table, or nil.
func validate(ms []store.TurnMove) []error {
	out := make([]error, len(ms))
	for i, m := range ms {
		out[i] = m.Validate()
	}
	return out
}

func queueMoves(batch *pgx.Batch, ms []store.TurnMove, errs []error) {
	for i, m := range ms {
		if errs[i] == nil {
			q, args := moveStatement(m)
			batch.Queue(q, args...)
		}
	}
}

// readMoves reads the results of the moves queueMoves queued, in order.
func readMoves(br pgx.BatchResults, ms []store.TurnMove, errs []error) error {
	for i, m := range ms {
		if errs[i] != nil {
			continue
		}
		var moved, exists bool
		if err := br.QueryRow().Scan(&moved, &exists); err != nil {
			return fmt.Errorf("%s: %w", moveOp(m), err)
		}
		errs[i] = moveResult(m, moved, exists)
	}
	return nil
}

package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// DurableCeiling measures what this store's disk allows: n Turns' rows,
// the same as Core writes for a Turn (the Turn, its claim, its moves to
// starting and running, events events and its finish), written with the store's own pragmas and
// prepared statements but in group-committed transactions of batch Turns,
// with no protocol around them. It returns Turns per second. Core's
// benchmarks report it beside the Turn rate through Core, as the ceiling
// that rate is measured against (BENCHMARKS.md). dir must be empty.
func DurableCeiling(ctx context.Context, dir string, n, events, batch int) (float64, error) {
	s, err := Open(ctx, dir)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	t0 := time.Now()
	if err := s.CreateSession(ctx, store.Session{ID: "ceiling", Project: "ceiling", AgentKind: "ceiling", CreatedAt: t0}); err != nil {
		return 0, err
	}
	// Prepared before any transaction (the writer's one connection is the
	// transaction's while it runs).
	for _, q := range []string{createTurnSQL, claimTurnSQL, moveTurnSQL, appendEventSQL, finishTurnSQL} {
		if _, err := s.w.stmt(ctx, q); err != nil {
			return 0, err
		}
	}
	payload := []byte(`{"delta":"a token or two of the model's answer","sequence":1}`)
	began := time.Now()
	for first := 0; first < n; first += batch {
		if err := s.ceilingBatch(ctx, first, min(batch, n-first), events, payload); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(began).Seconds(), nil
}

func (s *Store) ceilingBatch(ctx context.Context, first, count, events int, payload []byte) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	exec := func(q string, args ...any) error {
		p, err := s.w.stmt(ctx, q)
		if err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, p).ExecContext(ctx, args...)
		return err
	}
	now := time.Now()
	for i := first; i < first+count; i++ {
		id, run := fmt.Sprintf("turn-%d", i), fmt.Sprintf("run-%d", i)
		if err := exec(createTurnSQL, createArgs(store.Turn{ID: id, SessionID: "ceiling", Input: payload, CreatedAt: now})...); err != nil {
			return err
		}
		moves := []store.TurnMove{
			{TurnID: id, From: store.TurnQueued, To: store.TurnClaimed, Claim: &store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: run, At: now}, At: now},
			{TurnID: id, RunID: run, From: store.TurnClaimed, To: store.TurnStarting, At: now},
			{TurnID: id, RunID: run, From: store.TurnStarting, To: store.TurnRunning, At: now},
		}
		for _, m := range moves {
			q, args := moveStatement(m)
			if err := exec(q, args...); err != nil {
				return err
			}
		}
		for range events {
			if err := exec(appendEventSQL, id, id, run, "delta", payload, ms(now), id); err != nil {
				return err
			}
		}
		q, args := moveStatement(store.TurnMove{TurnID: id, RunID: run, From: store.TurnRunning, To: store.TurnCompleted, Outcome: &store.Outcome{}, At: now})
		if err := exec(q, args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

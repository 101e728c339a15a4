package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmts are the hot statements, prepared once when the store opens:
// preparing a statement on every call cost a quarter of Core's CPU under
// load (issue 21). Each runs on the writer; a transaction takes its own
// handle with Tx.StmtContext.
type stmts struct {
	// appendEvent inserts an event after its Turn's last and returns its
	// sequence number; no row when the Turn does not exist. Arguments:
	// turn, turn, run, type, payload, at, turn.
	appendEvent *sql.Stmt
}

func (p *stmts) prepare(ctx context.Context, w *sql.DB) error {
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = w.PrepareContext(ctx, q)
		if err != nil {
			err = fmt.Errorf("preparing %q: %w", q, err)
		}
		return st
	}
	p.appendEvent = prep(`INSERT INTO events(turn_id, seq, run_id, type, payload, at)
		SELECT ?, COALESCE((SELECT MAX(seq) FROM events WHERE turn_id = ?), 0) + 1, ?, ?, ?, ?
		WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?) RETURNING seq`)
	return err
}

func (p *stmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{p.appendEvent} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

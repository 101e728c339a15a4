package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// preparedDB is a *sql.DB whose statements are prepared once, on first
// use, and reused: preparing every statement on every call cost a quarter
// of Core's CPU under load (issue 21). The store's queries are constant
// strings, so the cache is bounded by the code. database/sql re-prepares a
// statement on another pooled connection by itself; a transaction takes
// its own handle with Tx.StmtContext (stmt).
type preparedDB struct {
	*sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newPreparedDB(db *sql.DB) *preparedDB {
	return &preparedDB{DB: db, stmts: map[string]*sql.Stmt{}}
}

// stmt is q prepared. Preparing takes a pooled connection, so it happens
// outside the lock (a writer busy in a transaction must not stall every
// other statement), and never inside a transaction of the single writer
// (it would wait for the connection that transaction holds).
func (d *preparedDB) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	d.mu.Lock()
	st, ok := d.stmts[q]
	d.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := d.DB.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if won, ok := d.stmts[q]; ok {
		_ = st.Close() // another goroutine prepared it meanwhile
		return won, nil
	}
	d.stmts[q] = st
	return st, nil
}

func (d *preparedDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := d.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (d *preparedDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := d.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (d *preparedDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := d.stmt(ctx, q)
	if err != nil {
		// A Row carries its error only from database/sql itself: the
		// unprepared query reports the same failure.
		return d.DB.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// Close closes the statements, then the pool.
func (d *preparedDB) Close() error {
	d.mu.Lock()
	var errs []error
	for q, st := range d.stmts {
		errs = append(errs, st.Close())
		delete(d.stmts, q)
	}
	d.mu.Unlock()
	return errors.Join(append(errs, d.DB.Close())...)
}

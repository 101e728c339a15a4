// Package postgres is a store.Store and store.Credentials on PostgreSQL
// (github.com/jackc/pgx/v5 through its pool), with versioned migrations
// like store/sqlite's. It is the store for a database run apart from
// Core, which any number of Core replicas may share (store.Replicas,
// docs/deployment.md).
//
// Every exactly-once decision is one conditional statement: an UPDATE
// whose WHERE clause holds the expected state, an INSERT guarded by a
// unique key (or ON CONFLICT with rows affected), or an UPDATE of a
// counter on the Turn's row that numbers an insert. PostgreSQL's READ
// COMMITTED makes such a statement atomic against another writer: a
// concurrent UPDATE of the same row waits for the row lock, then
// re-evaluates its WHERE clause against the row the winner committed, so
// of writers expecting the same state exactly one matches. That is also
// why two Cores can never claim one Turn: the claim is an UPDATE from
// queued with no Run, and only one UPDATE finds the row still so.
//
// Statements are prepared once per pooled connection and reused: pgx's
// default exec mode (QueryExecModeCacheStatement) does that by itself,
// which is what sqlite/prepared.go does by hand.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentwire/agentwire/core/store"
)

// Store is a store.Store backed by one PostgreSQL database.
type Store struct {
	pool   *pgxpool.Pool
	closed atomic.Bool
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Credentials = (*Store)(nil)
)

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string, as libpq takes), checks that it answers and applies
// the migrations it lacks.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message quotes the DSN with its password redacted only on
		// a best-effort basis: a malformed one could leak it into a log.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) {
			if inner := pe.Unwrap(); inner != nil {
				return nil, fmt.Errorf("postgres: the connection string does not parse: %w", inner)
			}
			return nil, errors.New("postgres: the connection string does not parse")
		}
		return nil, fmt.Errorf("postgres: parsing the connection string: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: opening the pool for %s: %w", where(cfg), err)
	}
	s := &Store{pool: pool}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connecting to %s: %w", where(cfg), err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %s: %w", where(cfg), err)
	}
	return s, nil
}

// where names the database for errors, without credentials.
func where(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Close closes the pool (waiting for connections in use to come back);
// later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pool.Close()
	return nil
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// ts is a time as stored: UTC, to the millisecond (the store's rule, and
// less than timestamptz's microseconds, so what is written is what is
// read back); the zero time is NULL.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Millisecond)
}

// utc is a scan destination for a timestamptz column: NULL reads as the
// zero time, any other value in UTC (pgx reads timestamptz in the local
// zone).
type utc struct{ t *time.Time }

func at(t *time.Time) utc { return utc{t} }

func (u utc) ScanTimestamptz(v pgtype.Timestamptz) error {
	if !v.Valid {
		*u.t = time.Time{}
		return nil
	}
	*u.t = v.Time.UTC()
	return nil
}

// blob binds nil as NULL, so "absent" survives a round trip.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// limitOf is a LIMIT argument: NULL (no limit) for limit <= 0.
func limitOf(limit int) any {
	if limit <= 0 {
		return nil
	}
	return limit
}

// isConstraint reports an integrity constraint violation (class 23:
// unique, foreign key, check, exclusion).
func isConstraint(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && len(e.Code) == 5 && e.Code[:2] == "23"
}

// wrap names the operation a sentinel error (store.ErrStale, ...) ends.
func wrap(op string, err error) error {
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// fail wraps a database error with the operation that failed; after
// Close, an operation cut short by it is ErrClosed.
func (s *Store) fail(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrClosed)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// exec runs one write and reports how many rows it changed; a constraint
// violation is ErrConflict.
func (s *Store) exec(ctx context.Context, op, q string, args ...any) (int64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		if isConstraint(err) {
			return 0, wrap(op, store.ErrConflict)
		}
		return 0, s.fail(op, err)
	}
	return tag.RowsAffected(), nil
}

// missingOr tells a conditional write that changed nothing apart: the
// row does not exist (ErrNotFound) or was not in the expected state
// (ErrStale). The read only classifies the failure; it decides nothing.
func (s *Store) missingOr(ctx context.Context, op, table, col, id string) error {
	var one int
	err := s.pool.QueryRow(ctx, "SELECT 1 FROM "+table+" WHERE "+col+" = $1", id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return wrap(op, store.ErrNotFound)
	}
	if err != nil {
		return s.fail(op, err)
	}
	return wrap(op, store.ErrStale)
}

// conditional runs a conditional UPDATE of one row.
func (s *Store) conditional(ctx context.Context, op, table, col, id, q string, args ...any) error {
	n, err := s.exec(ctx, op, q, args...)
	if err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	return s.missingOr(ctx, op, table, col, id)
}

// notFound maps no row to ErrNotFound and wraps any other error.
func (s *Store) notFound(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return wrap(op, store.ErrNotFound)
	}
	return s.fail(op, err)
}

type scanner interface{ Scan(...any) error }

// collect runs a query and scans each row with scan.
func collect[T any](ctx context.Context, s *Store, op, q string, scan func(scanner) (T, error), args ...any) ([]T, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.fail(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}

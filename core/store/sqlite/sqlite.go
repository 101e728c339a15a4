// Package sqlite is the default store.Store: an embedded SQLite database
// (modernc.org/sqlite, pure Go, no CGO) in Core's data directory, in WAL
// mode, with versioned migrations and a single writer connection.
//
// Every exactly-once decision is one conditional statement (an UPDATE with
// the expected state in its WHERE clause, or an INSERT guarded by a unique
// key), so the same SQL keeps its meaning when several Core replicas share
// a PostgreSQL database; the single writer only spares SQLite its
// SQLITE_BUSY retries.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/agentwire/agentwire/core/store"
)

// FileName is the database file inside the data directory.
const FileName = "core.db"

// Store is a store.Store backed by one SQLite file.
type Store struct {
	w      *preparedDB // the single writer
	r      *preparedDB // readers (WAL lets them run beside the writer)
	closed atomic.Bool
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Credentials = (*Store)(nil)
)

// Open opens (creating it if needed) the database in dir and applies the
// migrations it lacks.
func Open(ctx context.Context, dir string) (*Store, error) {
	path := filepath.Join(dir, FileName)
	// The database holds credentials' hashes, journals and sealed secrets:
	// only Core's user reads it. SQLite gives its WAL and shared-memory
	// files the database file's mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	_ = f.Close()
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(path, 0o600) // a directory from before this rule
	}
	dsn := func(extra string) string {
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "foreign_keys(ON)")
		if extra != "" {
			q.Add("_txlock", extra)
		}
		return "file:" + path + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn("immediate"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", dsn(""))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s := &Store{w: newPreparedDB(w), r: newPreparedDB(r)}
	if err := migrate(ctx, w); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return s, nil
}

// Close closes both pools; later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// ms stores a time as Unix milliseconds; the zero time is 0.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// blob binds nil as NULL, so "absent" survives a round trip.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

// isConstraint reports a UNIQUE, PRIMARY KEY or FOREIGN KEY violation.
func isConstraint(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 19 // SQLITE_CONSTRAINT
}

// exec runs one write and reports how many rows it changed.
func (s *Store) exec(ctx context.Context, q string, args ...any) (int64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	res, err := s.w.ExecContext(ctx, q, args...)
	if err != nil {
		if isConstraint(err) {
			return 0, store.ErrConflict
		}
		return 0, fmt.Errorf("sqlite: %w", err)
	}
	return res.RowsAffected()
}

// missingOr tells a conditional write that changed nothing apart: the
// row does not exist (ErrNotFound) or was not in the expected state
// (ErrStale). The read only classifies the failure; it decides nothing.
func (s *Store) missingOr(ctx context.Context, table, col, id string) error {
	var one int
	err := s.w.QueryRowContext(ctx, "SELECT 1 FROM "+table+" WHERE "+col+" = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return store.ErrStale
}

// conditional runs a conditional UPDATE of one row.
func (s *Store) conditional(ctx context.Context, table, col, id, q string, args ...any) error {
	n, err := s.exec(ctx, q, args...)
	if err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	return s.missingOr(ctx, table, col, id)
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// servingLock is the session advisory lock a serving Core holds on its
// database (scoped to the database, apart from migrateLock).
const servingLock = 0x61677769726532 // "agwire2"

// ErrInUse is a database another Core serves.
var ErrInUse = errors.New("the database is in use by another Core: two Cores on one store would each take the other's devices and fail its Turns (this embedder asked for one Core per database)")

// Lock takes the database for one serving Core: a session advisory lock
// held on a connection of its own until release is called, the store is
// closed, or that connection ends (the lock ends with it, so a Core that
// died leaves no stale lock behind).
//
// agentwire core serve takes no such lock: any number of replicas share a
// PostgreSQL database, each reconciling only what its own dead leases or
// expired ones held (internal/core/gateway/lease.go). The lock is for an
// embedder whose Core owns the store alone (it retires every other
// replica at start), which must then refuse a second one.
func (s *Store) Lock(ctx context.Context) (release func() error, err error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, s.fail("taking the serving lock", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(servingLock)).Scan(&got); err != nil {
		conn.Release()
		return nil, s.fail("taking the serving lock", err)
	}
	if !got {
		conn.Release()
		return nil, ErrInUse
	}
	// The connection leaves the pool with the lock: released back, it
	// would carry the lock to whichever caller acquired it next.
	raw := conn.Hijack()
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Unlocked before the connection closes: the server ends a closed
		// connection's session (and its locks) only some time after the
		// client hung up, and the next Core must not be refused meanwhile.
		_, unlockErr := raw.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(servingLock))
		if err := errors.Join(unlockErr, raw.Close(ctx)); err != nil {
			return fmt.Errorf("postgres: releasing the serving lock: %w", err)
		}
		return nil
	}, nil
}

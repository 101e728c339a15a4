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
var ErrInUse = errors.New("the database is in use by another Core: two Cores on one store would each take the other's devices and fail its Turns (several Core replicas on one database are not supported yet)")

// Lock takes the database for one serving Core: a session advisory lock
// held on a connection of its own until release is called, the store is
// closed, or that connection ends (the lock ends with it, so a Core that
// died leaves no stale lock behind).
//
// decision: as with sqlite.Lock, Core's reconciliation at start releases
// every device and fails every running Turn of the store, which is right
// only for the one Core that owns it; until replicas reconcile only what
// their own leases held (issue 27), a second Core on the same database is
// refused before it touches anything. Administration commands take no
// lock.
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

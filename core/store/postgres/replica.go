package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentwire/agentwire/core/store"
)

// Replicas and device owner leases (store.Replicas): the store that
// several Core replicas share. Each decision is one conditional
// statement, as everywhere in this package: a lease is renewed only while
// its epoch still owns the device, and reaped only by the one UPDATE that
// finds it unended and expired.

func (s *Store) RegisterReplica(ctx context.Context, r store.Replica) error {
	if r.ID == "" {
		return fmt.Errorf("%w: a replica needs an ID", store.ErrInvalid)
	}
	_, err := s.exec(ctx, "registering replica "+r.ID, `INSERT INTO replicas(id, url, started_at, heartbeat_at) VALUES ($1, $2, $3, $4)`,
		r.ID, r.URL, ts(r.StartedAt), ts(r.HeartbeatAt))
	return err
}

func (s *Store) ListReplicas(ctx context.Context) ([]store.Replica, error) {
	out, err := collect(ctx, s, "listing replicas", `SELECT id, url, started_at, heartbeat_at FROM replicas WHERE NOT retired ORDER BY started_at, n`,
		func(sc scanner) (store.Replica, error) {
			var r store.Replica
			err := sc.Scan(&r.ID, &r.URL, at(&r.StartedAt), at(&r.HeartbeatAt))
			return r, err
		})
	if out == nil && err == nil {
		out = []store.Replica{}
	}
	return out, err
}

// acquireLeaseSQL takes a new epoch of the device and records its lease
// in one statement. Arguments: device, replica, at, until.
const acquireLeaseSQL = `WITH d AS (
	INSERT INTO devices(id, owner_epoch, replica_id, connected, declaration, last_seen) VALUES ($1, 1, $2, true, NULL, $3)
	ON CONFLICT (id) DO UPDATE SET owner_epoch = devices.owner_epoch + 1, replica_id = excluded.replica_id, connected = true, declaration = NULL, last_seen = excluded.last_seen
	RETURNING owner_epoch)
INSERT INTO leases(device_id, epoch, replica_id, expires) SELECT $1, owner_epoch, $2, $4 FROM d RETURNING epoch`

func (s *Store) AcquireLease(ctx context.Context, deviceID, replicaID string, at, until time.Time) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	// The epoch is incremented by the database, never computed from an
	// earlier read: ON CONFLICT DO UPDATE inserts or updates the row
	// atomically, also when two connections of a new device race.
	var epoch uint64
	if err := s.pool.QueryRow(ctx, acquireLeaseSQL, deviceID, replicaID, ts(at), ts(until)).Scan(&epoch); err != nil {
		return 0, s.fail("taking the owner lease of device "+deviceID, err)
	}
	return epoch, nil
}

const leaseCols = `device_id, epoch, replica_id, expires, ended, reaped_by`

func scanLease(sc scanner) (store.Lease, error) {
	var l store.Lease
	err := sc.Scan(&l.DeviceID, &l.Epoch, &l.ReplicaID, at(&l.Expires), &l.Ended, &l.ReapedBy)
	return l, err
}

func (s *Store) RenewLeases(ctx context.Context, replicaID string, at, until time.Time) ([]store.Lease, error) {
	op := "renewing the leases of replica " + replicaID
	if _, err := s.exec(ctx, op, `UPDATE replicas SET heartbeat_at = $1 WHERE id = $2`, ts(at), replicaID); err != nil {
		return nil, err
	}
	// The join reads the device's current epoch under the lease row's
	// lock: a newer connection's AcquireLease that committed first has
	// moved it on, and the old lease is then not renewed.
	out, err := collect(ctx, s, op, `WITH r AS (UPDATE leases l SET expires = $1 FROM devices d
		WHERE l.replica_id = $2 AND NOT l.ended AND (l.expires IS NULL OR l.expires > $3) AND d.id = l.device_id AND d.owner_epoch = l.epoch
		RETURNING l.device_id, l.epoch, l.replica_id, l.expires, l.ended, l.reaped_by)
		SELECT `+leaseCols+` FROM r ORDER BY expires, device_id, epoch`, scanLease, ts(until), replicaID, ts(at))
	if out == nil && err == nil {
		out = []store.Lease{}
	}
	return out, err
}

func (s *Store) RetireReplicas(ctx context.Context, url, except string, at time.Time) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	op := "retiring replicas"
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, s.fail(op, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE replicas SET retired = true WHERE id <> $1 AND ($2 = '' OR url = $2)`, except, url); err != nil {
		return 0, s.fail(op, err)
	}
	// With url "", every other lease goes, those of no replica too
	// (AcquireOwner's, a Core that owned the store alone); a lease already
	// past its expiry keeps it.
	tag, err := tx.Exec(ctx, `UPDATE leases SET expires = CASE WHEN expires IS NULL OR expires > $1 THEN $1 ELSE expires END
		WHERE NOT ended AND replica_id <> $2 AND ($3 = '' OR replica_id IN (SELECT id FROM replicas WHERE url = $3 AND id <> $2))`,
		ts(at), except, url)
	if err != nil {
		return 0, s.fail(op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, s.fail(op, err)
	}
	return int(tag.RowsAffected()), nil
}

func (s *Store) ExpiredLeases(ctx context.Context, at time.Time) ([]store.Lease, error) {
	return collect(ctx, s, "listing expired leases", `SELECT `+leaseCols+` FROM leases WHERE NOT ended AND expires <= $1
		ORDER BY expires, device_id, epoch`, scanLease, ts(at))
}

func (s *Store) ReapLease(ctx context.Context, deviceID string, epoch uint64, replicaID string, at time.Time) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	op := fmt.Sprintf("reaping the lease of device %s epoch %d", deviceID, epoch)
	// One statement: the lease ends only if it is unended and expired
	// (of replicas racing, one UPDATE matches), and the device goes
	// offline only if the reaped epoch still owns it.
	var reaped, exists bool
	err := s.pool.QueryRow(ctx, `WITH r AS (UPDATE leases SET ended = true, reaped_by = $3
			WHERE device_id = $1 AND epoch = $2 AND NOT ended AND expires <= $4 RETURNING 1),
		d AS (UPDATE devices SET connected = false, declaration = NULL, last_seen = $4
			WHERE id = $1 AND owner_epoch = $2 AND EXISTS (SELECT 1 FROM r) RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM r), EXISTS (SELECT 1 FROM leases WHERE device_id = $1 AND epoch = $2)`,
		deviceID, epoch, replicaID, ts(at)).Scan(&reaped, &exists)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return wrap(op, store.ErrNotFound)
	case err != nil:
		return s.fail(op, err)
	case reaped:
		return nil
	case !exists:
		return wrap(op, store.ErrNotFound)
	}
	return wrap(op, store.ErrStale)
}

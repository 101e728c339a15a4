package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// Replicas and device owner leases (store.Replicas). SQLite is one
// machine's store, so in practice one Core serves it (Lock); the leases
// are kept all the same, so reconciliation works one way on every store.

func (s *Store) RegisterReplica(ctx context.Context, r store.Replica) error {
	if r.ID == "" {
		return fmt.Errorf("%w: a replica needs an ID", store.ErrInvalid)
	}
	_, err := s.exec(ctx, `INSERT INTO replicas(id, url, started_at, heartbeat_at) VALUES (?, ?, ?, ?)`,
		r.ID, r.URL, ms(r.StartedAt), ms(r.HeartbeatAt))
	return err
}

func (s *Store) ListReplicas(ctx context.Context) ([]store.Replica, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, url, started_at, heartbeat_at FROM replicas WHERE retired = 0 ORDER BY started_at, rowid`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: listing replicas: %w", err)
	}
	defer rows.Close()
	out := []store.Replica{}
	for rows.Next() {
		var r store.Replica
		var started, beat int64
		if err := rows.Scan(&r.ID, &r.URL, &started, &beat); err != nil {
			return nil, fmt.Errorf("sqlite: listing replicas: %w", err)
		}
		r.StartedAt, r.HeartbeatAt = fromMS(started), fromMS(beat)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) AcquireLease(ctx context.Context, deviceID, replicaID string, at, until time.Time) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: taking the owner lease of device %s: %w", deviceID, err)
	}
	defer func() { _ = tx.Rollback() }()
	// One upsert: the epoch is incremented by the database, never computed
	// from an earlier read; the lease row of that epoch goes with it.
	var epoch uint64
	err = tx.QueryRowContext(ctx, `INSERT INTO devices(id, owner_epoch, replica_id, connected, declaration, last_seen) VALUES (?, 1, ?, 1, NULL, ?)
		ON CONFLICT(id) DO UPDATE SET owner_epoch = owner_epoch + 1, replica_id = excluded.replica_id, connected = 1, declaration = NULL, last_seen = excluded.last_seen
		RETURNING owner_epoch`, deviceID, replicaID, ms(at)).Scan(&epoch)
	if err == nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO leases(device_id, epoch, replica_id, expires) VALUES (?, ?, ?, ?)`, deviceID, epoch, replicaID, ms(until))
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: taking the owner lease of device %s: %w", deviceID, err)
	}
	return epoch, nil
}

const leaseCols = `device_id, epoch, replica_id, expires, ended, reaped_by`

func scanLeases(rows *sql.Rows) ([]store.Lease, error) {
	defer rows.Close()
	var out []store.Lease
	for rows.Next() {
		var l store.Lease
		var exp int64
		if err := rows.Scan(&l.DeviceID, &l.Epoch, &l.ReplicaID, &exp, &l.Ended, &l.ReapedBy); err != nil {
			return nil, err
		}
		l.Expires = fromMS(exp)
		out = append(out, l)
	}
	return out, rows.Err()
}

func (s *Store) RenewLeases(ctx context.Context, replicaID string, at, until time.Time) ([]store.Lease, error) {
	if _, err := s.exec(ctx, `UPDATE replicas SET heartbeat_at = ? WHERE id = ?`, ms(at), replicaID); err != nil {
		return nil, fmt.Errorf("sqlite: renewing the leases of replica %s: %w", replicaID, err)
	}
	rows, err := s.w.QueryContext(ctx, `UPDATE leases SET expires = ? WHERE replica_id = ? AND ended = 0 AND (expires = 0 OR expires > ?)
		AND epoch = (SELECT owner_epoch FROM devices WHERE id = leases.device_id)
		RETURNING `+leaseCols, ms(until), replicaID, ms(at))
	if err != nil {
		return nil, fmt.Errorf("sqlite: renewing the leases of replica %s: %w", replicaID, err)
	}
	out, err := scanLeases(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: renewing the leases of replica %s: %w", replicaID, err)
	}
	sortLeases(out)
	return out, nil
}

func (s *Store) RetireReplicas(ctx context.Context, url, except string, at time.Time) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: retiring replicas: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, `UPDATE replicas SET retired = 1 WHERE id != ? AND (? = '' OR url = ?)`, except, url, url)
	var res sql.Result
	if err == nil {
		// With url "", every other lease goes, those of no replica too
		// (AcquireOwner's, a Core that owned the store alone); a lease
		// already past its expiry keeps it.
		res, err = tx.ExecContext(ctx, `UPDATE leases SET expires = CASE WHEN expires = 0 OR expires > ? THEN ? ELSE expires END
			WHERE ended = 0 AND replica_id != ?
			AND (? = '' OR replica_id IN (SELECT id FROM replicas WHERE url = ? AND id != ?))`, ms(at), ms(at), except, url, url, except)
	}
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: retiring replicas: %w", err)
	}
	return int(n), nil
}

func (s *Store) ExpiredLeases(ctx context.Context, at time.Time) ([]store.Lease, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+leaseCols+` FROM leases WHERE ended = 0 AND expires != 0 AND expires <= ?
		ORDER BY expires, device_id, epoch`, ms(at))
	if err != nil {
		return nil, fmt.Errorf("sqlite: listing expired leases: %w", err)
	}
	out, err := scanLeases(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: listing expired leases: %w", err)
	}
	return out, nil
}

func (s *Store) ReapLease(ctx context.Context, deviceID string, epoch uint64, replicaID string, at time.Time) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: reaping the lease of device %s epoch %d: %w", deviceID, epoch, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `UPDATE leases SET ended = 1, reaped_by = ? WHERE device_id = ? AND epoch = ? AND ended = 0 AND expires != 0 AND expires <= ?`,
		replicaID, deviceID, epoch, ms(at))
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 0 {
		var one int
		switch err = tx.QueryRowContext(ctx, `SELECT 1 FROM leases WHERE device_id = ? AND epoch = ?`, deviceID, epoch).Scan(&one); {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNotFound
		case err == nil:
			return store.ErrStale
		}
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `UPDATE devices SET connected = 0, declaration = NULL, last_seen = ? WHERE id = ? AND owner_epoch = ?`, ms(at), deviceID, epoch)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return fmt.Errorf("sqlite: reaping the lease of device %s epoch %d: %w", deviceID, epoch, err)
	}
	return nil
}

// sortLeases orders leases as ExpiredLeases does.
func sortLeases(ls []store.Lease) {
	slices.SortFunc(ls, func(a, b store.Lease) int {
		return cmp.Or(a.Expires.Compare(b.Expires), cmp.Compare(a.DeviceID, b.DeviceID), cmp.Compare(a.Epoch, b.Epoch))
	})
}

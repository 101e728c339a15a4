package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// Device owner leases and the device registry.

func (s *Store) AcquireOwner(ctx context.Context, deviceID string, at time.Time) (uint64, error) {
	return s.AcquireLease(ctx, deviceID, "", at, time.Time{})
}

func (s *Store) ReleaseOwner(ctx context.Context, deviceID string, epoch uint64, at time.Time) error {
	if _, err := s.exec(ctx, "ending the owner lease of device "+deviceID,
		`UPDATE leases SET ended = true WHERE device_id = $1 AND epoch = $2 AND NOT ended`, deviceID, epoch); err != nil {
		return err
	}
	return s.conditional(ctx, "releasing the owner lease of device "+deviceID, "devices", "id", deviceID,
		`UPDATE devices SET connected = false, declaration = NULL, last_seen = $1 WHERE id = $2 AND owner_epoch = $3`,
		ts(at), deviceID, epoch)
}

func (s *Store) RecordDeclaration(ctx context.Context, deviceID string, epoch uint64, decl json.RawMessage, at time.Time) error {
	return s.conditional(ctx, "recording the declaration of device "+deviceID, "devices", "id", deviceID,
		`UPDATE devices SET declaration = $1, last_seen = $2 WHERE id = $3 AND owner_epoch = $4 AND connected`,
		blob(decl), ts(at), deviceID, epoch)
}

const deviceCols = `id, project, owner_epoch, replica_id, connected, declaration, last_seen`

func scanDevice(sc scanner) (store.Device, error) {
	var d store.Device
	err := sc.Scan(&d.ID, &d.Project, &d.OwnerEpoch, &d.ReplicaID, &d.Connected, (*[]byte)(&d.Declaration), at(&d.LastSeen))
	return d, err
}

func (s *Store) GetDevice(ctx context.Context, deviceID string) (store.Device, error) {
	if err := s.check(ctx); err != nil {
		return store.Device{}, err
	}
	d, err := scanDevice(s.pool.QueryRow(ctx, `SELECT `+deviceCols+` FROM devices WHERE id = $1`, deviceID))
	return d, s.notFound("reading device "+deviceID, err)
}

func (s *Store) ListDevices(ctx context.Context) ([]store.Device, error) {
	out, err := collect(ctx, s, "listing devices", `SELECT `+deviceCols+` FROM devices ORDER BY id`, scanDevice)
	if out == nil && err == nil {
		out = []store.Device{}
	}
	return out, err
}

func (s *Store) AssignDevice(ctx context.Context, deviceID, project string, at time.Time) error {
	if deviceID == "" || project == "" {
		return errors.Join(store.ErrInvalid, fmt.Errorf("a device assignment needs a device and a project"))
	}
	// One upsert whose update applies only while the device has no project
	// or already this one; a device of another project changes nothing.
	n, err := s.exec(ctx, "assigning device "+deviceID+" to project "+project,
		`INSERT INTO devices(id, project, owner_epoch, connected, declaration, last_seen) VALUES ($1, $2, 0, false, NULL, $3)
		ON CONFLICT (id) DO UPDATE SET project = excluded.project WHERE devices.project = '' OR devices.project = excluded.project`,
		deviceID, project, ts(at))
	if err != nil {
		return err
	}
	if n == 0 {
		return wrap("assigning device "+deviceID+" to project "+project+": it belongs to another project", store.ErrConflict)
	}
	return nil
}

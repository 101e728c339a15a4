package postgres

import (
	"context"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm/suspension"
)

// Suspension attempts and initialization outcomes. Creating an attempt is
// one INSERT guarded by the suspensions_open index; moving it is one
// UPDATE conditional on its expected state.

func (s *Store) CreateSuspension(ctx context.Context, x store.Suspension) error {
	if err := (store.Move{Machine: suspension.Name, Key: x.ID, To: x.State}).Validate(); err != nil {
		return err
	}
	if x.UpdatedAt.IsZero() {
		x.UpdatedAt = x.CreatedAt
	}
	_, err := s.exec(ctx, "creating suspension attempt "+x.ID, `INSERT INTO suspensions(id, environment_id, device_id, owner_epoch, state, settled, error_code, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		x.ID, x.EnvironmentID, x.DeviceID, x.OwnerEpoch, x.State, x.Settled, x.ErrorCode, ts(x.CreatedAt), ts(x.UpdatedAt))
	return err
}

const suspensionCols = `id, environment_id, device_id, state, settled, error_code, created_at, updated_at, owner_epoch`

func scanSuspension(r scanner) (store.Suspension, error) {
	var x store.Suspension
	err := r.Scan(&x.ID, &x.EnvironmentID, &x.DeviceID, &x.State, &x.Settled, &x.ErrorCode, at(&x.CreatedAt), at(&x.UpdatedAt), &x.OwnerEpoch)
	return x, err
}

func (s *Store) GetSuspension(ctx context.Context, id string) (store.Suspension, error) {
	if err := s.check(ctx); err != nil {
		return store.Suspension{}, err
	}
	x, err := scanSuspension(s.pool.QueryRow(ctx, `SELECT `+suspensionCols+` FROM suspensions WHERE id = $1`, id))
	return x, s.notFound("reading suspension attempt "+id, err)
}

func (s *Store) TransitionSuspension(ctx context.Context, mv store.Move, code string) error {
	if err := mv.ValidateFor(suspension.Name); err != nil {
		return err
	}
	return s.conditional(ctx, "moving suspension attempt "+mv.Key+" to "+mv.To, "suspensions", "id", mv.Key,
		`UPDATE suspensions SET state = $1, settled = $2, error_code = CASE WHEN $3 = '' THEN error_code ELSE $3 END, updated_at = $4
		 WHERE id = $5 AND NOT settled AND state = $6`,
		mv.To, mv.Settles(), code, ts(mv.At), mv.Key, mv.From)
}

func (s *Store) AdoptSuspension(ctx context.Context, id, state string, epoch uint64) error {
	return s.conditional(ctx, "recording the connection that carries suspension attempt "+id, "suspensions", "id", id,
		`UPDATE suspensions SET owner_epoch = $1 WHERE id = $2 AND NOT settled AND state = $3`, epoch, id, state)
}

func (s *Store) LatestSuspension(ctx context.Context, environmentID string) (store.Suspension, error) {
	if err := s.check(ctx); err != nil {
		return store.Suspension{}, err
	}
	x, err := scanSuspension(s.pool.QueryRow(ctx, `SELECT `+suspensionCols+` FROM suspensions
		WHERE environment_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, environmentID))
	return x, s.notFound("reading the latest suspension attempt of Environment "+environmentID, err)
}

func (s *Store) OpenSuspensions(ctx context.Context) ([]store.Suspension, error) {
	return collect(ctx, s, "listing open suspension attempts", `SELECT `+suspensionCols+` FROM suspensions
		WHERE NOT settled ORDER BY created_at, id`, scanSuspension)
}

func (s *Store) RecordInitialization(ctx context.Context, i store.Initialization) error {
	op := "recording the initialization of Environment " + i.EnvironmentID
	// The upsert's update applies only to an outcome at least as new as
	// the kept one; RETURNING tells an Environment that exists (a row
	// inserted, updated, or kept as newer) from one that does not.
	n, err := s.exec(ctx, op, `INSERT INTO environment_initializations(environment_id, device_id, owner_epoch, outcome, step, error_code, exit_code, at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM environments WHERE id = $1)
		ON CONFLICT (environment_id) DO UPDATE SET device_id = excluded.device_id, owner_epoch = excluded.owner_epoch,
			outcome = excluded.outcome, step = excluded.step, error_code = excluded.error_code,
			exit_code = excluded.exit_code, at = excluded.at
		WHERE COALESCE(excluded.at, '-infinity') >= COALESCE(environment_initializations.at, '-infinity')`,
		i.EnvironmentID, i.DeviceID, i.OwnerEpoch, i.Outcome, i.Step, i.ErrorCode, i.ExitCode, ts(i.At))
	if err != nil || n > 0 {
		return err
	}
	// Either no Environment, or a newer outcome is kept.
	var one int
	return s.notFound(op, s.pool.QueryRow(ctx, `SELECT 1 FROM environments WHERE id = $1`, i.EnvironmentID).Scan(&one))
}

func (s *Store) GetInitialization(ctx context.Context, environmentID string) (store.Initialization, error) {
	if err := s.check(ctx); err != nil {
		return store.Initialization{}, err
	}
	i := store.Initialization{EnvironmentID: environmentID}
	err := s.pool.QueryRow(ctx, `SELECT device_id, owner_epoch, outcome, step, error_code, exit_code, at
		FROM environment_initializations WHERE environment_id = $1`, environmentID).
		Scan(&i.DeviceID, &i.OwnerEpoch, &i.Outcome, &i.Step, &i.ErrorCode, &i.ExitCode, at(&i.At))
	return i, s.notFound("reading the initialization of Environment "+environmentID, err)
}

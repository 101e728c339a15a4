package sqlite

import (
	"context"
	"fmt"

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
	_, err := s.exec(ctx, `INSERT INTO suspensions(id, environment_id, device_id, owner_epoch, state, settled, error_code, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?)`,
		x.ID, x.EnvironmentID, x.DeviceID, x.OwnerEpoch, x.State, x.Settled, x.ErrorCode, ms(x.CreatedAt), ms(x.UpdatedAt))
	return err
}

const suspensionCols = `id, environment_id, device_id, state, settled, error_code, created_at, updated_at, owner_epoch`

func scanSuspension(r scanner) (store.Suspension, error) {
	var x store.Suspension
	var created, updated int64
	err := r.Scan(&x.ID, &x.EnvironmentID, &x.DeviceID, &x.State, &x.Settled, &x.ErrorCode, &created, &updated, &x.OwnerEpoch)
	x.CreatedAt, x.UpdatedAt = fromMS(created), fromMS(updated)
	return x, err
}

func (s *Store) GetSuspension(ctx context.Context, id string) (store.Suspension, error) {
	if err := s.check(ctx); err != nil {
		return store.Suspension{}, err
	}
	x, err := scanSuspension(s.r.QueryRowContext(ctx, `SELECT `+suspensionCols+` FROM suspensions WHERE id = ?`, id))
	return x, notFound(err)
}

func (s *Store) TransitionSuspension(ctx context.Context, mv store.Move, code string) error {
	if err := mv.ValidateFor(suspension.Name); err != nil {
		return err
	}
	id, from, to, settled, at := mv.Key, mv.From, mv.To, mv.Settles(), mv.At
	return s.conditional(ctx, "suspensions", "id", id,
		`UPDATE suspensions SET state = ?, settled = ?, error_code = CASE WHEN ? = '' THEN error_code ELSE ? END, updated_at = ?
		 WHERE id = ? AND settled = 0 AND state = ?`,
		to, settled, code, code, ms(at), id, from)
}

func (s *Store) AdoptSuspension(ctx context.Context, id, state string, epoch uint64) error {
	return s.conditional(ctx, "suspensions", "id", id,
		`UPDATE suspensions SET owner_epoch = ? WHERE id = ? AND settled = 0 AND state = ?`, epoch, id, state)
}

func (s *Store) LatestSuspension(ctx context.Context, environmentID string) (store.Suspension, error) {
	if err := s.check(ctx); err != nil {
		return store.Suspension{}, err
	}
	x, err := scanSuspension(s.r.QueryRowContext(ctx, `SELECT `+suspensionCols+` FROM suspensions
		WHERE environment_id = ? ORDER BY created_at DESC, id DESC LIMIT 1`, environmentID))
	return x, notFound(err)
}

func (s *Store) OpenSuspensions(ctx context.Context) ([]store.Suspension, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+suspensionCols+` FROM suspensions WHERE settled = 0 ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Suspension
	for rows.Next() {
		x, err := scanSuspension(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

func (s *Store) RecordInitialization(ctx context.Context, i store.Initialization) error {
	n, err := s.exec(ctx, `INSERT INTO environment_initializations(environment_id, device_id, owner_epoch, outcome, step, error_code, exit_code, at)
		SELECT ?,?,?,?,?,?,?,? WHERE EXISTS (SELECT 1 FROM environments WHERE id = ?)
		ON CONFLICT(environment_id) DO UPDATE SET device_id = excluded.device_id, owner_epoch = excluded.owner_epoch,
			outcome = excluded.outcome, step = excluded.step, error_code = excluded.error_code,
			exit_code = excluded.exit_code, at = excluded.at
		WHERE excluded.at >= environment_initializations.at`,
		i.EnvironmentID, i.DeviceID, i.OwnerEpoch, i.Outcome, i.Step, i.ErrorCode, i.ExitCode, ms(i.At), i.EnvironmentID)
	if err != nil {
		return err
	}
	if n == 0 {
		// Either no Environment, or a newer outcome is kept.
		var one int
		if err := s.w.QueryRowContext(ctx, `SELECT 1 FROM environments WHERE id = ?`, i.EnvironmentID).Scan(&one); err != nil {
			return notFound(err)
		}
	}
	return nil
}

func (s *Store) GetInitialization(ctx context.Context, environmentID string) (store.Initialization, error) {
	if err := s.check(ctx); err != nil {
		return store.Initialization{}, err
	}
	i := store.Initialization{EnvironmentID: environmentID}
	var at int64
	err := s.r.QueryRowContext(ctx, `SELECT device_id, owner_epoch, outcome, step, error_code, exit_code, at
		FROM environment_initializations WHERE environment_id = ?`, environmentID).
		Scan(&i.DeviceID, &i.OwnerEpoch, &i.Outcome, &i.Step, &i.ErrorCode, &i.ExitCode, &at)
	i.At = fromMS(at)
	return i, notFound(err)
}

package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm/workspace_write"
)

// Workspace-write reservations. Reserving is one INSERT guarded by the
// workspace_writes_unsettled index (one held owner per Session); every
// later move is one UPDATE conditional on the expected state.

func (s *Store) ReserveWorkspaceWrite(ctx context.Context, w store.WorkspaceWrite) error {
	if err := (store.Move{Machine: workspace_write.Name, Key: w.MutationID, To: w.State}).Validate(); err != nil {
		return err
	}
	_, err := s.exec(ctx, `INSERT INTO workspace_writes(mutation_id, session_id, path, created_at, state, device_id, owner_epoch, size_bytes, sha256)
		VALUES (?,?,?,?,?,?,?,?,?)`,
		w.MutationID, w.SessionID, w.Path, ms(w.CreatedAt), w.State, w.DeviceID, w.OwnerEpoch, w.SizeBytes, w.SHA256)
	return err
}

func (s *Store) SettleWorkspaceWrite(ctx context.Context, mutationID, outcome string, at time.Time) error {
	if outcome == "" {
		return store.ErrInvalid
	}
	return s.conditional(ctx, "workspace_writes", "mutation_id", mutationID,
		`UPDATE workspace_writes SET outcome = ?, settled_at = ? WHERE mutation_id = ? AND outcome = ''`,
		outcome, ms(at), mutationID)
}

func (s *Store) TransitionWorkspaceWrite(ctx context.Context, m store.Move, release bool, code, reason string) error {
	if err := m.ValidateFor(workspace_write.Name); err != nil {
		return err
	}
	mutationID, from, to, at := m.Key, m.From, m.To, m.At
	outcome, settled := "", int64(0)
	if release {
		outcome, settled = to, ms(at)
	}
	return s.conditional(ctx, "workspace_writes", "mutation_id", mutationID,
		`UPDATE workspace_writes SET state = ?, outcome = ?, settled_at = ?,
			error_code = CASE WHEN ? = '' THEN error_code ELSE ? END,
			reason = CASE WHEN ? = '' THEN reason ELSE ? END
		 WHERE mutation_id = ? AND outcome = '' AND state = ?`,
		to, outcome, settled, code, code, reason, reason, mutationID, from)
}

func (s *Store) ResolveWorkspaceWrite(ctx context.Context, mutationID, resolution, note string, at time.Time) error {
	if resolution == "" {
		return store.ErrInvalid
	}
	return s.conditional(ctx, "workspace_writes", "mutation_id", mutationID,
		`UPDATE workspace_writes SET outcome = ?, resolution = ?, note = ?, settled_at = ?
		 WHERE mutation_id = ? AND outcome = '' AND state = ?`,
		store.WriteResolved, resolution, note, ms(at), mutationID, store.WriteStateUnknown)
}

const writeCols = `mutation_id, session_id, path, outcome, created_at, settled_at, state, device_id, size_bytes, sha256, error_code, reason, resolution, note, owner_epoch`

func scanWrite(r scanner) (store.WorkspaceWrite, error) {
	var w store.WorkspaceWrite
	var created, settled int64
	err := r.Scan(&w.MutationID, &w.SessionID, &w.Path, &w.Outcome, &created, &settled, &w.State, &w.DeviceID, &w.SizeBytes, &w.SHA256,
		&w.ErrorCode, &w.Reason, &w.Resolution, &w.Note, &w.OwnerEpoch)
	w.CreatedAt, w.SettledAt = fromMS(created), fromMS(settled)
	return w, err
}

func (s *Store) GetWorkspaceWrite(ctx context.Context, mutationID string) (store.WorkspaceWrite, error) {
	if err := s.check(ctx); err != nil {
		return store.WorkspaceWrite{}, err
	}
	w, err := scanWrite(s.r.QueryRowContext(ctx, `SELECT `+writeCols+` FROM workspace_writes WHERE mutation_id = ?`, mutationID))
	return w, notFound(err)
}

func (s *Store) UnsettledWorkspaceWrite(ctx context.Context, sessionID string) (store.WorkspaceWrite, error) {
	if err := s.check(ctx); err != nil {
		return store.WorkspaceWrite{}, err
	}
	w, err := scanWrite(s.r.QueryRowContext(ctx, `SELECT `+writeCols+` FROM workspace_writes WHERE session_id = ? AND outcome = ''`, sessionID))
	return w, notFound(err)
}

func (s *Store) OpenWorkspaceWrites(ctx context.Context) ([]store.WorkspaceWrite, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+writeCols+` FROM workspace_writes WHERE outcome = '' ORDER BY created_at, mutation_id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.WorkspaceWrite
	for rows.Next() {
		w, err := scanWrite(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

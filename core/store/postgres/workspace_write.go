package postgres

import (
	"context"
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
	_, err := s.exec(ctx, "reserving workspace write "+w.MutationID, `INSERT INTO workspace_writes(mutation_id, session_id, path, created_at, state, device_id, owner_epoch, size_bytes, sha256)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		w.MutationID, w.SessionID, w.Path, ts(w.CreatedAt), w.State, w.DeviceID, w.OwnerEpoch, w.SizeBytes, w.SHA256)
	return err
}

func (s *Store) SettleWorkspaceWrite(ctx context.Context, mutationID, outcome string, at time.Time) error {
	if outcome == "" {
		return store.ErrInvalid
	}
	return s.conditional(ctx, "settling workspace write "+mutationID, "workspace_writes", "mutation_id", mutationID,
		`UPDATE workspace_writes SET outcome = $1, settled_at = $2 WHERE mutation_id = $3 AND outcome = ''`,
		outcome, ts(at), mutationID)
}

func (s *Store) TransitionWorkspaceWrite(ctx context.Context, m store.Move, release bool, code, reason string) error {
	if err := m.ValidateFor(workspace_write.Name); err != nil {
		return err
	}
	outcome, settled := "", any(nil)
	if release {
		outcome, settled = m.To, ts(m.At)
	}
	return s.conditional(ctx, "moving workspace write "+m.Key+" to "+m.To, "workspace_writes", "mutation_id", m.Key,
		`UPDATE workspace_writes SET state = $1, outcome = $2, settled_at = $3,
			error_code = CASE WHEN $4 = '' THEN error_code ELSE $4 END,
			reason = CASE WHEN $5 = '' THEN reason ELSE $5 END
		 WHERE mutation_id = $6 AND outcome = '' AND state = $7`,
		m.To, outcome, settled, code, reason, m.Key, m.From)
}

func (s *Store) ResolveWorkspaceWrite(ctx context.Context, mutationID, resolution, note string, at time.Time) error {
	if resolution == "" {
		return store.ErrInvalid
	}
	return s.conditional(ctx, "resolving workspace write "+mutationID, "workspace_writes", "mutation_id", mutationID,
		`UPDATE workspace_writes SET outcome = $1, resolution = $2, note = $3, settled_at = $4
		 WHERE mutation_id = $5 AND outcome = '' AND state = $6`,
		store.WriteResolved, resolution, note, ts(at), mutationID, store.WriteStateUnknown)
}

const writeCols = `mutation_id, session_id, path, outcome, created_at, settled_at, state, device_id, size_bytes, sha256, error_code, reason, resolution, note, owner_epoch`

func scanWrite(r scanner) (store.WorkspaceWrite, error) {
	var w store.WorkspaceWrite
	err := r.Scan(&w.MutationID, &w.SessionID, &w.Path, &w.Outcome, at(&w.CreatedAt), at(&w.SettledAt), &w.State, &w.DeviceID, &w.SizeBytes, &w.SHA256,
		&w.ErrorCode, &w.Reason, &w.Resolution, &w.Note, &w.OwnerEpoch)
	return w, err
}

func (s *Store) GetWorkspaceWrite(ctx context.Context, mutationID string) (store.WorkspaceWrite, error) {
	if err := s.check(ctx); err != nil {
		return store.WorkspaceWrite{}, err
	}
	w, err := scanWrite(s.pool.QueryRow(ctx, `SELECT `+writeCols+` FROM workspace_writes WHERE mutation_id = $1`, mutationID))
	return w, s.notFound("reading workspace write "+mutationID, err)
}

func (s *Store) UnsettledWorkspaceWrite(ctx context.Context, sessionID string) (store.WorkspaceWrite, error) {
	if err := s.check(ctx); err != nil {
		return store.WorkspaceWrite{}, err
	}
	w, err := scanWrite(s.pool.QueryRow(ctx, `SELECT `+writeCols+` FROM workspace_writes WHERE session_id = $1 AND outcome = ''`, sessionID))
	return w, s.notFound("reading the unsettled workspace write of Session "+sessionID, err)
}

func (s *Store) OpenWorkspaceWrites(ctx context.Context) ([]store.WorkspaceWrite, error) {
	return collect(ctx, s, "listing open workspace writes", `SELECT `+writeCols+` FROM workspace_writes
		WHERE outcome = '' ORDER BY created_at, mutation_id`, scanWrite)
}

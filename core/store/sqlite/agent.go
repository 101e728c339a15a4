package sqlite

import (
	"context"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
)

// Agents: every version is one row; a new version is an INSERT that
// holds only when it follows the latest, so two writers never both make
// version N.

func (s *Store) PutAgent(ctx context.Context, a store.Agent) error {
	if a.Version < 1 || a.ID == "" {
		return store.ErrInvalid
	}
	n, err := s.exec(ctx, `INSERT INTO agents(id, version, project, definition, created_at)
		SELECT ?,?,?,?,? WHERE COALESCE((SELECT MAX(version) FROM agents WHERE id = ?), 0) = ? - 1
		AND NOT EXISTS (SELECT 1 FROM agents WHERE id = ? AND project != ?)`,
		a.ID, a.Version, a.Project, blob(a.Definition), ms(a.CreatedAt), a.ID, a.Version, a.ID, a.Project)
	if err == nil && n == 0 {
		return store.ErrConflict
	}
	return err
}

func (s *Store) GetAgent(ctx context.Context, id string, version int) (store.Agent, error) {
	if err := s.check(ctx); err != nil {
		return store.Agent{}, err
	}
	a := store.Agent{ID: id}
	var at int64
	err := s.r.QueryRowContext(ctx, `SELECT version, project, definition, created_at FROM agents
		WHERE id = ? AND (? = 0 OR version = ?) ORDER BY version DESC LIMIT 1`, id, version, version).
		Scan(&a.Version, &a.Project, (*[]byte)(&a.Definition), &at)
	a.CreatedAt = fromMS(at)
	return a, notFound(err)
}

func (s *Store) ListAgents(ctx context.Context, project string) ([]store.Agent, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT a.id, a.version, a.project, a.definition, a.created_at FROM agents a
		WHERE a.project = ? AND a.version = (SELECT MAX(version) FROM agents b WHERE b.id = a.id)
		ORDER BY (SELECT created_at FROM agents c WHERE c.id = a.id AND c.version = 1), a.id`, project)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Agent
	for rows.Next() {
		var a store.Agent
		var at int64
		if err := rows.Scan(&a.ID, &a.Version, &a.Project, (*[]byte)(&a.Definition), &at); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		a.CreatedAt = fromMS(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

package postgres

import (
	"context"

	"github.com/agentwire/agentwire/core/store"
)

// Agents: every version is one row; a new version is an INSERT that
// holds only when it follows the latest, and the primary key (id,
// version) refuses a second writer of the same version, so two writers
// never both make version N even when both read the same latest one.

func (s *Store) PutAgent(ctx context.Context, a store.Agent) error {
	if a.Version < 1 || a.ID == "" {
		return store.ErrInvalid
	}
	n, err := s.exec(ctx, "storing version of Agent "+a.ID, `INSERT INTO agents(id, version, project, definition, created_at)
		SELECT $1, $2, $3, $4, $5 WHERE COALESCE((SELECT MAX(version) FROM agents WHERE id = $1), 0) = $2::integer - 1
		AND NOT EXISTS (SELECT 1 FROM agents WHERE id = $1 AND project <> $3)`,
		a.ID, a.Version, a.Project, blob(a.Definition), ts(a.CreatedAt))
	if err == nil && n == 0 {
		return wrap("storing version of Agent "+a.ID, store.ErrConflict)
	}
	return err
}

func (s *Store) GetAgent(ctx context.Context, id string, version int) (store.Agent, error) {
	if err := s.check(ctx); err != nil {
		return store.Agent{}, err
	}
	a := store.Agent{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT version, project, definition, created_at FROM agents
		WHERE id = $1 AND ($2::integer = 0 OR version = $2) ORDER BY version DESC LIMIT 1`, id, version).
		Scan(&a.Version, &a.Project, (*[]byte)(&a.Definition), at(&a.CreatedAt))
	return a, s.notFound("reading Agent "+id, err)
}

func (s *Store) ListAgents(ctx context.Context, project string) ([]store.Agent, error) {
	return collect(ctx, s, "listing the Agents of project "+project, `SELECT a.id, a.version, a.project, a.definition, a.created_at FROM agents a
		WHERE a.project = $1 AND a.version = (SELECT MAX(version) FROM agents b WHERE b.id = a.id)
		ORDER BY (SELECT created_at FROM agents c WHERE c.id = a.id AND c.version = 1), a.id`,
		func(sc scanner) (store.Agent, error) {
			var a store.Agent
			err := sc.Scan(&a.ID, &a.Version, &a.Project, (*[]byte)(&a.Definition), at(&a.CreatedAt))
			return a, err
		}, project)
}

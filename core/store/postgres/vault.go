package postgres

import (
	"context"

	"github.com/agentwire/agentwire/core/store"
)

// The Vault: one row per sealed secret; a put replaces the value and
// keeps the row's creation time.

func (s *Store) PutSecret(ctx context.Context, sec store.Secret) error {
	if sec.Project == "" || sec.Name == "" || len(sec.Sealed) == 0 {
		return store.ErrInvalid
	}
	_, err := s.exec(ctx, "storing secret "+sec.Name+" of project "+sec.Project, `INSERT INTO secrets(project, name, sealed, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (project, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		sec.Project, sec.Name, sec.Sealed, ts(sec.CreatedAt), ts(sec.UpdatedAt))
	return err
}

func scanSecret(project string) func(scanner) (store.Secret, error) {
	return func(sc scanner) (store.Secret, error) {
		sec := store.Secret{Project: project}
		err := sc.Scan(&sec.Name, &sec.Sealed, at(&sec.CreatedAt), at(&sec.UpdatedAt))
		return sec, err
	}
}

func (s *Store) GetSecret(ctx context.Context, project, name string) (store.Secret, error) {
	if err := s.check(ctx); err != nil {
		return store.Secret{}, err
	}
	sec, err := scanSecret(project)(s.pool.QueryRow(ctx, `SELECT name, sealed, created_at, updated_at FROM secrets
		WHERE project = $1 AND name = $2`, project, name))
	if err != nil {
		return store.Secret{}, s.notFound("reading secret "+name+" of project "+project, err)
	}
	return sec, nil
}

func (s *Store) ListSecrets(ctx context.Context, project string) ([]store.Secret, error) {
	return collect(ctx, s, "listing the secrets of project "+project, `SELECT name, sealed, created_at, updated_at FROM secrets
		WHERE project = $1 ORDER BY name`, scanSecret(project), project)
}

func (s *Store) DeleteSecret(ctx context.Context, project, name string) error {
	op := "deleting secret " + name + " of project " + project
	n, err := s.exec(ctx, op, `DELETE FROM secrets WHERE project = $1 AND name = $2`, project, name)
	if err == nil && n == 0 {
		return wrap(op, store.ErrNotFound)
	}
	return err
}

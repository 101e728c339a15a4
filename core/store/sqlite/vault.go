package sqlite

import (
	"context"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
)

// The Vault: one row per sealed secret; a put replaces the value and
// keeps the row's creation time.

func (s *Store) PutSecret(ctx context.Context, sec store.Secret) error {
	if sec.Project == "" || sec.Name == "" || len(sec.Sealed) == 0 {
		return store.ErrInvalid
	}
	_, err := s.exec(ctx, `INSERT INTO secrets(project, name, sealed, created_at, updated_at) VALUES (?,?,?,?,?)
		ON CONFLICT(project, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		sec.Project, sec.Name, sec.Sealed, ms(sec.CreatedAt), ms(sec.UpdatedAt))
	return err
}

func (s *Store) GetSecret(ctx context.Context, project, name string) (store.Secret, error) {
	if err := s.check(ctx); err != nil {
		return store.Secret{}, err
	}
	sec := store.Secret{Project: project, Name: name}
	var created, updated int64
	err := s.r.QueryRowContext(ctx, `SELECT sealed, created_at, updated_at FROM secrets WHERE project = ? AND name = ?`, project, name).
		Scan(&sec.Sealed, &created, &updated)
	sec.CreatedAt, sec.UpdatedAt = fromMS(created), fromMS(updated)
	return sec, notFound(err)
}

func (s *Store) ListSecrets(ctx context.Context, project string) ([]store.Secret, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT name, sealed, created_at, updated_at FROM secrets WHERE project = ? ORDER BY name`, project)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Secret
	for rows.Next() {
		sec := store.Secret{Project: project}
		var created, updated int64
		if err := rows.Scan(&sec.Name, &sec.Sealed, &created, &updated); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		sec.CreatedAt, sec.UpdatedAt = fromMS(created), fromMS(updated)
		out = append(out, sec)
	}
	return out, rows.Err()
}

func (s *Store) DeleteSecret(ctx context.Context, project, name string) error {
	n, err := s.exec(ctx, `DELETE FROM secrets WHERE project = ? AND name = ?`, project, name)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// store.Credentials: a credential is one row, unique by ID and by hash;
// revoking it is an UPDATE conditional on it being unrevoked.

func (s *Store) CreateCredential(ctx context.Context, c store.Credential) error {
	_, err := s.exec(ctx, "creating credential "+c.ID, `INSERT INTO credentials(id, kind, device_id, project, hash, created_at, revoked_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		c.ID, string(c.Kind), c.DeviceID, c.Project, c.Hash, ts(c.CreatedAt), ts(c.RevokedAt))
	return err
}

const credCols = `id, kind, device_id, project, hash, created_at, revoked_at`

func scanCred(sc scanner) (store.Credential, error) {
	var c store.Credential
	var kind string
	err := sc.Scan(&c.ID, &kind, &c.DeviceID, &c.Project, &c.Hash, at(&c.CreatedAt), at(&c.RevokedAt))
	c.Kind = store.CredentialKind(kind)
	return c, err
}

func (s *Store) CredentialByHash(ctx context.Context, hash string) (store.Credential, error) {
	if err := s.check(ctx); err != nil {
		return store.Credential{}, err
	}
	c, err := scanCred(s.pool.QueryRow(ctx, `SELECT `+credCols+` FROM credentials WHERE hash = $1`, hash))
	return c, s.notFound("finding a credential by hash", err)
}

func (s *Store) ListCredentials(ctx context.Context) ([]store.Credential, error) {
	return collect(ctx, s, "listing credentials", `SELECT `+credCols+` FROM credentials ORDER BY created_at, n`, scanCred)
}

func (s *Store) RevokeCredential(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return errors.Join(store.ErrInvalid, fmt.Errorf("revocation time is zero"))
	}
	return s.conditional(ctx, "revoking credential "+id, "credentials", "id", id,
		`UPDATE credentials SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, ts(at), id)
}

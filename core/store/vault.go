package store

import (
	"context"
	"time"
)

// Secrets are a project's Vault: named values, stored sealed
// (core/vault); the store never sees one in the clear.
type Secrets interface {
	// PutSecret stores the secret, replacing the value of one of that
	// project and name (its CreatedAt stays; UpdatedAt is s's).
	PutSecret(ctx context.Context, s Secret) error
	// GetSecret returns the project's secret name; ErrNotFound.
	GetSecret(ctx context.Context, project, name string) (Secret, error)
	// ListSecrets lists the project's secrets by name.
	ListSecrets(ctx context.Context, project string) ([]Secret, error)
	// DeleteSecret removes the project's secret name; ErrNotFound.
	DeleteSecret(ctx context.Context, project, name string) error
}

// Secret is one sealed Vault value.
type Secret struct {
	Project, Name        string
	Sealed               []byte
	CreatedAt, UpdatedAt time.Time
}

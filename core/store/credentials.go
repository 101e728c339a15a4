package store

import (
	"context"
	"time"
)

// Credentials is the authentication half of Core's durable state, apart
// from Store so that a Core which authenticates elsewhere (an identity
// provider, its own key table) needs no credential table at all; the
// default authenticator (core/credential.Issuer) keeps its hashes here.
// storetest.RunCredentials is its conformance suite.
type Credentials interface {
	// CreateCredential stores a new credential; ErrConflict when its ID
	// or its hash exists.
	CreateCredential(ctx context.Context, c Credential) error
	// CredentialByHash finds a credential by the hash of its secret.
	CredentialByHash(ctx context.Context, hash string) (Credential, error)
	// ListCredentials lists every credential, revoked ones included,
	// oldest first.
	ListCredentials(ctx context.Context) ([]Credential, error)
	// RevokeCredential revokes an unrevoked credential; ErrStale when it
	// already is, ErrNotFound when it does not exist.
	RevokeCredential(ctx context.Context, id string, at time.Time) error
}

// CredentialKind says what a credential may open.
type CredentialKind string

const (
	// KindDevice opens the Runtime connection of one device only.
	KindDevice CredentialKind = "device"
	// KindProject opens the public API of one project.
	KindProject CredentialKind = "project"
	// KindAdmin manages credentials.
	KindAdmin CredentialKind = "admin"
)

// Credential is stored by the hash of its secret; the secret itself is
// shown once, when issued, and never stored.
type Credential struct {
	ID   string
	Kind CredentialKind
	// DeviceID is the one device a device credential is issued for.
	DeviceID string
	// Project is the project of a project API key, or the project a
	// device credential's device was assigned to when it was issued.
	Project   string
	Hash      string
	CreatedAt time.Time
	RevokedAt time.Time
}

// Revoked reports whether the credential was revoked.
func (c Credential) Revoked() bool { return !c.RevokedAt.IsZero() }

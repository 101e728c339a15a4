package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// OpenCredentials returns a fresh, empty credential store; closing it, if
// it needs closing, is the constructor's (t.Cleanup).
type OpenCredentials func(t *testing.T) store.Credentials

// RunCredentials runs the conformance tests of store.Credentials: unique
// IDs and hashes, lookups by hash, revocation once and only once under a
// race.
func RunCredentials(t *testing.T, open OpenCredentials) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Credentials)
	}{
		{"Credentials", testCredentials},
		{"RevokeRace", testRevokeRace},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func testCredentials(t *testing.T, s store.Credentials) {
	c := store.Credential{ID: "c1", Kind: store.KindDevice, DeviceID: "dev", Hash: "h1", CreatedAt: T0}
	require.NoError(t, s.CreateCredential(ctx, c))
	assert.ErrorIs(t, s.CreateCredential(ctx, c), store.ErrConflict)
	assert.ErrorIs(t, s.CreateCredential(ctx, store.Credential{ID: "c9", Kind: store.KindAdmin, Hash: "h1", CreatedAt: T0}), store.ErrConflict, "hashes are unique")
	require.NoError(t, s.CreateCredential(ctx, store.Credential{ID: "c2", Kind: store.KindProject, Project: "p", Hash: "h2", CreatedAt: T0}))
	got, err := s.CredentialByHash(ctx, "h2")
	require.NoError(t, err)
	assert.Equal(t, store.KindProject, got.Kind)
	assert.Equal(t, "p", got.Project)
	assert.False(t, got.Revoked())
	_, err = s.CredentialByHash(ctx, "nope")
	assert.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, s.RevokeCredential(ctx, "c1", T0.Add(time.Second)))
	assert.ErrorIs(t, s.RevokeCredential(ctx, "c1", T0), store.ErrStale)
	assert.ErrorIs(t, s.RevokeCredential(ctx, "missing", T0), store.ErrNotFound)
	got, _ = s.CredentialByHash(ctx, "h1")
	assert.True(t, got.Revoked())
	assert.Equal(t, "dev", got.DeviceID)
	list, err := s.ListCredentials(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "c1", list[0].ID)
	assert.True(t, list[0].RevokedAt.Equal(T0.Add(time.Second)))
}

func testRevokeRace(t *testing.T, s store.Credentials) {
	require.NoError(t, s.CreateCredential(ctx, store.Credential{ID: "c1", Kind: store.KindDevice, DeviceID: "dev", Hash: "h1", CreatedAt: T0}))
	wins := race(t, 16, store.ErrStale, func(int) error { return s.RevokeCredential(ctx, "c1", T0) })
	assert.Equal(t, 1, wins)
}

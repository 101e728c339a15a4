package credential_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
)

func issuer() credential.Issuer {
	return credential.Issuer{Store: memory.New(), Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
}

func TestIssueStoresOnlyTheHash(t *testing.T) {
	ctx := context.Background()
	is := issuer()
	c, secret, err := is.Issue(ctx, store.KindDevice, "dev-1", "p1")
	require.NoError(t, err)
	assert.NotEmpty(t, secret.Reveal())
	list, err := is.Store.ListCredentials(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, credential.Hash(secret), list[0].Hash)
	assert.NotContains(t, fmt.Sprintf("%+v", list[0]), secret.Reveal())
	assert.Equal(t, c.ID, list[0].ID)
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	is := issuer()
	devCred, dev, err := is.Issue(ctx, store.KindDevice, "dev-1", "p1")
	require.NoError(t, err)
	_, proj, err := is.Issue(ctx, store.KindProject, "", "p1")
	require.NoError(t, err)
	admin, adm, err := is.Issue(ctx, store.KindAdmin, "", "")
	require.NoError(t, err)

	_, err = is.AuthenticateDevice(ctx, dev, "dev-1")
	require.NoError(t, err)
	_, err = is.AuthenticateDevice(ctx, dev, "dev-2")
	assert.ErrorIs(t, err, credential.ErrWrongDevice)
	_, err = is.AuthenticateDevice(ctx, proj, "dev-1")
	assert.ErrorIs(t, err, credential.ErrWrongKind, "a project API key is never a Runtime credential")
	_, err = is.AuthenticateDevice(ctx, adm, "dev-1")
	assert.ErrorIs(t, err, credential.ErrWrongKind, "nor is the administration key")
	_, err = is.Authenticate(ctx, dev, store.KindProject)
	assert.ErrorIs(t, err, credential.ErrWrongKind, "a device credential never opens the public API")
	_, err = is.AuthenticateDevice(ctx, "", "dev-1")
	assert.ErrorIs(t, err, credential.ErrMissing)
	_, err = is.AuthenticateDevice(ctx, "awd_made-up", "dev-1")
	assert.ErrorIs(t, err, credential.ErrBad)

	require.NoError(t, is.Valid(ctx, devCred))
	require.NoError(t, is.Revoke(ctx, devCred.ID))
	assert.ErrorIs(t, is.Valid(ctx, devCred), credential.ErrBad, "a live connection learns of the revocation")

	require.NoError(t, is.Revoke(ctx, admin.ID))
	_, err = is.Authenticate(ctx, adm, store.KindAdmin)
	assert.ErrorIs(t, err, credential.ErrBad, "a revoked credential is refused")
	assert.ErrorIs(t, is.Revoke(ctx, admin.ID), store.ErrStale)
}

func TestIssueRejectsMismatchedScopes(t *testing.T) {
	ctx := context.Background()
	is := issuer()
	for _, tc := range []struct {
		kind            store.CredentialKind
		device, project string
	}{
		{store.KindDevice, "", ""},
		{store.KindDevice, "", "p"},
		{store.KindDevice, "d", ""},
		{store.KindProject, "", ""},
		{store.KindProject, "d", "p"},
		{store.KindAdmin, "d", ""},
		{store.KindAdmin, "", "p"},
		{"root", "", ""},
	} {
		_, _, err := is.Issue(ctx, tc.kind, tc.device, tc.project)
		assert.Error(t, err, "%+v", tc)
	}
}

func TestDeviceCredentialAssignsItsDevice(t *testing.T) {
	ctx := context.Background()
	is := issuer()
	_, _, err := is.Issue(ctx, store.KindDevice, "dev-1", "p1")
	require.NoError(t, err)
	d, err := is.Store.(store.Store).GetDevice(ctx, "dev-1")
	require.NoError(t, err)
	assert.Equal(t, "p1", d.Project)
	_, _, err = is.Issue(ctx, store.KindDevice, "dev-1", "p1")
	require.NoError(t, err, "a second credential for the same project (rotation)")
	_, _, err = is.Issue(ctx, store.KindDevice, "dev-1", "p2")
	require.ErrorContains(t, err, "belongs to another project")
	list, err := is.Store.ListCredentials(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 2, "the refused issue stored nothing")
}

func TestSecretNeverPrints(t *testing.T) {
	s := credential.Secret("awd_topsecret")
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("x", "secret", s)
	assert.NotContains(t, buf.String(), "topsecret")
	assert.NotContains(t, fmt.Sprintf("%v %s %+v %#v", s, s, s, s), "topsecret")
}

func TestBearerToken(t *testing.T) {
	assert.Equal(t, credential.Secret("abc"), credential.BearerToken("Bearer abc"))
	assert.Equal(t, credential.Secret("abc"), credential.BearerToken("bearer  abc "))
	assert.Equal(t, credential.Secret(""), credential.BearerToken("Basic abc"))
	assert.Equal(t, credential.Secret(""), credential.BearerToken(""))
}

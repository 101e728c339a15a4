package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// testSecrets: a put replaces the value and keeps the creation time; a
// secret is one project's; the list is by name; a delete removes one.
func testSecrets(t *testing.T, s store.Store) {
	put := func(project, name, sealed string, at int) {
		t.Helper()
		when := T0.Add(time.Duration(at) * time.Second)
		require.NoError(t, s.PutSecret(ctx, store.Secret{Project: project, Name: name, Sealed: []byte(sealed), CreatedAt: when, UpdatedAt: when}))
	}
	put("p", "docs", "v1", 1)
	put("p", "docs", "v2", 5)
	put("p", "alpha", "a", 2)
	put("q", "docs", "theirs", 3)
	assert.ErrorIs(t, s.PutSecret(ctx, store.Secret{Project: "p", Name: "empty"}), store.ErrInvalid)

	got, err := s.GetSecret(ctx, "p", "docs")
	require.NoError(t, err)
	assert.Equal(t, "v2", string(got.Sealed), "the value replaced")
	assert.True(t, got.CreatedAt.Equal(T0.Add(time.Duration(1)*time.Second)), "created when first put")
	assert.True(t, got.UpdatedAt.Equal(T0.Add(time.Duration(5)*time.Second)))
	_, err = s.GetSecret(ctx, "p", "nope")
	assert.ErrorIs(t, err, store.ErrNotFound)

	list, err := s.ListSecrets(ctx, "p")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, []string{"alpha", "docs"}, []string{list[0].Name, list[1].Name})
	theirs, err := s.GetSecret(ctx, "q", "docs")
	require.NoError(t, err)
	assert.Equal(t, "theirs", string(theirs.Sealed), "each project has its own")

	require.NoError(t, s.DeleteSecret(ctx, "p", "docs"))
	assert.ErrorIs(t, s.DeleteSecret(ctx, "p", "docs"), store.ErrNotFound)
	_, err = s.GetSecret(ctx, "p", "docs")
	assert.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.GetSecret(ctx, "q", "docs")
	assert.NoError(t, err, "another project's is untouched")
}

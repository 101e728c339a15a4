package vault

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSealOpens(t *testing.T) {
	s := Ephemeral()
	sealed, err := s.Seal("p", "docs-token", []byte("s3cret"))
	require.NoError(t, err)
	assert.NotContains(t, string(sealed), "s3cret")
	got, err := s.Open("p", "docs-token", sealed)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", string(got))

	_, err = s.Open("q", "docs-token", sealed)
	assert.ErrorIs(t, err, ErrOpen, "another project")
	_, err = s.Open("p", "other", sealed)
	assert.ErrorIs(t, err, ErrOpen, "another name")
	_, err = Ephemeral().Open("p", "docs-token", sealed)
	assert.ErrorIs(t, err, ErrOpen, "another key")
	_, err = s.Open("p", "docs-token", sealed[:3])
	assert.ErrorIs(t, err, ErrOpen, "a damaged row")
	again, err := s.Seal("p", "docs-token", []byte("s3cret"))
	require.NoError(t, err)
	assert.NotEqual(t, sealed, again, "a fresh nonce each time")
}

func TestLoadKeyCreatesOnceWith0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", KeyFile)
	k1, err := LoadKey(path)
	require.NoError(t, err)
	assert.Len(t, k1, KeySize)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	k2, err := LoadKey(path)
	require.NoError(t, err)
	assert.Equal(t, k1, k2, "the same key on the next start")

	require.NoError(t, os.WriteFile(path, []byte("short"), 0o600))
	_, err = LoadKey(path)
	assert.ErrorContains(t, err, "is 5 bytes, want 32")
	_, err = New([]byte("short"))
	assert.Error(t, err)
}

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLockRefusesASecondCore(t *testing.T) {
	dir := t.TempDir()
	release, err := Lock(dir)
	require.NoError(t, err)
	_, err = Lock(dir)
	var inUse *InUseError
	require.ErrorAs(t, err, &inUse)
	assert.Equal(t, os.Getpid(), inUse.PID, "the holder's PID is named")
	assert.Contains(t, err.Error(), "is in use by another Core")
	require.NoError(t, release())
	again, err := Lock(dir)
	require.NoError(t, err, "free again once released")
	require.NoError(t, again())
}

// The database and its WAL are readable by Core's user only, also when
// the directory comes from before that rule.
func TestDatabaseFilesAreOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	s, err := Open(context.Background(), dir)
	require.NoError(t, err)
	defer s.Close()
	for _, name := range []string{FileName, FileName + "-wal"} {
		info, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), name)
	}
}

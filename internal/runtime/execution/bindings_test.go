package execution_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/execution"
)

const (
	envX = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"
	envY = "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e"
)

func TestBindingsAddAndLookup(t *testing.T) {
	dirX, dirY := t.TempDir(), t.TempDir()
	b := execution.NewBindings()
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	require.NoError(t, b.Add(envX, dirX))
	require.NoError(t, b.Add(envY, dirY))

	ws, ok := b.Lookup(envX)
	require.True(t, ok)
	require.NotNil(t, ws)
	resolved, err := filepath.EvalSymlinks(dirX)
	require.NoError(t, err)
	assert.Equal(t, resolved, b.Dir(envX), "the directory is absolute with its links resolved")
	assert.True(t, b.Has(envY))
	assert.False(t, b.Has("0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f"), "an Environment that was not added")
	assert.False(t, b.Has(""), "Environment none has no binding")
	assert.Equal(t, []string{envY, envX}, b.IDs())
	assert.Equal(t, 2, b.Len())

	var none *execution.Bindings
	_, ok = none.Lookup(envX)
	assert.False(t, ok, "nil binds nothing")
	assert.Empty(t, none.Dir(envX))
	assert.NoError(t, none.Close())
}

func TestBindingsRefuseWhatDefeatsIsolation(t *testing.T) {
	base := t.TempDir()
	dirX := filepath.Join(base, "x")
	require.NoError(t, os.MkdirAll(filepath.Join(dirX, "inner"), 0o755))
	other := t.TempDir()
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, []byte("f"), 0o644))
	link := filepath.Join(other, "link-to-x")
	require.NoError(t, os.Symlink(dirX, link))

	b := execution.NewBindings()
	t.Cleanup(func() { _ = b.Close() })
	require.NoError(t, b.Add(envX, dirX))
	for name, c := range map[string]struct{ env, dir, want string }{
		"not canonical":     {env: "ENV-1", dir: other, want: "not a canonical Environment ID"},
		"upper case":        {env: "8D0F3A2B-1C4E-4F5A-8B6C-7D8E9F0A1B2C", dir: other, want: "canonical"},
		"bound twice":       {env: envX, dir: other, want: "bound twice"},
		"no directory":      {env: envY, dir: "", want: "no directory"},
		"missing directory": {env: envY, dir: filepath.Join(base, "missing"), want: "no such file or directory"},
		"not a directory":   {env: envY, dir: file, want: "not a directory"},
		"same directory":    {env: envY, dir: dirX, want: "is the directory of environment " + envX},
		"through a link":    {env: envY, dir: link, want: "is the directory of environment " + envX},
		"nested inside":     {env: envY, dir: filepath.Join(dirX, "inner"), want: "lies inside the directory of environment " + envX},
		"containing":        {env: envY, dir: base, want: "contains the directory of environment " + envX},
	} {
		t.Run(name, func(t *testing.T) {
			err := b.Add(c.env, c.dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, 1, b.Len(), "a refused binding adds nothing")
		})
	}
	assert.Error(t, (&execution.Bindings{}).Add(envY, other), "a zero Bindings is refused, not a panic")
}

package daemon_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/daemon"
)

func TestReadCredentialFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	for name, tc := range map[string]struct {
		path, want string // want: the error, "" for success
	}{
		"secret alone":   {path: write("raw", secret+"\n", 0o600)},
		"issue's JSON":   {path: write("json", `{"kind":"device","device_id":"dev-1","secret":"`+secret+`"}`, 0o600)},
		"world-readable": {path: write("open", secret, 0o644), want: "can be read by every user of this machine (mode 0644); fix it with: chmod 600 "},
		"another device": {path: write("other", `{"kind":"device","device_id":"dev-2","secret":"`+secret+`"}`, 0o600), want: "is for device dev-2, not dev-1"},
		"a project key":  {path: write("proj", `{"kind":"project","secret":"`+secret+`"}`, 0o600), want: "holds a project credential"},
		"empty":          {path: write("empty", "\n", 0o600), want: "is empty"},
		"no secret":      {path: write("nosecret", `{"kind":"device","device_id":"dev-1"}`, 0o600), want: "holds no secret"},
		"broken JSON":    {path: write("broken", `{"kind":`, 0o600), want: "neither a secret nor the JSON"},
		"missing":        {path: filepath.Join(dir, "nothing"), want: "the credential file"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := daemon.ReadCredentialFile(tc.path, "dev-1")
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				assert.NotContains(t, err.Error(), secret)
				assert.True(t, c.Empty())
				return
			}
			require.NoError(t, err)
			assert.False(t, c.Empty())
		})
	}
}

// Run reads Config.CredentialFile and authenticates with it; a file it
// cannot use stops Run before any bootstrap.
func TestRunReadsTheCredentialFile(t *testing.T) {
	c := newCore(t)
	good := filepath.Join(t.TempDir(), "cred")
	require.NoError(t, os.WriteFile(good, []byte(secret), 0o600))
	r := runWith(t, c, daemon.Config{CredentialFile: good})
	ws := accept(t, c)
	assert.Equal(t, "heartbeat", read(t, ws).Type)
	_ = ws.CloseNow()
	require.NoError(t, r.stop(t))
	boots := c.boots.Load()

	bad := filepath.Join(t.TempDir(), "cred")
	require.NoError(t, os.WriteFile(bad, []byte(`{"kind":"device","device_id":"dev-9","secret":"x"}`), 0o600))
	r = runWith(t, c, daemon.Config{CredentialFile: bad})
	select {
	case err := <-r.done:
		var perm *daemon.Permanent
		require.ErrorAs(t, err, &perm)
		assert.Contains(t, perm.What, "is for device dev-9")
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not refuse the file")
	}
	assert.Equal(t, boots, c.boots.Load())
}

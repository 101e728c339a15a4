package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/daemon"
)

// --out writes the secret to a new 0600 file and never prints it: a device
// credential as the JSON the Runtime reads (device checked), an API key
// alone; an existing file is never overwritten, and then nothing is issued.
func TestCredentialIssueOut(t *testing.T) {
	data := t.TempDir()
	issue := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(append([]string{"core", "credential", "issue", "--data", data}, args...), &out, &errb)
		return out.String(), err
	}
	devFile := filepath.Join(t.TempDir(), "device.secret")
	printed, err := issue("--kind", "device", "--device", "dev-1", "--project", "p", "--out", devFile)
	require.NoError(t, err)
	var rec issued
	require.NoError(t, json.Unmarshal([]byte(printed), &rec))
	assert.Empty(t, rec.Secret, "the secret is not printed")
	assert.Equal(t, devFile, rec.SecretFile)
	info, err := os.Stat(devFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	raw, err := os.ReadFile(devFile)
	require.NoError(t, err)
	cred, err := daemon.ReadCredentialFile(devFile, "dev-1")
	require.NoError(t, err, "the Runtime reads the file")
	assert.False(t, cred.Empty())
	assert.NotContains(t, printed, strings.TrimSpace(string(raw)))
	_, err = daemon.ReadCredentialFile(devFile, "dev-2")
	assert.ErrorContains(t, err, "not dev-2")

	keyFile := filepath.Join(t.TempDir(), "project.key")
	_, err = issue("--kind", "project", "--project", "p", "--out", keyFile)
	require.NoError(t, err)
	key, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	assert.Regexp(t, `^\S+\n$`, string(key), "an API key file holds the key alone")

	_, err = issue("--kind", "project", "--project", "p", "--out", keyFile)
	assert.ErrorContains(t, err, "the file exists, and a credential file is never overwritten")
	missing := filepath.Join(t.TempDir(), "no-such-dir", "k")
	_, err = issue("--kind", "project", "--project", "p", "--out", missing)
	assert.ErrorContains(t, err, "the directory "+filepath.Dir(missing)+" does not exist: create it first; nothing was issued")
	assert.NotContains(t, err.Error(), "overwritten", "a missing directory is not an existing file")
	var list bytes.Buffer
	require.NoError(t, run([]string{"core", "credential", "list", "--data", data}, &list, &bytes.Buffer{}))
	assert.Equal(t, 3, bytes.Count(list.Bytes(), []byte("\n")), "a header and the two credentials: the refused --out issued nothing\n%s", list.String())
}

func TestCredentialHelpNeedsNoData(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"core", "credential", "-h"}, &out, &bytes.Buffer{}))
	assert.Contains(t, out.String(), "issue|list|revoke")
	err := run([]string{"core", "credential", "bogus"}, &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorIs(t, err, errUsage)
}

func TestCredentialListJSON(t *testing.T) {
	data := t.TempDir()
	require.NoError(t, run([]string{"core", "credential", "issue", "--data", data, "--kind", "project", "--project", "p", "--out", filepath.Join(t.TempDir(), "k")}, &bytes.Buffer{}, &bytes.Buffer{}))
	var out bytes.Buffer
	require.NoError(t, run([]string{"core", "credential", "list", "--json", "--data", data}, &out, &bytes.Buffer{}))
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 1)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &rec))
	assert.Equal(t, "project", rec["kind"])
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, rec["created_at"])
	assert.NotContains(t, out.String(), "secret")
}

// core device revoke revokes every credential of the device, and says so
// when it has none left.
func TestCoreDeviceRevoke(t *testing.T) {
	data := t.TempDir()
	for i := 0; i < 2; i++ {
		require.NoError(t, run([]string{"core", "credential", "issue", "--data", data, "--kind", "device", "--device", "dev-1", "--project", "p",
			"--out", filepath.Join(t.TempDir(), "c")}, &bytes.Buffer{}, &bytes.Buffer{}))
	}
	require.NoError(t, run([]string{"core", "credential", "issue", "--data", data, "--kind", "device", "--device", "dev-2", "--project", "p",
		"--out", filepath.Join(t.TempDir(), "c")}, &bytes.Buffer{}, &bytes.Buffer{}))
	var out bytes.Buffer
	require.NoError(t, run([]string{"core", "device", "revoke", "--data", data, "--device", "dev-1"}, &out, &bytes.Buffer{}))
	assert.Equal(t, 2, strings.Count(out.String(), "revoked "))
	var list bytes.Buffer
	require.NoError(t, run([]string{"core", "credential", "list", "--json", "--data", data}, &list, &bytes.Buffer{}))
	for _, l := range strings.Split(strings.TrimSpace(list.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		_, revoked := rec["revoked_at"]
		assert.Equal(t, rec["device_id"] == "dev-1", revoked, "%v", rec)
	}
	err := run([]string{"core", "device", "revoke", "--data", data, "--device", "dev-1"}, &bytes.Buffer{}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "no credential to revoke")
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilesAgainstTheRuntimeProcess: a real Core and a real Runtime
// process serving a workspace directory registered as an Environment
// (`env create`, then `runtime --environment ID=DIR`); `agentwire files ls`
// and `cat` read it through the public API, each one bounded read.
func TestFilesAgainstTheRuntimeProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentwire(t)
	data := t.TempDir()
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	core := startCore(t, bin, data)

	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello from the workspace\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644))
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte(dev.Secret), 0o600))
	reg := cliJSON(t, bin, proj.Secret, "env", "create", "--core", core.base, "--device", "dev-1")
	envID := reg["id"].(string)
	rtLogs := startRuntimeProcess(t, bin, nil, "--core", core.base, "--device-id", "dev-1", "--credential-file", cred, "--environment", envID+"="+ws)

	// An idle read needs a connected device that declared itself.
	require.Eventually(t, func() bool {
		d := cliJSON(t, bin, proj.Secret, "devices", "--json", "--core", core.base)
		list, _ := d["devices"].([]any)
		for _, x := range list {
			if m, _ := x.(map[string]any); m["connected"] == true {
				kinds, _ := m["agent_kinds"].([]any)
				return len(kinds) > 0
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "runtime logs: %s", rtLogs.String())

	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "script", "--environment", envID)
	sid := ses["id"].(string)
	require.Equal(t, envID, ses["environment_id"], "%v", ses)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	files := func(args ...string) (string, string, error) {
		c := exec.CommandContext(ctx, bin, append([]string{"files"}, args...)...)
		c.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		return out.String(), errOut.String(), err
	}
	logs := func() string { return "core: " + core.logs.String() + "\nruntime: " + rtLogs.String() }

	out, _, err := files("ls", "--core", core.base, "--session", sid)
	require.NoError(t, err, logs())
	assert.Equal(t, []string{"file       25  README.md", "directory  -   src/"}, strings.Split(strings.TrimSpace(out), "\n"))

	out, _, err = files("ls", "--core", core.base, "--session", sid, "--max-entries", "1")
	require.NoError(t, err, logs())
	assert.Contains(t, out, "README.md")
	assert.NotContains(t, out, "src/")
	assert.Contains(t, out, "(truncated: the directory holds more than the 1 entries shown")

	out, errOut, err := files("cat", "--core", core.base, "--session", sid, "src/main.go")
	require.NoError(t, err, logs())
	assert.Equal(t, "package main\n", out)
	assert.Empty(t, errOut)

	out, errOut, err = files("cat", "--core", core.base, "--session", sid, "--max-bytes", "5", "README.md")
	require.NoError(t, err, logs())
	assert.Equal(t, "hello", out)
	assert.Contains(t, errOut, "truncated")

	_, errOut, err = files("cat", "--core", core.base, "--session", sid, "nope.txt")
	require.Error(t, err)
	assert.Contains(t, errOut, "404")
	assert.Contains(t, errOut, "not_found")

	_, errOut, err = files("cat", "--core", core.base, "--session", sid, "../outside")
	require.Error(t, err)
	assert.Contains(t, errOut, `"field":"path"`)

	// files put: the body lands in the workspace; no progress bar when
	// stderr is not a terminal.
	local := filepath.Join(dir, "upload.bin")
	big := bytes.Repeat([]byte("0123456789"), 40<<10)
	require.NoError(t, os.WriteFile(local, big, 0o600))
	out, errOut, err = files("put", "--core", core.base, "--session", sid, "notes/upload.bin", local)
	require.NoError(t, err, "%s\n%s", errOut, logs())
	assert.Contains(t, out, `"outcome": "completed"`)
	assert.NotContains(t, errOut, "[#", "plain output off a terminal")
	got, err := os.ReadFile(filepath.Join(ws, "notes", "upload.bin"))
	require.NoError(t, err)
	assert.Equal(t, big, got)
	require.NoError(t, os.WriteFile(local, make([]byte, 5<<20+1), 0o600))
	_, errOut, err = files("put", "--core", core.base, "--session", sid, "huge.bin", local)
	require.Error(t, err)
	assert.Contains(t, errOut, "5 MiB")
	_, errOut, err = files("put", "--core", core.base, "--session", sid, "src", filepath.Join(dir, "credential"))
	require.Error(t, err, "a directory is no file")
	assert.Contains(t, errOut, "write_rejected")

	// files export: the outputs directory as a tar.
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "outputs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "outputs", "report.txt"), []byte("the report"), 0o644))
	tarPath := filepath.Join(dir, "out.tar")
	out, errOut, err = files("export", "--core", core.base, "--session", sid, tarPath)
	require.NoError(t, err, "%s\n%s", errOut, logs())
	assert.Contains(t, out, "wrote "+tarPath)
	archive, err := os.ReadFile(tarPath)
	require.NoError(t, err)
	assert.Contains(t, string(archive), "outputs/report.txt")
	assert.Contains(t, string(archive), "the report")
	assert.NotContains(t, string(archive), "hello from the workspace", "only outputs/ is exported")

	for _, s := range []string{dev.Secret, proj.Secret} {
		assert.NotContains(t, core.logs.String(), s)
		assert.NotContains(t, rtLogs.String(), s)
	}
}

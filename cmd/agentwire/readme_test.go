package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEQuickStart runs the README's quick-start block as written,
// with bash, against the binary built from this checkout: if the README
// drifts from the CLI, this fails. The one change is Core's port: the
// README's 127.0.0.1:8080 becomes a free one, so the test never meets
// another listener.
func TestREADMEQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	// The quick start runs in an empty directory, so the install step must
	// leave agentwire on PATH whichever way it was built.
	install := fencedBlockAfter(t, string(readme), "<!-- install -->")
	assert.Contains(t, install, `export PATH="$(go env GOPATH)/bin:$PATH"`, "go install's directory goes on PATH")
	assert.Contains(t, install, `export PATH="$PWD/bin:$PATH"`, "make build's bin/ goes on PATH")
	block := quickStartBlock(t, string(readme))
	require.Contains(t, block, "127.0.0.1:8080", "the quick start names Core's address")
	block = strings.ReplaceAll(block, "127.0.0.1:8080", freeAddr(t))

	bin := buildAgentwire(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure bound, not a wait
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "GOCACHE" || k == "TMPDIR" {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A process that left the group (an agent in a group of its own) may
	// still hold the block's stdout after the kill; Run must not wait on
	// it past the failure bound (a run under load once hung 9 minutes).
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	// Whatever the block left running goes with its process group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	logs := func() string {
		core, _ := os.ReadFile(filepath.Join(dir, "core.log"))
		rt, _ := os.ReadFile(filepath.Join(dir, "runtime.log"))
		return "stdout:\n" + out.String() + "\nstderr:\n" + errb.String() + "\ncore.log:\n" + string(core) + "\nruntime.log:\n" + string(rt)
	}
	require.NoError(t, err, logs())
	got := out.String()
	written, accepted := strings.Index(got, `"written":true`), strings.Index(got, `"accepted":true`)
	assert.True(t, written >= 0 && accepted > written, "turn input shows written, then accepted\n%s", logs())
	assert.Contains(t, got, `"delta":"summarize the notes"`, logs())
	assert.Contains(t, got, `"delta":"keep it short"`, logs())
	assert.Contains(t, got, `status {"state":"completed"}`, logs())
	assert.Contains(t, got, "notes.txt", logs())
	assert.Contains(t, got, "buy milk", logs())
	info, err := os.Stat(filepath.Join(dir, "project.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// quickStartBlock is the fenced sh block after <!-- quickstart -->.
func quickStartBlock(t *testing.T, readme string) string {
	return fencedBlockAfter(t, readme, "<!-- quickstart -->")
}

// fencedBlockAfter is the fenced sh block that follows marker.
func fencedBlockAfter(t *testing.T, readme, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, marker)
	require.True(t, ok, "README.md has no %s block", marker)
	_, rest, ok = strings.Cut(rest, "```sh\n")
	require.True(t, ok, "the block after %s is not a fenced sh block", marker)
	block, _, ok := strings.Cut(rest, "\n```")
	require.True(t, ok, "the block after %s is not closed", marker)
	return block
}

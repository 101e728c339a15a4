//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullFS is a small tmpfs mounted for one test: its data directory's
// file system, which the test fills to the last block.
type fullFS struct {
	dir    string
	filler string
}

// mountTmpfs mounts a tmpfs of size bytes, or skips the test saying why
// (mounting needs root and a kernel that lets this process mount; CI runs
// as root).
func mountTmpfs(t *testing.T, size int64) *fullFS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full file system needs a small tmpfs, and mounting one needs root")
	}
	dir := filepath.Join(t.TempDir(), "fs")
	require.NoError(t, os.Mkdir(dir, 0o700))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("mounting a tmpfs failed (%v): this test needs a file system it can fill", err)
	}
	// Registered before any process starts, so it runs after they stopped.
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return &fullFS{dir: dir, filler: filepath.Join(dir, "filler")}
}

// fill writes the filler file until the file system has no block left,
// then gives back margin bytes of it.
func (f *fullFS) fill(t *testing.T, margin int64) {
	t.Helper()
	w, err := os.OpenFile(f.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := w.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	require.NoError(t, w.Close())
	if margin > 0 {
		st, err := os.Stat(f.filler)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(f.filler, max(st.Size()-margin, 0)))
	}
	var s syscall.Statfs_t
	require.NoError(t, syscall.Statfs(f.dir, &s))
	t.Logf("file system filled: %d bytes free", int64(s.Bavail)*s.Bsize)
}

// free removes the filler.
func (f *fullFS) free(t *testing.T) { require.NoError(t, os.Remove(f.filler)) }

// TestFullFileSystemFailsTheTurnAndCoreRecovers runs a real Core on an
// SQLite data directory on a small tmpfs and a real Runtime, fills the file
// system while a Turn streams 400 deltas of 4 KiB, and checks that the
// Turn fails persistence_failed (never running), that its event stream
// ends with that status, that Core logs the store's error, that the
// failure is written once space is back, and that the device's next Turn
// completes without a restart of either process.
func TestFullFileSystemFailsTheTurnAndCoreRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	fs := mountTmpfs(t, 32<<20)
	bin := buildAgentwire(t)
	dir := t.TempDir()
	data := filepath.Join(fs.dir, "data")
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "full")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "full")
	credFile := filepath.Join(dir, "device-credential")
	require.NoError(t, os.WriteFile(credFile, []byte(dev.Secret), 0o600))
	// The Turn streams a first delta, waits for an active input (the file
	// system is filled meanwhile), streams it, then 1.6 MB of deltas: 402
	// deltas in all.
	steps := []map[string]any{{"delta": "first "}, {"await_input": true}}
	big := strings.Repeat("x", 4<<10)
	for range 400 {
		steps = append(steps, map[string]any{"delta": big})
	}
	script, err := json.Marshal(map[string]any{"steps": steps, "session_id": "native-1"})
	require.NoError(t, err)
	scriptFile := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(scriptFile, script, 0o600))

	core, base := startProc(t, bin, "agentwire core: listening on ", "core", "serve", "--listen", "127.0.0.1:0", "--data", data)
	rt, _ := startProc(t, bin, "", "runtime", "--core", base, "--device-id", "dev-1", "--credential-file", credFile, "--harness", "script="+scriptFile)
	api := &crashAPI{t: t, base: base, key: proj.Secret}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Core's log:\n%s\nthe Runtime's log:\n%s", core.logs.String(), rt.logs.String())
		}
	})

	code, ses := api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script", "environment": map[string]any{"type": "none"}})
	require.Equal(t, 201, code, "%v", ses)
	sesID := ses["id"].(string)
	code, tr := api.do("POST", "/api/v1/sessions/"+sesID+"/turns", textInput("fill"))
	require.Equal(t, 201, code, "%v", tr)
	turnID := tr["id"].(string)
	api.waitEvent(turnID, "delta", "first")
	// The file system is filled but for 256 KiB: enough to store and
	// deliver the input, far less than the 1.6 MB of deltas it releases.
	fs.fill(t, 256<<10)
	code, _ = api.do("POST", "/api/v1/turns/"+turnID+"/input", textInput("go"))
	require.Equal(t, 202, code)

	// The Turn fails with the persistence reason, its stream ends with
	// that status, and Core says why.
	poll(t, 60*time.Second, "the Turn to fail", func() bool { return api.status(turnID)["state"] == "failed" })
	assert.Equal(t, map[string]any{"state": "failed", "reason": "persistence_failed"}, api.status(turnID))
	types := api.eventTypes(turnID)
	require.NotEmpty(t, types)
	assert.Equal(t, "status", types[len(types)-1], "the stream ended with the Turn's status")
	assert.NotContains(t, types, "done", "nothing invented")
	deltas := 0
	for _, ty := range types {
		if ty == "delta" {
			deltas++
		}
	}
	t.Logf("deltas journaled before the store failed: %d of 402", deltas)
	assert.Less(t, deltas, 402, "the file system filled before the last delta")
	assert.Contains(t, core.logs.String(), "the store failed to write the connection's journal batch")

	// Space comes back: the failure is written (its observation joins the
	// journal), the Runtime reconnects and the next Turn completes.
	fs.free(t)
	poll(t, 30*time.Second, "the failure to be written", func() bool {
		ts := api.eventTypes(turnID)
		return len(ts) > 1 && ts[len(ts)-2] == "observation"
	})
	assert.Equal(t, map[string]any{"state": "failed", "reason": "persistence_failed"}, api.status(turnID))
	code, next := api.do("POST", "/api/v1/sessions/"+sesID+"/turns", textInput("after"))
	require.Equal(t, 201, code, "%v", next)
	nextID := next["id"].(string)
	api.waitEvent(nextID, "delta", "first")
	code, _ = api.do("POST", "/api/v1/turns/"+nextID+"/input", textInput("go"))
	require.Equal(t, 202, code)
	poll(t, 90*time.Second, "the next Turn to complete", func() bool { return api.status(nextID)["state"] == "completed" })
	nextTypes := api.eventTypes(nextID)
	n := 0
	for _, ty := range nextTypes {
		if ty == "delta" {
			n++
		}
	}
	assert.Equal(t, 402, n, "every delta of the next Turn is journaled (the first, the input's echo and the 400)")

	rt.stop()
	core.stop()
	for _, logs := range []string{core.logs.String(), rt.logs.String()} {
		assert.NotContains(t, logs, dev.Secret)
		assert.NotContains(t, logs, proj.Secret)
	}
}

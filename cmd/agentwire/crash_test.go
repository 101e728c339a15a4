package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreKilledMidTurnAndRestarted runs `agentwire core serve` on an
// SQLite data directory and `agentwire runtime` with the script adapter as
// real processes, SIGKILLs Core while a Turn runs, restarts it on the same
// data directory and port, and checks that no record was lost, that the
// interrupted Turn is failed with event_stream_incomplete (native effect
// unknown: neither completed nor a native failure, daemon-protocol.txt:153),
// that the device reconnects under a new owner epoch and that nothing is
// replayed: the only execution the restarted Core starts is a new Turn's.
func TestCoreKilledMidTurnAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := buildAgentwire(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "crash")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "crash")
	credFile := filepath.Join(dir, "device-credential")
	require.NoError(t, os.WriteFile(credFile, []byte(dev.Secret), 0o600))
	script := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[{"delta":"partial"},{"hang":true}],"session_id":"native-1"}`), 0o600))

	core1, base := startProc(t, bin, "agentwire core: listening on ", "core", "serve", "--listen", "127.0.0.1:0", "--data", data,
		"--transcript", filepath.Join(dir, "frames-1.jsonl"))
	rt, _ := startProc(t, bin, "", "runtime", "--core", base, "--device-id", "dev-1", "--credential-file", credFile, "--harness", "script="+script)
	api := &crashAPI{t: t, base: base, key: proj.Secret}

	code, ses := api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script", "environment": map[string]any{"type": "none"}})
	require.Equal(t, 201, code, "%v", ses)
	sesID := ses["id"].(string)
	// A Session no device serves: its Turn stays queued across the crash.
	_, idle := api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "nobody", "environment": map[string]any{"type": "none"}})
	code, queued := api.do("POST", "/api/v1/sessions/"+idle["id"].(string)+"/turns", textInput("wait for me"))
	require.Equal(t, 201, code)
	code, turn := api.do("POST", "/api/v1/sessions/"+sesID+"/turns", textInput("first"))
	require.Equal(t, 201, code)
	turnID := turn["id"].(string)

	// Running, with its first delta journaled: Core has observed the Run.
	poll(t, 30*time.Second, "the Turn to run", func() bool { return api.status(turnID)["state"] == "running" })
	// The script declares message_items: its message completes right
	// after the delta, before the hang (crashEnv.waitMessage).
	poll(t, 30*time.Second, "the first message", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "frames-1.jsonl"))
		return bytes.Contains(b, []byte(`"type":"output_message"`)) && bytes.Contains(b, []byte(`"completed"`))
	})
	_, devs := api.do("GET", "/api/v1/devices", nil)
	require.Contains(t, fmt.Sprint(devs), "owner_epoch:1")
	// An active input stored (and delivered) before the crash.
	code, _ = api.do("POST", "/api/v1/turns/"+turnID+"/input", map[string]any{"input_id": "steer-1", "input": textInput("more")["input"]})
	require.Equal(t, 202, code)
	poll(t, 30*time.Second, "the input to be delivered", func() bool {
		return len(framesOfType(t, filepath.Join(dir, "frames-1.jsonl"), "prompt_steer")) == 1
	})

	core1.kill(t)

	core2, base2 := startProc(t, bin, "agentwire core: listening on ", "core", "serve", "--listen", strings.TrimPrefix(base, "http://"), "--data", data,
		"--transcript", filepath.Join(dir, "frames-2.jsonl"))
	require.Equal(t, base, base2, "restarted on the same address, so the Runtime finds it")

	// The interrupted Turn: failed with the observation reason, no engine
	// classification, never completed or re-run.
	st := api.status(turnID)
	assert.Equal(t, map[string]any{"state": "failed", "reason": "event_stream_incomplete"}, st)
	types := api.eventTypes(turnID)
	require.GreaterOrEqual(t, len(types), 3)
	assert.Equal(t, []string{"output_message", "delta", "output_message"}, types[:3], "the journal kept what was observed")
	assert.Equal(t, []string{"observation", "status"}, types[len(types)-2:], "nothing invented: no error, no done")
	assert.NotContains(t, types, "done")
	assert.NotContains(t, types, "error")
	assert.Equal(t, map[string]any{"state": "queued"}, api.status(queued["id"].(string)), "the queued Turn survived")

	// The Runtime reconnects under a new owner epoch.
	poll(t, 60*time.Second, "the device to reconnect", func() bool {
		_, v := api.do("GET", "/api/v1/devices", nil)
		s := fmt.Sprint(v)
		return strings.Contains(s, "connected:true") && strings.Contains(s, "owner_epoch:2") && strings.Contains(s, "kind:script")
	})

	// A new Turn of the same Session runs; it is the only execution the
	// restarted Core starts (the interrupted one is not replayed).
	code, next := api.do("POST", "/api/v1/sessions/"+sesID+"/turns", textInput("second"))
	require.Equal(t, 201, code)
	nextID := next["id"].(string)
	poll(t, 30*time.Second, "the new Turn to run", func() bool { return api.status(nextID)["state"] == "running" })
	starts := framesOfType(t, filepath.Join(dir, "frames-2.jsonl"), "execution_start")
	require.Len(t, starts, 1)
	assert.Contains(t, starts[0], `"text":"second"`)
	assert.Empty(t, framesOfType(t, filepath.Join(dir, "frames-2.jsonl"), "prompt_steer"), "no input is replayed")
	code, _ = api.do("POST", "/api/v1/turns/"+turnID+"/input", textInput("too late"))
	assert.Equal(t, 409, code, "the interrupted Turn takes no more input")
	code, _ = api.do("POST", "/api/v1/turns/"+nextID+"/cancel", nil)
	require.Equal(t, 202, code)
	poll(t, 30*time.Second, "the new Turn to be cancelled", func() bool { return api.status(nextID)["state"] == "cancelled" })

	rt.stop()
	core2.stop()
	assert.Contains(t, core2.logs.String(), "reconciled a Turn left by an earlier Core process")
	for _, logs := range []string{core1.logs.String(), core2.logs.String(), rt.logs.String()} {
		assert.NotContains(t, logs, dev.Secret)
		assert.NotContains(t, logs, proj.Secret)
	}
}

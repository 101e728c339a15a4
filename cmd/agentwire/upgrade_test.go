package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store/sqlite"
)

// TestUpgradeFromBeforeDevicesHadProjects starts a real `core serve` on a
// data directory a build of schema version 4 left: a device that connected
// then (its credential issued for no project) and a local Environment with
// a caller-chosen binding. Core migrates it and names both at start; the
// device's daemon connects and is usable by no project until `core device
// assign` gives it to one, after which that project's queued Turn runs on
// it without the daemon reconnecting.
func TestUpgradeFromBeforeDevicesHadProjects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	// The daemon heartbeats every second (15 s at scale 15), so the
	// assignment reaches its live connection within a second.
	t.Setenv("AGENTWIRE_ALLOW_TIME_SCALE", "1")
	bin := buildAgentwire(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(t, os.MkdirAll(data, 0o700))
	devSecret := credential.Secret("awd_issued-by-a-build-before-tenancy")
	keySecret := credential.Secret("awp_alpha-key-issued-by-a-build-before-tenancy")
	require.NoError(t, sqlite.CreateAtVersion(context.Background(), data, 4, fmt.Sprintf(`
INSERT INTO devices(id, owner_epoch, connected, declaration, last_seen) VALUES ('dev-old', 2, 0, NULL, 1);
INSERT INTO credentials(id, kind, device_id, project, hash, created_at) VALUES ('cred_old_device', 'device', 'dev-old', '', '%s', 1);
INSERT INTO credentials(id, kind, device_id, project, hash, created_at) VALUES ('cred_old_key', 'project', '', 'alpha', '%s', 1);
INSERT INTO environments(id, project, type, binding, created_at) VALUES ('env-old', 'alpha', 'self_hosted', '{"id":"chosen-by-a-caller"}', 1);`,
		credential.Hash(devSecret), credential.Hash(keySecret))))

	core, base := startProc(t, bin, "agentwire core: listening on ", "core", "serve", "--listen", "127.0.0.1:0", "--data", data)
	// Core names what the migration left usable by no one before it
	// listens (its stderr is copied here a little after).
	poll(t, 10*time.Second, "core serve's start warnings", func() bool { return strings.Contains(core.logs.String(), `"environment_id":"env-old"`) })
	logs := core.logs.String()
	assert.Contains(t, logs, "device belongs to no project")
	assert.Contains(t, logs, "agentwire core device assign --device dev-old --project P")
	assert.Contains(t, logs, `"device_id":"dev-old"`)
	assert.Contains(t, logs, `"environment_id":"env-old"`)

	// The registry as the administrator sees it, straight from the store.
	adminDevice := func() map[string]any {
		out, err := exec.Command(bin, "core", "devices", "--data", data).Output()
		require.NoError(t, err)
		var v struct {
			Devices []map[string]any `json:"devices"`
		}
		require.NoError(t, json.Unmarshal(out, &v))
		for _, d := range v.Devices {
			if d["device_id"] == "dev-old" {
				return d
			}
		}
		return nil
	}
	require.NotNil(t, adminDevice(), "the device survived the migration")
	assert.Nil(t, adminDevice()["project"], "owned by no project")

	script := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[{"delta":"upgraded"}]}`), 0o600))
	cred := filepath.Join(dir, "dev-old.credential")
	require.NoError(t, os.WriteFile(cred, []byte(devSecret.Reveal()), 0o600))
	rt, _ := startProc(t, bin, "", "runtime", "--core", base, "--device-id", "dev-old", "--credential-file", cred,
		"--harness", "script="+script, "--time-scale", "15")
	poll(t, 60*time.Second, "dev-old to connect and declare itself", func() bool {
		d := adminDevice()
		return d != nil && d["connected"] == true && len(asList(d["agent_kinds"])) > 0
	})
	epoch := adminDevice()["owner_epoch"]

	// Unassigned, the device is nobody's: alpha does not see it, cannot
	// register a workspace on it, and alpha's Turn waits for a device.
	alpha := &crashAPI{t: t, base: base, key: keySecret.Reveal()}
	code, devs := alpha.do("GET", "/api/v1/devices", nil)
	require.Equal(t, 200, code, "%v", devs)
	assert.Empty(t, asList(devs["devices"]))
	code, v := alpha.do("POST", "/api/v1/environments", map[string]any{"device_id": "dev-old"})
	assert.Equal(t, 404, code, "%v", v)
	code, ses := alpha.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script"})
	require.Equal(t, 201, code, "%v", ses)
	code, tr := alpha.do("POST", "/api/v1/sessions/"+ses["id"].(string)+"/turns", textInput("after the upgrade"))
	require.Equal(t, 201, code, "%v", tr)
	turn := tr["id"].(string)
	var waiting map[string]any
	poll(t, 30*time.Second, "the Turn's placement reason", func() bool {
		_, got := alpha.do("GET", "/api/v1/turns/"+turn, nil)
		waiting, _ = got["waiting"].(map[string]any)
		st, _ := got["status"].(map[string]any)
		return waiting != nil || st["state"] != "queued"
	})
	require.NotNil(t, waiting, "the Turn was placed on a device no project owns")
	assert.Equal(t, "no_device", waiting["reason"], "%v", waiting)
	assert.Equal(t, map[string]any{"state": "queued"}, alpha.status(turn))

	out, err := exec.Command(bin, "core", "device", "assign", "--data", data, "--device", "dev-old", "--project", "alpha").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "device dev-old belongs to project alpha")

	// The live connection learns it at its next heartbeat: the Turn runs
	// there, and the device is alpha's to see and register on.
	poll(t, 30*time.Second, "the Turn to complete on dev-old", func() bool { return alpha.status(turn)["state"] == "completed" })
	assert.Equal(t, epoch, adminDevice()["owner_epoch"], "on the same connection")
	assert.Equal(t, "alpha", adminDevice()["project"])
	code, devs = alpha.do("GET", "/api/v1/devices", nil)
	require.Equal(t, 200, code, "%v", devs)
	require.Len(t, asList(devs["devices"]), 1)
	assert.Equal(t, "dev-old", asList(devs["devices"])[0].(map[string]any)["device_id"])
	code, v = alpha.do("POST", "/api/v1/environments", map[string]any{"device_id": "dev-old"})
	assert.Equal(t, 201, code, "%v", v)
	out, err = exec.Command(bin, "core", "device", "assign", "--data", data, "--device", "dev-old", "--project", "beta").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "belongs to another project")

	// Restarted, Core no longer names the device; the old Environment is
	// still named until a new one replaces it.
	rt.stop()
	core.stop()
	core, _ = startProc(t, bin, "agentwire core: listening on ", "core", "serve", "--listen", "127.0.0.1:0", "--data", data)
	poll(t, 10*time.Second, "core serve's start warnings", func() bool { return strings.Contains(core.logs.String(), `"environment_id":"env-old"`) })
	assert.NotContains(t, core.logs.String(), "device belongs to no project")
}

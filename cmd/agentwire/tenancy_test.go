package main

// The cross-tenant suite (docs/tenancy.md): a real `agentwire core serve`,
// two projects with a device each and a real `agentwire runtime` per
// device. Project B, playing a hostile tenant, aims every public route at
// project A's records and tries the ways into A's device it has; nothing
// it does reaches A's workspace, Turns or receipts, and its own work on
// its own device never stops A's.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/wire"
)

// tenant is one project with its key, device, Runtime and Environment.
type tenant struct {
	project, device string
	key, dev        issued
	api             *crashAPI
	workspace       string
	env             string // the registered Environment's ID
	runtime         *proc
}

type tenancyEnv struct {
	t        *testing.T
	bin, dir string
	data     string
	core     *proc
	base     string
	a, b     *tenant
}

// tenancyScript is what both tenants' script Harness plays by default: a
// Turn that completes.
const tenancyScript = `{"steps":[{"delta":"working"},{"delta":" done"}]}`

// alphaInit is the file A's Environment is initialized with.
const alphaInit = "initialized for alpha\n"

func newTenancyEnv(t *testing.T, scriptA string, runtimeArgs ...string) *tenancyEnv {
	t.Helper()
	e := &tenancyEnv{t: t, bin: buildAgentwire(t), dir: t.TempDir()}
	e.data = filepath.Join(e.dir, "data")
	e.a = &tenant{project: "alpha", device: "dev-a"}
	e.b = &tenant{project: "beta", device: "dev-b"}
	for _, tn := range []*tenant{e.a, e.b} {
		tn.key = issueCredential(t, e.bin, e.data, "--kind", "project", "--project", tn.project)
		tn.dev = issueCredential(t, e.bin, e.data, "--kind", "device", "--device", tn.device, "--project", tn.project)
	}
	e.core, e.base = startProc(t, e.bin, "agentwire core: listening on ", "core", "serve", "--listen", "127.0.0.1:0", "--data", e.data,
		"--transcript", filepath.Join(e.dir, "frames.jsonl"))
	for _, tn := range []*tenant{e.a, e.b} {
		script := filepath.Join(e.dir, tn.project+"-script.json")
		content := tenancyScript
		if tn == e.a && scriptA != "" {
			content = scriptA
		}
		require.NoError(t, os.WriteFile(script, []byte(content), 0o600))
		tn.api = &crashAPI{t: t, base: e.base, key: tn.key.Secret}
		tn.workspace = filepath.Join(e.dir, "ws-"+tn.project)
		require.NoError(t, os.MkdirAll(filepath.Join(tn.workspace, "src"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(tn.workspace, "src", "main.go"), []byte("package "+tn.project+"\n"), 0o600))
		reg := map[string]any{"device_id": tn.device}
		if tn == e.a {
			// A's workspace is initialized from its registration, so that
			// A's work also sends runtime_prepare.
			reg["initialization"] = map[string]any{"files": []any{map[string]any{"path": "/workspace/notes/init.txt",
				"content": base64.StdEncoding.EncodeToString([]byte(alphaInit))}}}
		}
		code, env := tn.api.do("POST", "/api/v1/environments", reg)
		require.Equal(t, 201, code, "%v", env)
		tn.env = env["id"].(string)
		cred := filepath.Join(e.dir, tn.device+".credential")
		require.NoError(t, os.WriteFile(cred, []byte(tn.dev.Secret), 0o600))
		tn.runtime, _ = startProc(t, e.bin, "", append([]string{"runtime", "--core", e.base, "--device-id", tn.device, "--credential-file", cred,
			"--harness", "script=" + script, "--environment", tn.env + "=" + tn.workspace}, runtimeArgs...)...)
	}
	for _, tn := range []*tenant{e.a, e.b} {
		e.waitDeclared(tn)
	}
	return e
}

// waitDeclared waits until the tenant's device is connected and declares
// its agent kinds, as the tenant's own device list shows it.
func (e *tenancyEnv) waitDeclared(tn *tenant) {
	e.t.Helper()
	poll(e.t, 60*time.Second, tn.device+" to declare itself", func() bool {
		for _, d := range devicesOf(tn) {
			if d["device_id"] == tn.device && d["connected"] == true && len(asList(d["agent_kinds"])) > 0 {
				return true
			}
		}
		return false
	})
}

func devicesOf(tn *tenant) []map[string]any {
	code, v := tn.api.do("GET", "/api/v1/devices", nil)
	if code != 200 {
		return nil
	}
	var out []map[string]any
	for _, x := range asList(v["devices"]) {
		if d, ok := x.(map[string]any); ok {
			out = append(out, d)
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

func (tn *tenant) session(t *testing.T) string {
	t.Helper()
	code, s := tn.api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script", "environment_id": tn.env})
	require.Equal(t, 201, code, "%v", s)
	return s["id"].(string)
}

func (tn *tenant) turn(t *testing.T, session, text string) string {
	t.Helper()
	code, v := tn.api.do("POST", "/api/v1/sessions/"+session+"/turns", textInput(text))
	require.Equal(t, 201, code, "%v", v)
	return v["id"].(string)
}

func (tn *tenant) waitState(t *testing.T, turn, state string) {
	t.Helper()
	poll(t, 30*time.Second, "turn "+turn+" to be "+state, func() bool { return tn.api.status(turn)["state"] == state })
}

// raw sends a request with a raw body and returns the status and body.
func (tn *tenant) raw(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, tn.api.base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tn.key.Secret)
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// hashTree hashes every path, mode and content under dir.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", rel, info.Mode())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	}))
	return hex.EncodeToString(h.Sum(nil))
}

// routeAttempt is what B sends on one public route, aimed at A's records
// and at a record that does not exist.
type routeAttempt struct {
	path, missing, body string
}

func TestCrossTenantIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newTenancyEnv(t, "")
	a, b := e.a, e.b

	// A's work sends every frame family that names an Environment: a
	// completed Turn (its Environment's initialization first, then
	// execution_prepare), a file written through Core with its receipt,
	// an idle listing and read, an export, and a suspension it resumes.
	sesA := a.session(t)
	turnA := a.turn(t, sesA, "alpha's turn")
	a.waitState(t, turnA, "completed")
	code, put := a.raw(t, "PUT", "/api/v1/sessions/"+sesA+"/files/content?path=notes/a.txt", "alpha's notes\n")
	require.Equal(t, 200, code, put)
	var write map[string]any
	require.NoError(t, json.Unmarshal([]byte(put), &write))
	mutationA := write["mutation_id"].(string)
	require.Equal(t, "completed", write["outcome"])
	code, ls := a.raw(t, "GET", "/api/v1/sessions/"+sesA+"/files?path=notes", "")
	require.Equal(t, 200, code, ls)
	assert.Contains(t, ls, `"a.txt"`)
	assert.Contains(t, ls, `"init.txt"`)
	code, cat := a.raw(t, "GET", "/api/v1/sessions/"+sesA+"/files/content?path=notes/init.txt", "")
	require.Equal(t, 200, code, cat)
	var content struct {
		Data []byte `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(cat), &content))
	assert.Equal(t, alphaInit, string(content.Data), "A's initialization reached A's workspace")
	require.NoError(t, os.MkdirAll(filepath.Join(a.workspace, "outputs"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(a.workspace, "outputs", "report.txt"), []byte("alpha's report\n"), 0o600))
	code, tar := a.raw(t, "GET", "/api/v1/sessions/"+sesA+"/export", "")
	require.Equal(t, 200, code, tar)
	assert.Contains(t, tar, "alpha's report")
	code, sus := a.api.do("POST", "/api/v1/environments/"+a.env+"/suspend", map[string]any{})
	require.Equal(t, 200, code, "%v", sus)
	require.Equal(t, "suspended", sus["state"], "%v", sus)
	code, res := a.api.do("POST", "/api/v1/environments/"+a.env+"/resume", map[string]any{})
	require.Equal(t, 200, code, "%v", res)
	require.Equal(t, "resumed", res["state"], "%v", res)

	code, agentA := a.api.do("POST", "/api/v1/agents", map[string]any{"agent_kind": "script", "instructions": "alpha's"})
	require.Equal(t, 201, code, agentA)
	_, agentBefore := a.api.do("GET", "/api/v1/agents/"+agentA["id"].(string), nil)
	code, secretA := a.api.do("PUT", "/api/v1/vault/secrets/alpha-token", map[string]any{"value": "alpha's token"})
	require.Equal(t, 200, code, secretA)
	_, secretsBefore := a.api.do("GET", "/api/v1/vault/secrets", nil)

	before := hashTree(t, a.workspace)
	_, turnBefore := a.api.do("GET", "/api/v1/turns/"+turnA, nil)
	eventsBefore := a.api.eventTypes(turnA)
	_, writeBefore := a.api.do("GET", "/api/v1/writes/"+mutationA, nil)
	_, envBefore := a.api.do("GET", "/api/v1/environments/"+a.env, nil)

	const missingUUID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	ids := map[string][2]string{ // A's record, a missing one
		"{session_id}":     {sesA, "ses_000000000000000000000000"},
		"{turn_id}":        {turnA, "turn_000000000000000000000000"},
		"{interaction_id}": {"perm_0", "perm_0"}, // a real pending question: TestAnotherProjectCannotAnswerOurQuestion
		"{mutation_id}":    {mutationA, missingUUID},
		"{environment_id}": {a.env, missingUUID},
		"{agent_id}":       {agentA["id"].(string), "agent_000000000000000000000000"},
		"{device_id}":      {a.device, "dev-missing"},
	}
	bodies := map[string]string{
		"POST /api/v1/sessions/{session_id}/turns":                   `{"input":[{"content":[{"type":"input_text","text":"beta was here"}]}]}`,
		"POST /api/v1/turns/{turn_id}/input":                         `{"input_id":"b1","input":[{"content":[{"type":"input_text","text":"beta"}]}]}`,
		"POST /api/v1/turns/{turn_id}/interactions/{interaction_id}": `{"approved":true}`,
		"PUT /api/v1/sessions/{session_id}/files/content":            "beta overwrote this\n",
		"POST /api/v1/writes/{mutation_id}/resolve":                  `{"resolution":"applied"}`,
		"PUT /api/v1/agents/{agent_id}":                              `{"agent_kind":"script","instructions":"beta's"}`,
	}
	queries := map[string]string{
		"GET /api/v1/sessions/{session_id}/files":         "?path=src",
		"GET /api/v1/sessions/{session_id}/files/content": "?path=src/main.go",
		"PUT /api/v1/sessions/{session_id}/files/content": "?path=src/main.go",
	}

	tried := 0
	for _, r := range api.Routes {
		name := r.Method + " " + r.Path
		if !strings.Contains(r.Path, "{") {
			continue // the routes without an identity are checked below
		}
		if strings.Contains(r.Path, "/vault/") {
			continue // a secret's name is the project's own namespace: checked below
		}
		path, missing := r.Path, r.Path
		for ph, v := range ids {
			path = strings.ReplaceAll(path, ph, v[0])
			missing = strings.ReplaceAll(missing, ph, v[1])
		}
		path += queries[name]
		missing += queries[name]
		code, theirs := b.raw(t, r.Method, path, bodies[name])
		mcode, absent := b.raw(t, r.Method, missing, bodies[name])
		tried++
		if name == "POST /api/v1/writes/{mutation_id}/resolve" {
			// An operator's act: a project key never resolves, whoever's.
			assert.Equal(t, http.StatusForbidden, code, name)
			continue
		}
		assert.Equal(t, http.StatusNotFound, code, "%s on A's record: %s", name, theirs)
		assert.Equal(t, mcode, code, "%s: A's record and a missing one answer alike", name)
		assert.Equal(t, absent, theirs, "%s: the same body for A's record and a missing one", name)
	}
	assert.GreaterOrEqual(t, tried, 15, "every public route with an identity was tried")

	// The routes without an identity: B sees only its own, and cannot
	// name A's device or Environment.
	for _, d := range devicesOf(b) {
		assert.Equal(t, b.device, d["device_id"], "B lists only its own device")
	}
	_, envs := b.api.do("GET", "/api/v1/environments", nil)
	require.Len(t, asList(envs["environments"]), 1)
	assert.Equal(t, b.env, asList(envs["environments"])[0].(map[string]any)["id"])
	code, v := b.api.do("POST", "/api/v1/environments", map[string]any{"device_id": a.device})
	assert.Equal(t, 404, code, "B cannot register a workspace on A's device: %v", v)
	code, v = b.api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script", "environment_id": a.env})
	assert.Equal(t, 404, code, "B cannot name A's Environment: %v", v)
	assert.Equal(t, "environment_id", v["field"])
	code, v = b.api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script",
		"environment": map[string]any{"type": "self_hosted", "binding": map[string]any{"id": a.env}}})
	assert.Equal(t, 400, code, "a caller-chosen binding is refused: %v", v)
	assert.Equal(t, "environment.binding", v["field"])
	code, v = b.api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script",
		"environment": map[string]any{"type": "self_hosted", "initialization": map[string]any{"files": []any{map[string]any{"path": "/workspace/planted", "content": "eA=="}}}}})
	assert.Equal(t, 400, code, "initialization belongs to a registered Environment: %v", v)

	// B's device credential opens nothing of A's device.
	bootstrap, err := http.NewRequest("POST", e.base+"/api/v1/agent-daemon/bootstrap", strings.NewReader(`{"device_id":"`+a.device+`"}`))
	require.NoError(t, err)
	bootstrap.Header.Set("Authorization", "Bearer "+b.dev.Secret)
	resp, err := http.DefaultClient.Do(bootstrap)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "B's device credential bootstraps no other device")
	upgrade, err := http.NewRequest("GET", e.base+"/api/v1/agent-daemon/ws?device_id="+a.device+"&version="+wire.Version, nil)
	require.NoError(t, err)
	upgrade.Header.Set("Authorization", "Bearer "+b.dev.Secret)
	resp, err = http.DefaultClient.Do(upgrade)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "nor opens its connection")

	// B's own Session runs on B's device only, in B's workspace.
	sesB := b.session(t)
	turnB := b.turn(t, sesB, "beta's turn")
	b.waitState(t, turnB, "completed")
	// A Session of Environment none may go to any device, but only to one
	// of its own project: A's device sorts first and is connected, and
	// still B's Turn runs on B's.
	code, none := b.api.do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script"})
	require.Equal(t, 201, code, "%v", none)
	require.Equal(t, "none", none["environment_type"])
	sesBNone := none["id"].(string)
	turnBNone := b.turn(t, sesBNone, "beta without a workspace")
	b.waitState(t, turnBNone, "completed")

	// Nothing of A's changed.
	assert.Equal(t, before, hashTree(t, a.workspace), "A's workspace is unchanged")
	_, turnAfter := a.api.do("GET", "/api/v1/turns/"+turnA, nil)
	assert.Equal(t, turnBefore, turnAfter, "A's Turn is unchanged")
	assert.Equal(t, eventsBefore, a.api.eventTypes(turnA), "A's journal is unchanged")
	_, writeAfter := a.api.do("GET", "/api/v1/writes/"+mutationA, nil)
	assert.Equal(t, writeBefore, writeAfter, "A's write receipt is unchanged")
	_, envAfter := a.api.do("GET", "/api/v1/environments/"+a.env, nil)
	assert.Equal(t, envBefore, envAfter, "A's Environment is unchanged (no suspension, no initialization)")
	// The Vault: B cannot delete A's secret (the same 404 as a missing
	// one); B's secret of the same name is B's own and leaves A's alone.
	code, theirs := b.raw(t, "DELETE", "/api/v1/vault/secrets/alpha-token", "")
	mcode, absent := b.raw(t, "DELETE", "/api/v1/vault/secrets/missing-token", "")
	assert.Equal(t, 404, code, theirs)
	assert.Equal(t, mcode, code)
	assert.Equal(t, absent, theirs)
	code, v = b.api.do("PUT", "/api/v1/vault/secrets/alpha-token", map[string]any{"value": "beta's token"})
	assert.Equal(t, 200, code, v)
	_, secretsB := b.api.do("GET", "/api/v1/vault/secrets", nil)
	assert.Len(t, asList(secretsB["secrets"]), 1, "B lists only its own")
	_, secretsAfter := a.api.do("GET", "/api/v1/vault/secrets", nil)
	assert.Equal(t, secretsBefore, secretsAfter, "A's secret is untouched")
	_, agentAfter := a.api.do("GET", "/api/v1/agents/"+agentA["id"].(string), nil)
	assert.Equal(t, agentBefore, agentAfter, "A's Agent has no version B wrote")
	_, agentsB := b.api.do("GET", "/api/v1/agents", nil)
	assert.Empty(t, agentsB["agents"], "B lists none of A's Agents")
	got, err := os.ReadFile(filepath.Join(a.workspace, "src", "main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package alpha\n", string(got))

	// Every frame Core sent that names an Environment went to that
	// Environment's own device, and A's work used every family of them.
	sent := checkFramesStayHome(t, filepath.Join(e.dir, "frames.jsonl"), map[string]string{a.env: a.device, b.env: b.device, sesBNone: b.device})
	for _, typ := range []string{wire.TypeExecutionPrepare, wire.TypeRuntimePrepare, wire.TypeWorkspaceRead, wire.TypeWorkspaceWrite,
		wire.TypeWorkspaceExport, wire.TypeEnvironmentQuiesce, wire.TypeEnvironmentResume} {
		assert.True(t, sent[a.env][typ], "the check saw a %s frame naming A's Environment", typ)
	}
}

// checkFramesStayHome reads Core's transcript and checks that every frame
// Core sent naming an Environment (or a Session of Environment none) was
// sent on the connection of the device home gives for it.
func checkFramesStayHome(t *testing.T, path string, home map[string]string) map[string]map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	seen := map[string]bool{}
	types := map[string]map[string]bool{} // the frame types that named each key
	for _, l := range bytes.Split(raw, []byte("\n")) {
		var line struct {
			Dir    string          `json:"dir"`
			Device string          `json:"device"`
			Frame  json.RawMessage `json:"frame"`
		}
		if len(bytes.TrimSpace(l)) == 0 || json.Unmarshal(l, &line) != nil || line.Dir != "out" {
			continue
		}
		var env struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(line.Frame, &env)
		for key, device := range home {
			if bytes.Contains(line.Frame, []byte(key)) {
				assert.Equal(t, device, line.Device, "a frame naming %s went to %s: %s", key, line.Device, line.Frame)
				seen[key] = true
				if types[key] == nil {
					types[key] = map[string]bool{}
				}
				types[key][env.Type] = true
			}
		}
	}
	var envs []string
	for env := range home {
		envs = append(envs, env)
	}
	sort.Strings(envs)
	for _, env := range envs {
		assert.True(t, seen[env], "Core sent some frame naming %s (the check is not vacuous)", env)
	}
	return types
}

// TestAnotherProjectsWorkNeverStopsOurs: B writes into its own workspace
// while A's Turn runs, then holds its own Environment suspended and runs
// Turns on its device; meanwhile A's Turns, write and read on A's device
// complete. B's Runtime, frozen with SIGSTOP, holds nothing of A's either.
func TestAnotherProjectsWorkNeverStopsOurs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	// A's Turns stay running until A sends them an input, so what B does
	// meanwhile overlaps them for certain.
	e := newTenancyEnv(t, `{"steps":[{"delta":"working"},{"await_input":true},{"delta":" done"}]}`)
	a, b := e.a, e.b
	sesA, sesB := a.session(t), b.session(t)
	inputs := 0
	finish := func(turn string) {
		t.Helper()
		inputs++
		code, v := a.api.do("POST", "/api/v1/turns/"+turn+"/input", map[string]any{"input_id": fmt.Sprintf("a%d", inputs),
			"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "go on"}}}}})
		require.Equal(t, http.StatusAccepted, code, "%v", v)
		a.waitState(t, turn, "completed")
	}

	// B's write on B's device while A's Turn runs on A's.
	turnA := a.turn(t, sesA, "alpha works on")
	a.waitState(t, turnA, "running")
	code, put := b.raw(t, "PUT", "/api/v1/sessions/"+sesB+"/files/content?path=notes/b.txt", "beta writes meanwhile\n")
	require.Equal(t, 200, code, put)
	assert.Contains(t, put, `"outcome":"completed"`)
	got, err := os.ReadFile(filepath.Join(b.workspace, "notes", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "beta writes meanwhile\n", string(got))
	assert.Equal(t, map[string]any{"state": "running"}, a.api.status(turnA), "B's write neither failed nor requeued A's Turn")
	finish(turnA)

	// B's suspension of its own Environment.
	code, sus := b.api.do("POST", "/api/v1/environments/"+b.env+"/suspend", map[string]any{})
	require.Equal(t, 200, code, "%v", sus)
	require.Equal(t, "suspended", sus["state"], "%v", sus)
	turnB := b.turn(t, sesB, "held by B's own suspension")

	turnA1 := a.turn(t, sesA, "alpha still works")
	a.waitState(t, turnA1, "running")
	finish(turnA1)
	code, put = a.raw(t, "PUT", "/api/v1/sessions/"+sesA+"/files/content?path=notes/a.txt", "still mine\n")
	assert.Equal(t, 200, code, put)
	code, body := a.raw(t, "GET", "/api/v1/sessions/"+sesA+"/files/content?path=notes/a.txt", "")
	assert.Equal(t, 200, code, body)
	assert.Equal(t, "queued", b.api.status(turnB)["state"], "B's suspension holds B's own Turn")

	code, res := b.api.do("POST", "/api/v1/environments/"+b.env+"/resume", map[string]any{})
	require.Equal(t, 200, code, "%v", res)
	b.waitState(t, turnB, "completed")

	// B's Runtime frozen: A is untouched.
	b.runtime.signal(t, syscall.SIGSTOP)
	defer b.runtime.signal(t, syscall.SIGCONT)
	turnA2 := a.turn(t, sesA, "alpha again")
	a.waitState(t, turnA2, "running")
	finish(turnA2)
}

// TestRevokedDeviceCredentialStopsItsDaemon revokes project A's device
// credential from another process while A's Turn runs: Core closes the
// live connection with 4001 at its next heartbeat, A's daemon settles its
// work and exits without reconnecting, and the Turn is reported as after
// any connection loss. B's device is not touched.
func TestRevokedDeviceCredentialStopsItsDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	// The daemons heartbeat every second (15 s at scale 15), so the
	// revocation shows within a second of real time.
	t.Setenv("AGENTWIRE_ALLOW_TIME_SCALE", "1")
	e := newTenancyEnv(t, `{"steps":[{"delta":"partial"},{"hang":true}]}`, "--time-scale", "15")
	a, b := e.a, e.b
	sesA := a.session(t)
	turnA := a.turn(t, sesA, "long work")
	a.waitState(t, turnA, "running")

	out, err := exec.Command(e.bin, "core", "credential", "revoke", "--data", e.data, a.dev.ID).CombinedOutput()
	require.NoError(t, err, "%s", out)

	var exitErr error
	select {
	case exitErr = <-a.runtime.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("A's daemon still runs a minute after the revocation:\n%s", a.runtime.logs.String())
	}
	a.runtime.exited <- exitErr // stop() reads it again at cleanup
	require.Error(t, exitErr, "the daemon reports that it stopped for good:\n%s", a.runtime.logs.String())
	assert.Contains(t, a.runtime.logs.String(), "4001")

	a.waitState(t, turnA, "failed")
	assert.Equal(t, map[string]any{"state": "failed", "reason": "event_stream_incomplete"}, a.api.status(turnA), "no invented outcome")
	// Core marks the device offline once the closed connection's loop has
	// ended, which may come after the Turn's failure is recorded.
	var device map[string]any
	poll(t, 30*time.Second, a.device+" to be offline", func() bool {
		for _, d := range devicesOf(a) {
			if d["device_id"] == a.device && d["connected"] == false {
				device = d
				return true
			}
		}
		return false
	})
	assert.Equal(t, float64(1), device["owner_epoch"], "the daemon never reconnected")
	sesB := b.session(t)
	turnB := b.turn(t, sesB, "beta carries on")
	b.waitState(t, turnB, "completed")
}

// TestAnotherProjectCannotAnswerOurQuestion: while A's Turn waits on a
// real permission question, B aims the interaction route at it, through
// A's Turn and through B's own: each answers 404 exactly as for a
// question that does not exist, and no decision reaches A's Runtime. A's
// question is still open: A's own answer is applied and the Turn
// completes.
func TestAnotherProjectCannotAnswerOurQuestion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newTenancyEnv(t, `{"steps":[{"permission":{"request_id":"perm-alpha","tool":"shell","title":"run ls"}},{"delta":" done"}]}`)
	a, b := e.a, e.b
	turnA := a.turn(t, a.session(t), "ask before you act")
	interaction := pendingInteraction(t, a, turnA)
	turnB := b.turn(t, b.session(t), "beta's own")
	b.waitState(t, turnB, "completed")

	const answer = `{"approved":true}`
	for _, try := range []struct{ theirs, missing string }{
		{"/api/v1/turns/" + turnA + "/interactions/" + interaction, "/api/v1/turns/turn_000000000000000000000000/interactions/" + interaction},
		{"/api/v1/turns/" + turnB + "/interactions/" + interaction, "/api/v1/turns/" + turnB + "/interactions/int_000000000000000000000000"},
	} {
		code, theirs := b.raw(t, "POST", try.theirs, answer)
		mcode, missing := b.raw(t, "POST", try.missing, answer)
		assert.Equal(t, http.StatusNotFound, code, "%s: %s", try.theirs, theirs)
		assert.Equal(t, mcode, code, "%s: A's question and a missing one answer alike", try.theirs)
		assert.Equal(t, missing, theirs, "%s: the same body for A's question and a missing one", try.theirs)
	}
	transcript := filepath.Join(e.dir, "frames.jsonl")
	assert.Empty(t, framesOfType(t, transcript, wire.TypePermissionDecision), "no decision left Core")
	assert.Equal(t, map[string]any{"state": "running"}, a.api.status(turnA))

	code, v := a.api.do("POST", "/api/v1/turns/"+turnA+"/interactions/"+interaction, map[string]any{"approved": true})
	require.Equal(t, http.StatusAccepted, code, "A answers its own question: %v", v)
	a.waitState(t, turnA, "completed")
	decisions := framesOfType(t, transcript, wire.TypePermissionDecision)
	require.Len(t, decisions, 1, "A's answer, once")
	var line struct {
		Dir    string `json:"dir"`
		Device string `json:"device"`
	}
	require.NoError(t, json.Unmarshal([]byte(decisions[0]), &line))
	assert.Equal(t, "out", line.Dir)
	assert.Equal(t, a.device, line.Device)
}

// pendingInteraction follows the Turn's public event stream until its
// first permission_request and returns the question's interaction ID.
func pendingInteraction(t *testing.T, tn *tenant, turn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := tn.api.events(ctx, turn)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	current := ""
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			current = ev
			continue
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && current == "permission_request" {
			var q struct {
				InteractionID string `json:"interaction_id"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &q))
			require.NotEmpty(t, q.InteractionID, data)
			return q.InteractionID
		}
	}
	t.Fatalf("turn %s: the event stream ended without a permission_request", turn)
	return ""
}

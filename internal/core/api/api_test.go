package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/api"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	t       *testing.T
	store   store.Store
	journal *api.Journal
	srv     *httptest.Server
	key     credential.Secret
	other   credential.Secret
	device  credential.Secret
	// cancelErr is what the Cancel function answers.
	cancelErr error
}

func newEnv(t *testing.T) *env {
	st := memory.New()
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	is := credential.Issuer{Store: st, Now: now}
	e := &env{t: t, store: st, journal: &api.Journal{Store: st}}
	var err error
	_, e.key, err = is.Issue(context.Background(), store.KindProject, "", "p1")
	require.NoError(t, err)
	_, e.other, err = is.Issue(context.Background(), store.KindProject, "", "p2")
	require.NoError(t, err)
	_, e.device, err = is.Issue(context.Background(), store.KindDevice, "dev", "p1")
	require.NoError(t, err)
	mux := http.NewServeMux()
	api.New(api.Config{Store: st, Credentials: is, Journal: e.journal, Now: now,
		Devices: func(_ context.Context, project string) (any, error) { return []any{project}, nil },
		Cancel: func(_ context.Context, turnID string) (string, error) {
			if e.cancelErr != nil {
				return "", e.cancelErr
			}
			return "dlv-" + turnID, nil
		}}).Register(mux)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) do(key credential.Secret, method, path, body string, hdr ...string) (*http.Response, map[string]any) {
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	require.NoError(e.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key.Reveal())
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp, out
}

// localSession registers a self_hosted Environment on project p1's device
// "dev" (with the initialization declaration init, a JSON member list or
// "") and creates a Session in it.
func (e *env) localSession(init string) (sessionID, envID string) {
	e.t.Helper()
	require.NoError(e.t, e.store.AssignDevice(context.Background(), "dev", "p1", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	body := `{"device_id":"dev"`
	if init != "" {
		body += `,"initialization":` + init
	}
	resp, env := e.do(e.key, "POST", "/api/v1/environments", body+"}")
	require.Equal(e.t, 201, resp.StatusCode, "%v", env)
	envID = env["id"].(string)
	resp, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment_id":"`+envID+`"}`)
	require.Equal(e.t, 201, resp.StatusCode, "%v", s)
	return s["id"].(string), envID
}

const input = `{"input":[{"content":[{"type":"input_text","text":"hello"}]}]}`

func TestSessionsAndTurns(t *testing.T) {
	e := newEnv(t)
	resp, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"},"options":{"model":"m"}}`)
	require.Equal(t, 201, resp.StatusCode, "%v", s)
	sid := s["id"].(string)
	assert.Equal(t, "none", s["environment_type"])

	resp, got := e.do(e.key, "GET", "/api/v1/sessions/"+sid, "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "codex", got["agent_kind"])
	resp, _ = e.do(e.other, "GET", "/api/v1/sessions/"+sid, "")
	assert.Equal(t, 404, resp.StatusCode, "another project sees nothing")

	resp, tr := e.do(e.key, "POST", "/api/v1/sessions/"+sid+"/turns", input)
	require.Equal(t, 201, resp.StatusCode, "%v", tr)
	tid := tr["id"].(string)
	assert.Equal(t, map[string]any{"state": "queued"}, tr["status"])
	resp, tr = e.do(e.key, "GET", "/api/v1/turns/"+tid, "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, map[string]any{"state": "queued"}, tr["status"])

	resp, in := e.do(e.key, "POST", "/api/v1/turns/"+tid+"/input", `{"input_id":"i1","input":[{"content":[{"type":"input_text","text":"more"}]}]}`)
	require.Equal(t, 202, resp.StatusCode, "%v", in)
	assert.EqualValues(t, 1, in["seq"])
	resp, in = e.do(e.key, "POST", "/api/v1/turns/"+tid+"/input", `{"input_id":"i1","input":[{"content":[{"type":"input_text","text":"more"}]}]}`)
	assert.Equal(t, 409, resp.StatusCode)
	assert.Equal(t, "input_id", in["field"])

	// The status projection of a failed Turn keeps the reason.
	require.NoError(t, storetest.Start(e.store, tid, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}))
	require.NoError(t, e.store.MoveTurn(context.Background(), storetest.FinishMove(tid, "run", store.TurnRunning, store.TurnFailed, store.Outcome{Reason: store.ReasonEventStreamIncomplete}, time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))))
	_, tr = e.do(e.key, "GET", "/api/v1/turns/"+tid, "")
	assert.Equal(t, map[string]any{"state": "failed", "reason": "event_stream_incomplete"}, tr["status"])
}

func TestBadRequestsNameTheField(t *testing.T) {
	e := newEnv(t)
	_, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"}}`)
	sid := s["id"].(string)
	for _, tc := range []struct{ path, body, field string }{
		{"/api/v1/sessions", `{"environment":{"type":"none"}}`, "agent_kind"},
		{"/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"moon"}}`, "environment.type"},
		{"/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"},"options":[1]}`, "options"},
		{"/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"},"colour":1}`, "colour"},
		{"/api/v1/sessions", `{"agent_kind":7,"environment":{"type":"none"}}`, "agent_kind"},
		{"/api/v1/sessions/" + sid + "/turns", `{"input":[]}`, "input"},
		{"/api/v1/sessions/" + sid + "/turns", `{"input":[{"content":[{"type":"input_text","text":"   "}]}]}`, "input[0]"},
	} {
		resp, out := e.do(e.key, "POST", tc.path, tc.body)
		assert.Equal(t, 400, resp.StatusCode, tc.body)
		assert.True(t, strings.HasPrefix(out["field"].(string), tc.field), "%s: field %v", tc.body, out["field"])
	}
}

func TestCredentialKinds(t *testing.T) {
	e := newEnv(t)
	resp, out := e.do("", "GET", "/api/v1/devices", "")
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, "missing_bearer", out["error"])
	resp, out = e.do(e.device, "GET", "/api/v1/devices", "")
	assert.Equal(t, 403, resp.StatusCode, "a device credential never opens the public API")
	assert.Equal(t, "wrong_credential_kind", out["error"])
	resp, _ = e.do("awp_nope", "GET", "/api/v1/devices", "")
	assert.Equal(t, 401, resp.StatusCode)
	resp, _ = e.do(e.key, "GET", "/api/v1/devices", "")
	assert.Equal(t, 200, resp.StatusCode)
}

// sse reads events until the stream ends.
func sse(t *testing.T, resp *http.Response) (ids []string, types []string, data []string) {
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ids = append(ids, strings.TrimPrefix(line, "id: "))
		case strings.HasPrefix(line, "event: "):
			types = append(types, strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	return
}

func TestEventStreamResumes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"}}`)
	_, tr := e.do(e.key, "POST", "/api/v1/sessions/"+s["id"].(string)+"/turns", input)
	tid := tr["id"].(string)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, storetest.Start(e.store, tid, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run", At: t0}))
	for _, d := range []string{"a", "b"} {
		_, err := e.journal.Append(ctx, store.Event{TurnID: tid, RunID: "run", Type: "delta", Payload: json.RawMessage(`{"delta":"` + d + `"}`), At: t0})
		require.NoError(t, err)
	}

	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/turns/"+tid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.key.Reveal())
	req.Header.Set("Last-Event-ID", "1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	// The history, then the live marker: read up to it before appending,
	// so what is appended next is certainly new to the stream.
	br := bufio.NewReader(resp.Body)
	var head strings.Builder
	for !strings.HasSuffix(head.String(), "event: live\ndata: {\"after\":2}\n\n") {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "the stream so far: %q", head.String())
		head.WriteString(line)
	}

	// The stream is live: an event appended now reaches it, then done
	// and the terminal status end it.
	_, err = e.journal.Append(ctx, store.Event{TurnID: tid, RunID: "run", Type: "delta", Payload: json.RawMessage(`{"delta":"c"}`), At: t0})
	require.NoError(t, err)
	_, err = e.journal.Append(ctx, store.Event{TurnID: tid, RunID: "run", Type: "done", Payload: json.RawMessage(`{}`), At: t0})
	require.NoError(t, err)
	require.NoError(t, e.store.MoveTurn(ctx, storetest.FinishMove(tid, "run", store.TurnRunning, store.TurnCompleted, store.Outcome{}, t0)))
	e.journal.Notify(tid)

	ids, types, data := sse(t, &http.Response{Body: io.NopCloser(io.MultiReader(strings.NewReader(head.String()), br))})
	assert.Equal(t, []string{"2", "3", "4"}, ids, "resumed after Last-Event-ID 1")
	assert.Equal(t, []string{"delta", "live", "delta", "done", "status"}, types, "the history, the live marker, then what is new")
	assert.Equal(t, `{"delta":"b"}`, data[0])
	assert.Equal(t, `{"after":2}`, data[1])
	assert.Equal(t, `{"state":"completed"}`, data[4])
}

// The OpenAPI document describes exactly the routes the API registers.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/openapi.yaml")
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, r := range api.Routes {
		served = append(served, r.Method+" "+r.Path)
	}
	sort.Strings(documented)
	sort.Strings(served)
	assert.Equal(t, served, documented)

	// And every documented route answers (with 401 without a key), so
	// Routes is what the mux really serves.
	e := newEnv(t)
	for _, r := range api.Routes {
		path := strings.NewReplacer("{session_id}", "x", "{turn_id}", "x").Replace(r.Path)
		resp, out := e.do("", r.Method, path, "")
		assert.Equal(t, 401, resp.StatusCode, "%s %s", r.Method, path)
		assert.Equal(t, "missing_bearer", out["error"])
	}
}

func TestCancelAnswersWithTheDeliveryOr409(t *testing.T) {
	e := newEnv(t)
	_, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"}}`)
	_, tr := e.do(e.key, "POST", "/api/v1/sessions/"+s["id"].(string)+"/turns", input)
	tid := tr["id"].(string)

	resp, out := e.do(e.key, "POST", "/api/v1/turns/"+tid+"/cancel", "")
	require.Equal(t, 202, resp.StatusCode, "%v", out)
	assert.Equal(t, map[string]any{"turn_id": tid, "delivery_id": "dlv-" + tid}, out)

	resp, _ = e.do(e.other, "POST", "/api/v1/turns/"+tid+"/cancel", "")
	assert.Equal(t, 404, resp.StatusCode, "another project cannot cancel it")

	e.cancelErr = api.ErrNotRunning
	resp, out = e.do(e.key, "POST", "/api/v1/turns/"+tid+"/cancel", "")
	assert.Equal(t, 409, resp.StatusCode)
	assert.Equal(t, "not_running", out["error"])
	e.cancelErr = api.ErrFinished
	resp, out = e.do(e.key, "POST", "/api/v1/turns/"+tid+"/cancel", "")
	assert.Equal(t, 409, resp.StatusCode)
	assert.Equal(t, "turn_finished", out["error"])
}

// A project revokes its own device's credentials; another project's
// attempt answers as for a missing device and revokes nothing.
func TestRevokeDevice(t *testing.T) {
	e := newEnv(t)
	resp, theirs := e.do(e.other, "POST", "/api/v1/devices/dev/revoke", "")
	assert.Equal(t, 404, resp.StatusCode)
	resp, missing := e.do(e.other, "POST", "/api/v1/devices/nowhere/revoke", "")
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, missing, theirs, "not yours and missing answer alike")
	list, err := e.store.(store.Credentials).ListCredentials(context.Background())
	require.NoError(t, err)
	for _, c := range list {
		assert.False(t, c.Revoked(), "nothing was revoked by another project")
	}

	resp, got := e.do(e.key, "POST", "/api/v1/devices/dev/revoke", "")
	require.Equal(t, 200, resp.StatusCode, "%v", got)
	assert.Equal(t, "dev", got["device_id"])
	assert.Len(t, got["revoked"], 1)
	list, err = e.store.(store.Credentials).ListCredentials(context.Background())
	require.NoError(t, err)
	for _, c := range list {
		if c.DeviceID == "dev" {
			assert.True(t, c.Revoked())
		}
	}
	resp, got = e.do(e.key, "POST", "/api/v1/devices/dev/revoke", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Empty(t, got["revoked"], "revoking again revokes nothing more")
}

// The Vault: a project key writes, lists and deletes its project's
// secrets; a value is never shown; names and values are checked; another
// project neither sees nor deletes them.
func TestVaultSecrets(t *testing.T) {
	e := newEnv(t)
	resp, v := e.do(e.key, "PUT", "/api/v1/vault/secrets/docs-token", `{"value":"tok-123"}`)
	require.Equal(t, 200, resp.StatusCode, "%v", v)
	assert.Equal(t, "docs-token", v["name"])
	assert.NotContains(t, fmt.Sprint(v), "tok-123")
	stored, err := e.store.GetSecret(context.Background(), "p1", "docs-token")
	require.NoError(t, err)
	assert.NotContains(t, string(stored.Sealed), "tok-123", "sealed before it reaches the store")

	resp, v = e.do(e.key, "PUT", "/api/v1/vault/secrets/docs-token", `{"value":"tok-456"}`)
	require.Equal(t, 200, resp.StatusCode, "%v", v)
	resp, v = e.do(e.key, "GET", "/api/v1/vault/secrets", "")
	require.Equal(t, 200, resp.StatusCode)
	list, _ := v["secrets"].([]any)
	require.Len(t, list, 1)
	assert.NotContains(t, fmt.Sprint(v), "tok-")

	for _, tc := range []struct{ path, body, field string }{
		{"/api/v1/vault/secrets/-bad", `{"value":"x"}`, "name"},
		{"/api/v1/vault/secrets/ok", `{"value":"  "}`, "value"},
		{"/api/v1/vault/secrets/ok", `{"value":"` + strings.Repeat("x", 8<<10+1) + `"}`, "value"},
		{"/api/v1/vault/secrets/ok", `{"valu":"x"}`, ""},
	} {
		resp, v := e.do(e.key, "PUT", tc.path, tc.body)
		assert.Equal(t, 400, resp.StatusCode, "%s %v", tc.path, v)
		if tc.field != "" {
			assert.Equal(t, tc.field, v["field"])
		}
	}

	resp, v = e.do(e.other, "GET", "/api/v1/vault/secrets", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Empty(t, v["secrets"], "another project sees none")
	resp, _ = e.do(e.other, "DELETE", "/api/v1/vault/secrets/docs-token", "")
	assert.Equal(t, 404, resp.StatusCode, "nor deletes ours")
	resp, _ = e.do(e.key, "DELETE", "/api/v1/vault/secrets/docs-token", "")
	assert.Equal(t, 204, resp.StatusCode)
	resp, _ = e.do(e.key, "DELETE", "/api/v1/vault/secrets/docs-token", "")
	assert.Equal(t, 404, resp.StatusCode)
}

// An agent kind with control characters or spaces is refused naming the
// field.
func TestSessionAgentKindIsChecked(t *testing.T) {
	e := newEnv(t)
	for _, kind := range []string{`co\u0000dex`, `co\ndex`, `two words`} {
		resp, v := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"`+kind+`","environment":{"type":"none"}}`)
		assert.Equal(t, 400, resp.StatusCode, "%s: %v", kind, v)
		assert.Equal(t, "agent_kind", v["field"], kind)
	}
}

package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/wire"
)

func TestRegisteringAnEnvironmentNeedsADeviceOfTheProject(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.store.AssignDevice(ctx, "dev-b", "p2", time.Now()))
	_, err := e.store.AcquireOwner(ctx, "unassigned", time.Now())
	require.NoError(t, err)

	resp, env := e.do(e.key, "POST", "/api/v1/environments", `{"device_id":"dev"}`)
	require.Equal(t, 201, resp.StatusCode, "%v", env)
	id := env["id"].(string)
	assert.True(t, wire.IsCanonicalUUID(id), "Core mints a canonical UUID: %s", id)
	assert.Equal(t, "self_hosted", env["type"])
	assert.Equal(t, "dev", env["device_id"])
	assert.Equal(t, map[string]any{"id": id}, env["binding"], "the binding is the minted ID")

	resp, theirs := e.do(e.key, "POST", "/api/v1/environments", `{"device_id":"dev-b"}`)
	assert.Equal(t, 404, resp.StatusCode, "another project's device")
	assert.Equal(t, "device_id", theirs["field"])
	resp, missing := e.do(e.key, "POST", "/api/v1/environments", `{"device_id":"dev-missing"}`)
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, missing, theirs, "another project's device answers exactly as a missing one")
	resp, unassigned := e.do(e.key, "POST", "/api/v1/environments", `{"device_id":"unassigned"}`)
	assert.Equal(t, 404, resp.StatusCode, "a device no project owns hosts nothing")
	assert.Equal(t, missing, unassigned)

	for body, field := range map[string]string{
		`{}`:                                   "device_id",
		`{"device_id":"dev","type":"none"}`:    "type",
		`{"device_id":"dev","type":"moon"}`:    "type",
		`{"device_id":"dev","binding":{}}`:     "binding",
		`{"device_id":"dev","id":"chosen-id"}`: "id",
	} {
		resp, out := e.do(e.key, "POST", "/api/v1/environments", body)
		assert.Equal(t, 400, resp.StatusCode, body)
		assert.Equal(t, field, out["field"], body)
	}

	resp, list := e.do(e.key, "GET", "/api/v1/environments", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Len(t, list["environments"], 1)
	resp, list = e.do(e.other, "GET", "/api/v1/environments", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Empty(t, list["environments"], "another project lists none of them")
}

func TestASessionNamesARegisteredEnvironmentOfItsProject(t *testing.T) {
	e := newEnv(t)
	_, envID := e.localSession("")

	for body, want := range map[string]struct {
		status int
		field  string
	}{
		// A caller-chosen binding is refused, whatever it names.
		`{"agent_kind":"codex","environment":{"type":"self_hosted","binding":{"id":"` + envID + `"}}}`: {400, "environment.binding"},
		`{"agent_kind":"codex","environment":{"type":"self_hosted"}}`:                                  {400, "environment_id"},
		`{"agent_kind":"codex","environment_id":"` + envID + `","environment":{"type":"self_hosted"}}`: {400, "environment.type"},
		`{"agent_kind":"codex","environment_id":"8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"}`:               {404, "environment_id"},
	} {
		resp, out := e.do(e.key, "POST", "/api/v1/sessions", body)
		assert.Equal(t, want.status, resp.StatusCode, body)
		assert.Equal(t, want.field, out["field"], body)
	}

	resp, theirs := e.do(e.other, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment_id":"`+envID+`"}`)
	assert.Equal(t, 404, resp.StatusCode, "another project's Environment")
	_, missing := e.do(e.other, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment_id":"8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"}`)
	assert.Equal(t, missing, theirs, "answers exactly as a missing one")

	// A Session without a workspace gets an Environment of its own.
	resp, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex"}`)
	require.Equal(t, 201, resp.StatusCode, "%v", s)
	assert.Equal(t, "none", s["environment_type"])
	resp, _ = e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment_id":"`+s["environment_id"].(string)+`"}`)
	assert.Equal(t, 400, resp.StatusCode, "an Environment of type none is its Session's alone")
}

func TestTurnsOfAnEnvironmentNoDeviceHostsAreRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// As migration 5 leaves a local Environment stored before registration.
	require.NoError(t, e.store.CreateEnvironment(ctx, store.Environment{ID: "legacy", Project: "p1", Type: "self_hosted", Binding: []byte(`{"id":"x"}`)}))
	require.NoError(t, e.store.CreateSession(ctx, store.Session{ID: "ses-legacy", Project: "p1", AgentKind: "codex", EnvironmentID: "legacy"}))
	resp, out := e.do(e.key, "POST", "/api/v1/sessions/ses-legacy/turns", input)
	assert.Equal(t, 409, resp.StatusCode)
	assert.Equal(t, "environment_unplaced", out["error"])
}

func TestDevicesListsTheCallersProjectOnly(t *testing.T) {
	e := newEnv(t)
	_, out := e.do(e.key, "GET", "/api/v1/devices", "")
	assert.Equal(t, []any{"p1"}, out["devices"])
	_, out = e.do(e.other, "GET", "/api/v1/devices", "")
	assert.Equal(t, []any{"p2"}, out["devices"])
}

func TestARevokedKeyEndsItsOpenEventStream(t *testing.T) {
	// The bubble's clock is virtual: the stream's check timer fires when
	// every goroutine of the test waits, not after wall-clock time.
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		is := credential.Issuer{Store: st, Now: time.Now}
		ctx := context.Background()
		c, key, err := is.Issue(ctx, store.KindProject, "", "p1")
		require.NoError(t, err)
		mux := http.NewServeMux()
		api.New(api.Config{Store: st, Credentials: is, Journal: &api.Journal{Store: st}, Now: time.Now, Revalidate: time.Second}).Register(mux)
		call := func(method, path, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key.Reveal())
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			return rec
		}
		rec := call("POST", "/api/v1/sessions", `{"agent_kind":"codex"}`)
		require.Equal(t, 201, rec.Code, rec.Body.String())
		var s map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
		rec = call("POST", "/api/v1/sessions/"+s["id"].(string)+"/turns", input)
		require.Equal(t, 201, rec.Code, rec.Body.String())
		var tr map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &tr))

		stream := make(chan *httptest.ResponseRecorder, 1)
		go func() { stream <- call("GET", "/api/v1/turns/"+tr["id"].(string)+"/events", "") }()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		select {
		case <-stream:
			t.Fatal("a valid key's stream ended")
		default:
		}

		require.NoError(t, is.Revoke(ctx, c.ID))
		time.Sleep(time.Second)
		synctest.Wait()
		var got *httptest.ResponseRecorder
		select {
		case got = <-stream:
		default:
			t.Fatal("the revoked key's stream is still open one check interval later")
		}
		assert.Contains(t, got.Body.String(), "event: error")
		assert.Contains(t, got.Body.String(), "credential_revoked")
		assert.Equal(t, 401, call("GET", "/api/v1/turns/"+tr["id"].(string), "").Code, "and its next request is refused")
	})
}

// A Session's Turns are listed newest last, bounded by ?limit, to its own
// project only.
func TestListingASessionsTurns(t *testing.T) {
	e := newEnv(t)
	resp, ses := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"}}`)
	require.Equal(t, 201, resp.StatusCode, "%v", ses)
	id := ses["id"].(string)
	var turns []string
	for i := 0; i < 3; i++ {
		resp, turn := e.do(e.key, "POST", "/api/v1/sessions/"+id+"/turns", `{"input":[{"content":[{"type":"input_text","text":"hi"}]}]}`)
		require.Equal(t, 201, resp.StatusCode, "%v", turn)
		turns = append(turns, turn["id"].(string))
	}
	resp, list := e.do(e.key, "GET", "/api/v1/sessions/"+id+"/turns?limit=2", "")
	require.Equal(t, 200, resp.StatusCode, "%v", list)
	got := list["turns"].([]any)
	require.Len(t, got, 2)
	assert.Equal(t, turns[1], got[0].(map[string]any)["id"])
	assert.Equal(t, turns[2], got[1].(map[string]any)["id"])
	assert.Equal(t, map[string]any{"state": "queued"}, got[1].(map[string]any)["status"])

	resp, bad := e.do(e.key, "GET", "/api/v1/sessions/"+id+"/turns?limit=0", "")
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "limit", bad["field"])
	resp, _ = e.do(e.other, "GET", "/api/v1/sessions/"+id+"/turns", "")
	assert.Equal(t, 404, resp.StatusCode, "another project's Session is not there")
}

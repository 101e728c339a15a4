package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/api"
)

// envEnv is an API whose Suspend and Resume answer what the test sets.
func envEnv(t *testing.T, suspendErr *error) *env {
	st := memory.New()
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	is := credential.Issuer{Store: st, Now: now}
	e := &env{t: t, store: st, journal: &api.Journal{Store: st}}
	var err error
	_, e.key, err = is.Issue(context.Background(), store.KindProject, "", "p1")
	require.NoError(t, err)
	_, e.other, err = is.Issue(context.Background(), store.KindProject, "", "p2")
	require.NoError(t, err)
	attempt := func(envID, state string) store.Suspension {
		return store.Suspension{ID: "s-1", EnvironmentID: envID, DeviceID: "dev", State: state, CreatedAt: now(), UpdatedAt: now()}
	}
	mux := http.NewServeMux()
	api.New(api.Config{Store: st, Credentials: is, Journal: e.journal, Now: now,
		Suspend: func(_ context.Context, envID string, _ bool) (store.Suspension, error) {
			return attempt(envID, "suspended"), *suspendErr
		},
		Resume: func(_ context.Context, envID string, rollback, _ bool) (store.Suspension, error) {
			state := "resumed"
			if rollback {
				state = "resuming"
			}
			return attempt(envID, state), *suspendErr
		},
	}).Register(mux)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

const initDecl = `{"env":{"MODE":"test","A":"1"},"files":[{"path":"/workspace/hello.txt","content":"aGVsbG8="}]}`

func TestRegisteredEnvironmentDeclaresInitializationAndShowsIt(t *testing.T) {
	var none error
	e := envEnv(t, &none)
	_, envID := e.localSession(initDecl)
	stored, err := e.store.GetEnvironment(context.Background(), envID)
	require.NoError(t, err)
	// The variables' values are stored sealed, never in clear.
	var kept struct {
		Env       map[string]string `json:"env"`
		SealedEnv map[string][]byte `json:"sealed_env"`
		Files     []any             `json:"files"`
	}
	require.NoError(t, json.Unmarshal(stored.Initialization, &kept))
	assert.Nil(t, kept.Env)
	assert.Len(t, kept.SealedEnv, 2)
	assert.NotContains(t, string(kept.SealedEnv["MODE"]), "test")
	assert.Len(t, kept.Files, 1)

	resp, v := e.do(e.key, "GET", "/api/v1/environments/"+envID, "")
	require.Equal(t, 200, resp.StatusCode, "%v", v)
	assert.Equal(t, map[string]any{"env_keys": []any{"A", "MODE"}, "files": []any{map[string]any{
		"path": "/workspace/hello.txt", "size_bytes": float64(5), "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
	}}}, v["initialization"], "no file contents")
	assert.Nil(t, v["initialization_status"])
	assert.Equal(t, "dev", v["device_id"])

	require.NoError(t, e.store.RecordInitialization(context.Background(), store.Initialization{EnvironmentID: envID, DeviceID: "dev", OwnerEpoch: 2,
		Outcome: "failed", Step: "/workspace/hello.txt", ErrorCode: "runtime_preparation_failed", ExitCode: 3, At: time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)}))
	_, v = e.do(e.key, "GET", "/api/v1/environments/"+envID, "")
	st := v["initialization_status"].(map[string]any)
	assert.Equal(t, "failed", st["outcome"])
	assert.Equal(t, "runtime_preparation_failed", st["error_code"])
	assert.Equal(t, float64(3), st["exit_code"])

	resp, _ = e.do(e.other, "GET", "/api/v1/environments/"+envID, "")
	assert.Equal(t, 404, resp.StatusCode, "another project cannot see it")
}

func TestInitializationErrorsNameTheField(t *testing.T) {
	var none error
	e := envEnv(t, &none)
	require.NoError(t, e.store.AssignDevice(context.Background(), "dev", "p1", time.Now()))
	for body, field := range map[string]string{
		`{"device_id":"dev","initialization":{"files":[{"path":"/etc/passwd","content":""}]}}`: "initialization.files[0].path",
		`{"device_id":"dev","initialization":{"env":{"A=B":"1"}}}`:                             "initialization.env",
		`{"device_id":"dev","initialization":{"files":[],"extra":1}}`:                          "initialization.extra",
	} {
		resp, out := e.do(e.key, "POST", "/api/v1/environments", body)
		assert.Equal(t, 400, resp.StatusCode, body)
		assert.Equal(t, field, out["field"], body)
	}
	resp, out := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none","initialization":{"env":{"A":"1"}}}}`)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "environment.initialization", out["field"])
}

func TestSuspendAndResumeRoutes(t *testing.T) {
	var answer error
	e := envEnv(t, &answer)
	_, envID := e.localSession(initDecl)
	resp, out := e.do(e.key, "POST", "/api/v1/environments/"+envID+"/suspend", `{"wait":false}`)
	require.Equal(t, 200, resp.StatusCode, "%v", out)
	assert.Equal(t, "suspended", out["state"])
	assert.Equal(t, "dev", out["device_id"], "the Environment's device")
	assert.Equal(t, "s-1", out["suspend_id"])
	// A caller names no device: the attempt goes to the Environment's own.
	resp, out = e.do(e.key, "POST", "/api/v1/environments/"+envID+"/suspend", `{"device_id":"dev-9"}`)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "invalid_request", out["error"])
	assert.Equal(t, "device_id", out["field"])
	resp, out = e.do(e.key, "POST", "/api/v1/environments/"+envID+"/resume", "")
	require.Equal(t, 200, resp.StatusCode, "%v", out)
	assert.Equal(t, "resumed", out["state"])
	_, out = e.do(e.key, "POST", "/api/v1/environments/"+envID+"/resume", `{"rollback":true}`)
	assert.Equal(t, "resuming", out["state"])
	resp, out = e.do(e.key, "POST", "/api/v1/environments/"+envID+"/resume", `{"rollback":"yes"}`)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "rollback", out["field"])

	for err, want := range map[error]struct {
		status int
		code   string
	}{
		api.ErrSuspensionOpen:                   {409, "suspension_open"},
		api.ErrNotSuspended:                     {409, "not_suspended"},
		api.ErrNoWorkspace:                      {409, "no_workspace"},
		api.ErrDeviceOffline:                    {503, "device_offline"},
		&api.SuspensionError{Detail: "refused"}: {409, "suspension_refused"},
	} {
		answer = err
		resp, out = e.do(e.key, "POST", "/api/v1/environments/"+envID+"/suspend", "")
		assert.Equal(t, want.status, resp.StatusCode, "%v", err)
		assert.Equal(t, want.code, out["error"], "%v", err)
	}
	answer = nil
	resp, _ = e.do(e.other, "POST", "/api/v1/environments/"+envID+"/suspend", "")
	assert.Equal(t, 404, resp.StatusCode, "another project cannot suspend it")
}

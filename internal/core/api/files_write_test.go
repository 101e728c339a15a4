package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/api"
)

type writeEnv struct {
	*env
	admin  credential.Secret
	writes []string // the bodies the Runtime side was asked to write
	rec    api.WriteRecord
	err    error
}

func newWriteEnv(t *testing.T) *writeEnv {
	st := memory.New()
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	is := credential.Issuer{Store: st, Now: now}
	we := &writeEnv{env: &env{t: t, store: st, journal: &api.Journal{Store: st}}}
	var err error
	_, we.key, err = is.Issue(context.Background(), store.KindProject, "", "p1")
	require.NoError(t, err)
	_, we.other, err = is.Issue(context.Background(), store.KindProject, "", "p2")
	require.NoError(t, err)
	_, we.admin, err = is.Issue(context.Background(), store.KindAdmin, "", "")
	require.NoError(t, err)
	mux := http.NewServeMux()
	api.New(api.Config{Store: st, Credentials: is, Journal: we.journal, Now: now,
		Write: func(_ context.Context, sid, path string, body []byte) (api.WriteRecord, error) {
			we.writes = append(we.writes, string(body))
			r := we.rec
			r.SessionID, r.Path = sid, path
			return r, we.err
		},
		Resolve: func(ctx context.Context, id, resolution, note string) (store.WorkspaceWrite, error) {
			if err := st.ResolveWorkspaceWrite(ctx, id, resolution, note, now()); err != nil {
				return store.WorkspaceWrite{}, err
			}
			return st.GetWorkspaceWrite(ctx, id)
		}}).Register(mux)
	we.srv = httptest.NewServer(mux)
	t.Cleanup(we.srv.Close)
	return we
}

func TestPutFileBoundsAndSettlements(t *testing.T) {
	e := newWriteEnv(t)
	sid, _ := e.localSession("")
	url := "/api/v1/sessions/" + sid + "/files/content?path=notes/a.txt"

	resp, body := e.do(e.key, "PUT", url, strings.Repeat("x", api.MaxWriteBody+1))
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, "body", body["field"])
	assert.Empty(t, e.writes, "the inline bound is checked before any Runtime work")

	resp, body = e.do(e.key, "PUT", "/api/v1/sessions/"+sid+"/files/content?path=../x", "x")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "path", body["field"])
	resp, body = e.do(e.key, "PUT", "/api/v1/sessions/"+sid+"/files/content?path=a&mode=x", "x")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "mode", body["field"])
	resp, _ = e.do(e.other, "PUT", url, "x")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "another project's Session")
	assert.Empty(t, e.writes)

	for outcome, status := range map[string]int{"completed": 200, "rejected": 409, "aborted": 503, "unknown": 202} {
		e.rec = api.WriteRecord{MutationID: "m", Outcome: outcome}
		resp, body = e.do(e.key, "PUT", url, strings.Repeat("y", api.MaxWriteBody))
		assert.Equal(t, status, resp.StatusCode, outcome)
		assert.Equal(t, outcome, body["outcome"])
	}
	e.err = &api.WriteError{Code: api.WriteUnsettled, MutationID: "m0"}
	resp, body = e.do(e.key, "PUT", url, "z")
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Equal(t, "write_unsettled", body["error"])
	assert.Equal(t, "m0", body["mutation_id"])
}

func TestResolveAnUnknownWrite(t *testing.T) {
	e := newWriteEnv(t)
	sid, _ := e.localSession("")
	ctx := context.Background()
	require.NoError(t, e.store.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m1", SessionID: sid, Path: "a",
		WriteDetail: store.WriteDetail{State: store.WriteStateUnknown, ErrorCode: "write_unconfirmed"}}))

	resp, body := e.do(e.key, "GET", "/api/v1/writes/m1", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "unknown", body["outcome"], "the uncertainty is visible")
	resp, theirs := e.do(e.other, "GET", "/api/v1/writes/m1", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, missing := e.do(e.other, "GET", "/api/v1/writes/m-missing", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, missing, theirs, "another project's write answers exactly as a missing one")

	resp, _ = e.do(e.key, "POST", "/api/v1/writes/m1/resolve", `{"resolution":"applied"}`)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "an operator's act")
	resp, body = e.do(e.admin, "POST", "/api/v1/writes/m1/resolve", `{"resolution":"maybe"}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "resolution", body["field"])
	resp, body = e.do(e.admin, "POST", "/api/v1/writes/m1/resolve", `{"resolution":"applied","note":"file is there"}`)
	require.Equal(t, 200, resp.StatusCode, "%v", body)
	assert.Equal(t, "resolved", body["outcome"])
	assert.Equal(t, "applied", body["resolution"])
	assert.Equal(t, "file is there", body["note"])
	resp, body = e.do(e.admin, "POST", "/api/v1/writes/m1/resolve", `{"resolution":"applied"}`)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Equal(t, "not_unknown", body["error"])
}

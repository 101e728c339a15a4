package api_test

import (
	"context"
	"encoding/base64"
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
	"github.com/agentwire/agentwire/wire"
)

// filesEnv is env with a Files function that records its queries and
// answers what the test sets.
type filesEnv struct {
	*env
	queries []api.FilesQuery
	res     api.FilesResult
	err     error
}

func newFilesEnv(t *testing.T) *filesEnv {
	st := memory.New()
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	is := credential.Issuer{Store: st, Now: now}
	fe := &filesEnv{env: &env{t: t, store: st, journal: &api.Journal{Store: st}}}
	var err error
	_, fe.key, err = is.Issue(context.Background(), store.KindProject, "", "p1")
	require.NoError(t, err)
	_, fe.other, err = is.Issue(context.Background(), store.KindProject, "", "p2")
	require.NoError(t, err)
	mux := http.NewServeMux()
	api.New(api.Config{Store: st, Credentials: is, Journal: fe.journal, Now: now,
		Files: func(_ context.Context, _ string, q api.FilesQuery) (api.FilesResult, error) {
			fe.queries = append(fe.queries, q)
			return fe.res, fe.err
		}}).Register(mux)
	fe.srv = httptest.NewServer(mux)
	t.Cleanup(fe.srv.Close)
	return fe
}

func (e *filesEnv) session() string {
	sid, _ := e.localSession("")
	return sid
}

func TestFilesListingAndContent(t *testing.T) {
	e := newFilesEnv(t)
	sid := e.session()
	n := int64(5)
	e.res = api.FilesResult{Entries: []wire.WorkspaceDirectoryEntry{{Name: "a.txt", Kind: wire.EntryFile, SizeBytes: &n}, {Name: "d", Kind: wire.EntryDirectory}}, Truncated: true}
	resp, out := e.do(e.key, "GET", "/api/v1/sessions/"+sid+"/files", "")
	require.Equal(t, 200, resp.StatusCode, "%v", out)
	assert.Equal(t, map[string]any{"session_id": sid, "path": "", "truncated": true, "entries": []any{
		map[string]any{"name": "a.txt", "kind": "file", "size_bytes": float64(5)},
		map[string]any{"name": "d", "kind": "directory", "size_bytes": nil},
	}}, out)
	assert.Equal(t, api.FilesQuery{Directory: true, MaxEntries: 1024}, e.queries[0], "the whole wire bound by default, never a byte limit")

	resp, _ = e.do(e.key, "GET", "/api/v1/sessions/"+sid+"/files?path=src&max_entries=2", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, api.FilesQuery{Path: "src", Directory: true, MaxEntries: 2}, e.queries[1])

	e.res = api.FilesResult{Data: []byte("hel"), Truncated: true}
	resp, out = e.do(e.key, "GET", "/api/v1/sessions/"+sid+"/files/content?path=a.txt&max_bytes=3", "")
	require.Equal(t, 200, resp.StatusCode, "%v", out)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("hel")), out["data"])
	assert.Equal(t, true, out["truncated"])
	assert.EqualValues(t, 3, out["size_bytes"])
	assert.Equal(t, api.FilesQuery{Path: "a.txt", MaxBytes: 3}, e.queries[2])

	resp, _ = e.do(e.other, "GET", "/api/v1/sessions/"+sid+"/files", "")
	assert.Equal(t, 404, resp.StatusCode, "another project sees nothing")
	assert.Len(t, e.queries, 3, "and nothing is read for it")
}

func TestFilesRefusesBadQueriesBeforeAnyRead(t *testing.T) {
	e := newFilesEnv(t)
	sid := e.session()
	for _, c := range []struct{ query, field string }{
		{"/files?max_bytes=10", "max_bytes"},
		{"/files/content?path=a&max_entries=10", "max_entries"},
		{"/files?max_entries=1025", "max_entries"},
		{"/files?max_entries=0", "max_entries"},
		{"/files/content?path=a&max_bytes=1048577", "max_bytes"},
		{"/files/content", "path"},
		{"/files?path=../x", "path"},
		{"/files?path=/etc", "path"},
		{"/files?path=a&path=b", "path"},
		{"/files?recursive=1", "recursive"},
	} {
		resp, out := e.do(e.key, "GET", "/api/v1/sessions/"+sid+c.query, "")
		assert.Equal(t, 400, resp.StatusCode, c.query)
		assert.Equal(t, c.field, out["field"], c.query)
	}
	assert.Empty(t, e.queries)
}

func TestFilesErrorsCarryNoData(t *testing.T) {
	e := newFilesEnv(t)
	sid := e.session()
	e.res = api.FilesResult{Data: []byte("must not leak")}
	for _, c := range []struct {
		err    *api.FilesError
		status int
		code   string
		reason string
	}{
		{&api.FilesError{Code: api.FilesNotFound}, 404, "not_found", ""},
		{&api.FilesError{Code: api.FilesNotDirectory}, 409, "not_directory", ""},
		{&api.FilesError{Code: api.FilesPermissionDenied}, 403, "permission_denied", ""},
		{&api.FilesError{Code: api.FilesNoWorkspace}, 409, "no_workspace", ""},
		{&api.FilesError{Code: api.FilesSessionBusy}, 409, "session_busy", ""},
		{&api.FilesError{Code: api.FilesUnavailable, Reason: "cleanup_unconfirmed"}, 503, "unavailable", "cleanup_unconfirmed"},
		{&api.FilesError{Code: "read_capacity"}, 503, "unavailable", "read_capacity"},
	} {
		e.err = c.err
		resp, out := e.do(e.key, "GET", "/api/v1/sessions/"+sid+"/files/content?path=a", "")
		assert.Equal(t, c.status, resp.StatusCode, c.code)
		assert.Equal(t, c.code, out["error"])
		if c.reason != "" {
			assert.Equal(t, c.reason, out["reason"])
		}
		assert.NotContains(t, out, "data")
	}
}

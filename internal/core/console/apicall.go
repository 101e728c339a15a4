package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentwire/agentwire/core/credential"
)

// result is the API's answer to an in-process call.
type result struct {
	status int
	header http.Header
	body   []byte
}

// detail is the API error's words, with the field at fault first.
func (res result) detail() string {
	var e struct {
		Error, Detail, Field string
	}
	if json.Unmarshal(res.body, &e) != nil || e.Error == "" {
		return fmt.Sprintf("the API answered %d", res.status)
	}
	msg := e.Detail
	if msg == "" {
		msg = e.Error
	}
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	return msg
}

func (res result) ok() bool { return res.status >= 200 && res.status < 300 }

// decode reads a successful answer into v.
func (res result) decode(v any) error {
	if !res.ok() {
		return fmt.Errorf("%s", res.detail())
	}
	if err := json.Unmarshal(res.body, v); err != nil {
		return fmt.Errorf("console: read the API's answer: %w", err)
	}
	return nil
}

// recorder is the ResponseWriter of an in-process call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// call runs one API request in this process with the session's key, as
// the same client address as the browser's request (the API's per-client
// bounds apply to it).
func (c *Console) call(ctx context.Context, orig *http.Request, key credential.Secret, method, path string, body io.Reader, contentType string) result {
	req, err := http.NewRequestWithContext(ctx, method, path, body)
	if err != nil {
		return result{status: http.StatusBadRequest, body: []byte(`{"error":"invalid_request","detail":"bad path"}`)}
	}
	req.RemoteAddr = orig.RemoteAddr
	req.Header.Set("Authorization", "Bearer "+string(key))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := &recorder{header: http.Header{}}
	c.cfg.API.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return result{status: rec.status, header: rec.header, body: rec.body.Bytes()}
}

// get calls GET path with the request's session and decodes the answer.
func (c *Console) get(r *http.Request, path string, v any) error {
	return c.call(r.Context(), r, current(r).key, http.MethodGet, path, nil, "").decode(v)
}

// post calls method path with a JSON body.
func (c *Console) post(r *http.Request, method, path string, body any) result {
	b, _ := json.Marshal(body)
	return c.call(r.Context(), r, current(r).key, method, path, bytes.NewReader(b), "application/json")
}

// forward passes /console/api/<rest> to the API's /api/v1/<rest> with the
// session's key in place of the cookie: the event stream, answers,
// inputs, cancellation, file reads and exports run in the API's own
// handlers, streaming straight to the browser. The Runtimes' routes are
// not reachable this way.
func (c *Console) forward(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/console/api/")
	if strings.HasPrefix(rest, "agent-daemon/") || strings.Contains(rest, "..") {
		consoleError(w, http.StatusNotFound, "not_found", "", "no such route")
		return
	}
	out := r.Clone(r.Context())
	out.URL.Path = "/api/v1/" + rest
	out.URL.RawPath = ""
	out.RequestURI = ""
	out.Header.Del("Cookie")
	out.Header.Del(csrfHeader)
	out.Header.Set("Authorization", "Bearer "+string(current(r).key))
	c.cfg.API.ServeHTTP(w, out)
}

// consoleError answers a failed console request in the API's error shape.
func consoleError(w http.ResponseWriter, status int, code, field, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "field": field, "detail": detail})
}

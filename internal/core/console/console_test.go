package console_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/console"
	"github.com/agentwire/agentwire/internal/core/server"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// clock is the sessions' clock, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a real Core (server.New over the memory store) with the console
// mounted beside it, on loopback.
type env struct {
	t     *testing.T
	st    *memory.Store
	srv   *httptest.Server
	clock *clock
	keys  map[string]string
	ids   map[string]string // credential IDs by the same names
}

func newEnv(t *testing.T, tls bool) *env {
	t.Helper()
	st := memory.New()
	core := server.New(server.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	clk := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	con, err := console.New(console.Config{API: core, Auth: core.Authenticator(), Store: st, Now: clk.Now, SessionTTL: time.Hour})
	require.NoError(t, err)
	mux := http.NewServeMux()
	con.Register(mux)
	mux.Handle("/", core)
	hs := httptest.NewUnstartedServer(mux)
	if tls {
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(func() {
		core.BeginShutdown()
		hs.Close()
		core.Close()
	})
	e := &env{t: t, st: st, srv: hs, clock: clk, keys: map[string]string{}, ids: map[string]string{}}
	is := credential.Issuer{Store: st, Devices: st, Now: time.Now}
	for name, c := range map[string]struct {
		kind    store.CredentialKind
		project string
	}{"p": {store.KindProject, "p"}, "q": {store.KindProject, "q"}, "device": {store.KindDevice, "p"}} {
		device := ""
		if c.kind == store.KindDevice {
			device = "dev-1"
		}
		cr, s, err := is.Issue(context.Background(), c.kind, device, c.project)
		require.NoError(t, err)
		e.keys[name] = s.Reveal()
		e.ids[name] = cr.ID
	}
	return e
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	e *env
	c *http.Client
}

func (e *env) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(e.t, err)
	c := e.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	e.t.Cleanup(c.CloseIdleConnections)
	return &browser{e: e, c: c}
}

func (b *browser) do(method, path string, form url.Values, header http.Header) (*http.Response, string) {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	require.NoError(b.e.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.c.Do(req)
	require.NoError(b.e.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.e.t, err)
	return resp, string(out)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf reads the CSRF token a page's forms carry.
func (b *browser) csrfOf(path string) string {
	b.e.t.Helper()
	resp, page := b.do("GET", path, nil, nil)
	require.Equal(b.e.t, http.StatusOK, resp.StatusCode, page)
	m := csrfField.FindStringSubmatch(page)
	require.NotNil(b.e.t, m, "no csrf field on %s", path)
	return m[1]
}

func (b *browser) login(key string) *http.Response {
	b.e.t.Helper()
	token := b.csrfOf("/console/login")
	resp, _ := b.do("POST", "/console/login", url.Values{"csrf": {token}, "key": {key}}, nil)
	return resp
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestLoginExchangesTheKeyForAnHTTPOnlyCookie(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	resp := b.login(e.keys["p"])
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/console/", resp.Header.Get("Location"))
	ck := cookieNamed(resp, "agentwire_console")
	require.NotNil(t, ck)
	assert.True(t, ck.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	assert.Equal(t, "/console/", ck.Path)
	assert.False(t, ck.Secure, "plain HTTP on loopback")
	assert.NotContains(t, ck.Value, e.keys["p"])
	for _, v := range resp.Header.Values("Set-Cookie") {
		assert.NotContains(t, v, e.keys["p"])
	}

	r, page := b.do("GET", "/console/", nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Contains(t, page, "<h1>Sessions</h1>")
	assert.Contains(t, page, "project <strong>p</strong>")
	assert.NotContains(t, page, e.keys["p"], "the key never reaches a page")
	assert.Contains(t, r.Header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.Equal(t, "no-store", r.Header.Get("Cache-Control"))
}

func TestSecureCookieOverTLS(t *testing.T) {
	e := newEnv(t, true)
	resp := e.browser().login(e.keys["p"])
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	ck := cookieNamed(resp, "agentwire_console")
	require.NotNil(t, ck)
	assert.True(t, ck.Secure)
	assert.True(t, ck.HttpOnly)
}

func TestLoginRefusals(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()

	token := b.csrfOf("/console/login")
	resp, page := b.do("POST", "/console/login", url.Values{"csrf": {token}, "key": {"awp_not-a-key"}}, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, page, "key: the credential is unknown or revoked")
	assert.Nil(t, cookieNamed(resp, "agentwire_console"))

	token = b.csrfOf("/console/login")
	resp, page = b.do("POST", "/console/login", url.Values{"csrf": {token}, "key": {"  "}}, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, page, "key: enter a project API key")

	// A device credential never opens the API, so not the console either.
	token = b.csrfOf("/console/login")
	resp, page = b.do("POST", "/console/login", url.Values{"csrf": {token}, "key": {e.keys["device"]}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, page, "key: only a project API key")

	// A login form posted from elsewhere carries no matching token.
	other := e.browser()
	resp, _ = other.do("POST", "/console/login", url.Values{"csrf": {"forged"}, "key": {e.keys["p"]}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Nil(t, cookieNamed(resp, "agentwire_console"))
}

func TestSignedOutRequestsAreTurnedAway(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	for _, p := range []string{"/console/", "/console/devices", "/console/environments", "/console/turns/turn_x"} {
		resp, _ := b.do("GET", p, nil, nil)
		assert.Equal(t, http.StatusSeeOther, resp.StatusCode, p)
		assert.Equal(t, "/console/login", resp.Header.Get("Location"), p)
	}
	resp, body := b.do("GET", "/console/api/devices", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, "not_signed_in")
	resp, _ = b.do("GET", "/console/turns/turn_x/machines", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestCSRFIsCheckedOnEveryStateChange(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.login(e.keys["p"]).StatusCode)
	token := b.csrfOf("/console/")

	for _, tc := range []struct {
		name string
		form url.Values
		hdr  http.Header
		path string
	}{
		{"form without token", url.Values{"agent_kind": {"script"}}, nil, "/console/sessions"},
		{"form with another token", url.Values{"agent_kind": {"script"}, "csrf": {"x" + token}}, nil, "/console/sessions"},
		{"logout without token", url.Values{}, nil, "/console/logout"},
		{"api without header", url.Values{}, nil, "/console/api/turns/turn_x/cancel"},
		{"api with a wrong header", url.Values{}, http.Header{"X-Csrf-Token": {"nope"}}, "/console/api/turns/turn_x/cancel"},
		{"api with the token as a form field", url.Values{"csrf": {token}}, nil, "/console/api/turns/turn_x/cancel"},
	} {
		resp, body := b.do("POST", tc.path, tc.form, tc.hdr)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, tc.name)
		assert.Contains(t, body, `"field":"csrf"`, tc.name)
	}

	// With the token the request reaches the API, whose answer it is.
	resp, body := b.do("POST", "/console/api/turns/turn_x/cancel", url.Values{}, http.Header{"X-Csrf-Token": {token}})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	assert.Contains(t, body, "turn not found")

	// The Runtimes' routes are not reachable through the console.
	resp, _ = b.do("POST", "/console/api/agent-daemon/bootstrap", url.Values{}, http.Header{"X-Csrf-Token": {token}})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestSessionsExpireAndLogOut(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.login(e.keys["p"]).StatusCode)
	resp, _ := b.do("GET", "/console/", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	e.clock.advance(time.Hour)
	resp, _ = b.do("GET", "/console/", nil, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "an expired session no longer opens a page")

	require.Equal(t, http.StatusSeeOther, b.login(e.keys["p"]).StatusCode)
	token := b.csrfOf("/console/")
	resp, _ = b.do("POST", "/console/logout", url.Values{"csrf": {token}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/console/login", resp.Header.Get("Location"))
	resp, _ = b.do("GET", "/console/", nil, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "a logged-out session no longer opens a page")
}

// TestPagesRender walks the pages through their forms: a Session and a
// Turn created through the API, the Turn page, the devices with every
// capability of the generated list, the Environments.
func TestPagesRender(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	yes := true
	hb, err := json.Marshal(wire.Heartbeat{TS: 1, SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "script", Available: &yes, Capabilities: wiretest.Capabilities()}}})
	require.NoError(t, err)
	epoch, err := e.st.AcquireOwner(ctx, "dev-1", time.Now())
	require.NoError(t, err)
	require.NoError(t, e.st.RecordDeclaration(ctx, "dev-1", epoch, hb, time.Now()))

	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.login(e.keys["p"]).StatusCode)
	token := b.csrfOf("/console/")

	resp, _ := b.do("POST", "/console/sessions", url.Values{"csrf": {token}, "agent_kind": {""}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Location"), "error=agent_kind", "the API's field reaches the page")

	resp, _ = b.do("POST", "/console/sessions", url.Values{"csrf": {token}, "agent_kind": {"script"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	sessionPage := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(sessionPage, "/console/sessions/ses_"), sessionPage)
	sessionID := strings.TrimPrefix(sessionPage, "/console/sessions/")

	r, page := b.do("GET", sessionPage, nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Contains(t, page, "<h1>Session "+sessionID+"</h1>")
	assert.Contains(t, page, "No Turns yet.")

	resp, _ = b.do("POST", sessionPage+"/turns", url.Values{"csrf": {token}, "prompt": {"   "}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Location"), "error=prompt", "an empty prompt is refused naming the field")

	resp, _ = b.do("POST", sessionPage+"/turns", url.Values{"csrf": {token}, "prompt": {"hello"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	turnPage := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(turnPage, "/console/turns/turn_"), turnPage)
	turnID := strings.TrimPrefix(turnPage, "/console/turns/")

	r, page = b.do("GET", turnPage, nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Contains(t, page, `data-turn="`+turnID+`"`)
	assert.Contains(t, page, `id="turn-state"`)
	assert.Contains(t, page, `id="input-form"`)
	assert.Contains(t, page, `id="cancel-form"`)

	r, page = b.do("GET", "/console/", nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Contains(t, page, turnID)

	r, page = b.do("GET", "/console/devices", nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Contains(t, page, "dev-1")
	assert.Contains(t, page, "Owner epoch</dt><dd>1</dd>")
	for _, f := range wire.CapabilityFields() {
		assert.Contains(t, page, ">"+f.Name+"<", "capability %s", f.Name)
	}

	r, page = b.do("GET", "/console/environments", nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Contains(t, page, sessionID, "the Session is listed under its Environment")

	r, svg := b.do("GET", "/console/diagrams/run", nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.Equal(t, "image/svg+xml", r.Header.Get("Content-Type"))
	assert.Contains(t, svg, `id="state&#45;completed"`)
	r, _ = b.do("GET", "/console/diagrams/nope", nil, nil)
	assert.Equal(t, http.StatusNotFound, r.StatusCode)

	// Another project's key sees neither the Session nor the Turn.
	other := e.browser()
	require.Equal(t, http.StatusSeeOther, other.login(e.keys["q"]).StatusCode)
	r, _ = other.do("GET", turnPage, nil, nil)
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
	r, _ = other.do("GET", turnPage+"/machines", nil, nil)
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
	r, page = other.do("GET", "/console/", nil, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	assert.NotContains(t, page, sessionID)
}

// TestUploadBound: a file over the 5 MiB bound is refused by name before
// anything reaches the API; a form without its token is refused first.
func TestUploadBound(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.login(e.keys["p"]).StatusCode)
	token := b.csrfOf("/console/")

	post := func(token string, size int) *http.Response {
		var body strings.Builder
		w := multipart.NewWriter(&body)
		require.NoError(t, w.WriteField("csrf", token))
		require.NoError(t, w.WriteField("path", "big.bin"))
		f, err := w.CreateFormFile("file", "big.bin")
		require.NoError(t, err)
		_, err = f.Write(make([]byte, size))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		req, err := http.NewRequest("POST", e.srv.URL+"/console/sessions/ses_x/files", strings.NewReader(body.String()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", w.FormDataContentType())
		resp, err := b.c.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	resp := post("wrong", 10)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp = post(token, 5<<20+1)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "/console/sessions/ses_x", loc.Path)
	assert.Contains(t, loc.Query().Get("error"), "file: 5242881 bytes is over the 5 MiB bound")

	// Within the bound the API answers: this Session does not exist.
	resp = post(token, 10)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err = url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Contains(t, loc.Query().Get("error"), "not found")
}

// TestRevokedKeyEndsTheSession: a key revoked after the login opens
// nothing more, pages and API alike.
func TestRevokedKeyEndsTheSession(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.login(e.keys["p"]).StatusCode)
	token := b.csrfOf("/console/")
	require.NoError(t, credential.Issuer{Store: e.st, Devices: e.st, Now: time.Now}.Revoke(context.Background(), e.ids["p"]))

	resp, _ := b.do("GET", "/console/devices", nil, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/console/login", resp.Header.Get("Location"))
	resp, _ = b.do("POST", "/console/api/turns/turn_x/cancel", url.Values{}, http.Header{"X-Csrf-Token": {token}})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

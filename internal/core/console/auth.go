package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
)

// Cookie names. Both are HTTP-only, SameSite=Strict and scoped to Prefix:
// no script reads them and no other site's page sends them.
const (
	sessionCookie = "agentwire_console"
	// loginCookie carries the login form's CSRF token before there is a
	// session (a double-submitted value), so that another site cannot log
	// a browser in under its own key.
	loginCookie = "agentwire_console_login"
	csrfHeader  = "X-CSRF-Token"
)

// maxSessions bounds the logins kept at once; past it the oldest is
// dropped, so a flood of logins cannot grow Core's memory without end.
const maxSessions = 10000

// session is one login: the key stays here, on the server.
type session struct {
	key     credential.Secret
	cred    store.Credential // whose key: checked for revocation on every request
	project string           // "" for the administration key
	admin   bool
	csrf    string
	expires time.Time
}

type ctxSession struct{}

// sessions holds the logins by the hash of their cookie, so the table
// itself holds nothing a browser could present.
type sessions struct {
	mu  sync.Mutex
	now func() time.Time
	ttl time.Duration
	m   map[[32]byte]*session
}

func newSessions(now func() time.Time, ttl time.Duration) *sessions {
	return &sessions{now: now, ttl: ttl, m: map[[32]byte]*session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create stores a login and returns its cookie value.
func (s *sessions) create(key credential.Secret, c store.Credential) (string, *session) {
	token := randomToken()
	ses := &session{key: key, cred: c, project: c.Project, admin: c.Kind == store.KindAdmin, csrf: randomToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for h, x := range s.m {
		if !now.Before(x.expires) {
			delete(s.m, h)
		}
	}
	if len(s.m) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for h, x := range s.m {
			if at.IsZero() || x.expires.Before(at) {
				oldest, at = h, x.expires
			}
		}
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(token))] = ses
	return token, ses
}

// get returns the unexpired login of a cookie value.
func (s *sessions) get(token string) (*session, bool) {
	h := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.m[h]
	if ok && !s.now().Before(x.expires) {
		delete(s.m, h)
		return nil, false
	}
	return x, ok
}

func (s *sessions) drop(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(token)))
}

// sees reports whether the login may see a record of project (the API's
// rule: the administration key sees every project).
func (s *session) sees(project string) bool { return s.admin || s.project == project }

func (c *Console) secure(r *http.Request) bool { return r.TLS != nil || c.cfg.Secure }

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	ck := &http.Cookie{Name: name, Value: value, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r)}
	if maxAge < 0 {
		ck.MaxAge = -1
	} else {
		ck.MaxAge = int(maxAge / time.Second)
	}
	http.SetCookie(w, ck)
}

// current is the login of the request (set by signedIn).
func current(r *http.Request) *session {
	s, _ := r.Context().Value(ctxSession{}).(*session)
	return s
}

// signedIn admits a request with a valid session cookie whose key is
// still valid; a page request without one goes to the login form,
// anything else is answered 401. A revoked key ends its sessions at their
// next request, as it ends the API's event streams.
func (c *Console) signedIn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ck, err := r.Cookie(sessionCookie); err == nil {
			if s, ok := c.sessions.get(ck.Value); ok {
				err := c.cfg.Auth.Valid(r.Context(), s.cred)
				if err == nil {
					next(w, r.WithContext(context.WithValue(r.Context(), ctxSession{}, s)))
					return
				}
				if !errors.Is(err, credential.ErrBad) {
					c.cfg.Logger.Error("console: check the session's key", "err", err)
					consoleError(w, http.StatusInternalServerError, "internal", "", "the key could not be checked")
					return
				}
				c.sessions.drop(ck.Value)
			}
		}
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/console/api/") && !strings.HasSuffix(r.URL.Path, "/machines") {
			http.Redirect(w, r, "/console/login", http.StatusSeeOther)
			return
		}
		consoleError(w, http.StatusUnauthorized, "not_signed_in", "", "sign in to the console first")
	}
}

// checked refuses a state-changing request that does not carry the
// session's CSRF token: in the X-CSRF-Token header (the script's
// requests) or the csrf field of a form. SameSite=Strict already keeps
// the cookie off other sites' requests; the token is the second lock.
func (c *Console) checked(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next(w, r)
			return
		}
		token := r.Header.Get(csrfHeader)
		if token == "" && !strings.HasPrefix(r.URL.Path, "/console/api/") {
			token = formValue(w, r, "csrf")
		}
		if token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(current(r).csrf)) != 1 {
			consoleError(w, http.StatusForbidden, "csrf_refused", "csrf", "the request does not carry this session's CSRF token; reload the page")
			return
		}
		next(w, r)
	}
}

// maxForm bounds a form that is not an upload.
const maxForm = 64 << 10

// formValue reads a field of a urlencoded or multipart form (an upload's
// body is bounded by uploadFile before it gets here).
func formValue(w http.ResponseWriter, r *http.Request, name string) string {
	if r.Form == nil {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			r.Body = http.MaxBytesReader(w, r.Body, maxUpload+maxForm)
			if err := r.ParseMultipartForm(1 << 20); err != nil {
				return ""
			}
		} else {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				return ""
			}
		}
	}
	return r.PostFormValue(name)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	token := ""
	if ck, err := r.Cookie(loginCookie); err == nil && ck.Value != "" {
		token = ck.Value
	} else {
		token = randomToken()
		c.setCookie(w, r, loginCookie, token, 30*time.Minute)
	}
	c.render(w, r, http.StatusOK, "login", map[string]any{"CSRF": token, "Error": r.URL.Query().Get("error")})
}

// login exchanges a project API key (or the administration key) for a
// session. The key is checked by the API itself, so a wrong key costs the
// client address what it costs at the API (its failed-authentication
// budget), then Auth says whose it is.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(loginCookie)
	form := formValue(w, r, "csrf")
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(form), []byte(ck.Value)) != 1 {
		c.loginFailed(w, r, http.StatusForbidden, "The form expired; sign in again.")
		return
	}
	key := credential.Secret(strings.TrimSpace(r.PostFormValue("key")))
	if key == "" {
		c.loginFailed(w, r, http.StatusBadRequest, "key: enter a project API key.")
		return
	}
	res := c.call(r.Context(), r, key, http.MethodGet, "/api/v1/engine-profiles", nil, "")
	if res.status != http.StatusOK {
		msg := "key: " + res.detail()
		if res.status == http.StatusTooManyRequests {
			msg = "Too many attempts; wait and try again."
		}
		c.loginFailed(w, r, res.status, msg)
		return
	}
	cred, err := c.cfg.Auth.Authenticate(r.Context(), key, store.KindProject)
	if errors.Is(err, credential.ErrWrongKind) {
		cred, err = c.cfg.Auth.Authenticate(r.Context(), key, store.KindAdmin)
	}
	if err != nil {
		c.loginFailed(w, r, http.StatusUnauthorized, "key: the credential is unknown or revoked.")
		return
	}
	token, _ := c.sessions.create(key, cred)
	c.setCookie(w, r, sessionCookie, token, c.cfg.SessionTTL)
	c.setCookie(w, r, loginCookie, "", -1)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (c *Console) loginFailed(w http.ResponseWriter, r *http.Request, status int, msg string) {
	token := randomToken()
	c.setCookie(w, r, loginCookie, token, 30*time.Minute)
	c.render(w, r, status, "login", map[string]any{"CSRF": token, "Error": msg})
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		c.sessions.drop(ck.Value)
	}
	c.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

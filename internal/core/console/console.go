// Package console is Core's web console, served at /console/ beside the
// public API: the Sessions of a project with their Turns, a Turn's events
// live with its questions answerable in place, active input and
// cancellation, the devices and their declarations, the Environments with
// their Sessions' files, and each Turn's machines lit on their generated
// diagrams.
//
// The console is a client of the public API inside the process: every
// read and every action goes through the same handlers a program calls
// (api.API, with the project key the login exchanged), so its answers,
// its errors, its quotas and its revocation are the API's. Only the
// session cookie is the console's own: the key stays on the server, in
// the session, and the browser holds an HTTP-only cookie that opens it.
//
// Pages are rendered on the server with html/template; a small embedded
// script streams a Turn's events (Server-Sent Events through the API's
// event stream) and posts the forms that act on a Turn. Nothing is
// fetched from outside the origin.
package console

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

// DefaultSessionTTL is how long a console login lasts.
const DefaultSessionTTL = 8 * time.Hour

// Config is what the console needs.
type Config struct {
	// API serves Core's public routes (/api/v1/...): Core's own handler.
	API http.Handler
	// Auth tells whose key logged in (its project); the API checks the key
	// on every request as well.
	Auth credential.Authenticator
	// Store lists a project's Sessions when it can (ListSessions, as the
	// memory and SQLite stores do) and reads a Turn's journal for the
	// machine view.
	Store store.Store
	// Now is the clock sessions expire by (nil: time.Now).
	Now func() time.Time
	// SessionTTL is how long a login lasts (DefaultSessionTTL when 0).
	SessionTTL time.Duration
	// Secure marks the cookie Secure even when the request did not arrive
	// over TLS here (a TLS-terminating proxy in front; set when the public
	// URL is https).
	Secure bool
	Logger *slog.Logger
}

// Console serves the pages under Prefix.
type Console struct {
	cfg      Config
	mux      *http.ServeMux
	pages    *template.Template
	sessions *sessions
}

//go:embed web
var web embed.FS

// New builds the console. It fails only when a required field is missing.
func New(cfg Config) (*Console, error) {
	switch {
	case cfg.API == nil:
		return nil, errMissing("API")
	case cfg.Auth == nil:
		return nil, errMissing("Auth")
	case cfg.Store == nil:
		return nil, errMissing("Store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(web, "web/*.html")
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), pages: pages, sessions: newSessions(cfg.Now, cfg.SessionTTL)}
	c.routes()
	return c, nil
}

type errMissing string

func (e errMissing) Error() string { return "console: Config." + string(e) + " is required" }

func (c *Console) routes() {
	static, _ := fs.Sub(web, "web/static")
	c.mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /console/{$}", c.signedIn(c.sessionsPage))
	c.mux.HandleFunc("GET /console/login", c.loginPage)
	c.mux.HandleFunc("POST /console/login", c.login)
	c.mux.HandleFunc("POST /console/logout", c.signedIn(c.checked(c.logout)))
	c.mux.HandleFunc("POST /console/sessions", c.signedIn(c.checked(c.createSession)))
	c.mux.HandleFunc("GET /console/sessions/{session_id}", c.signedIn(c.sessionPage))
	c.mux.HandleFunc("POST /console/sessions/{session_id}/turns", c.signedIn(c.checked(c.createTurn)))
	c.mux.HandleFunc("POST /console/sessions/{session_id}/files", c.signedIn(c.checked(c.uploadFile)))
	c.mux.HandleFunc("GET /console/turns/{turn_id}", c.signedIn(c.turnPage))
	c.mux.HandleFunc("GET /console/turns/{turn_id}/machines", c.signedIn(c.machinesFeed))
	c.mux.HandleFunc("GET /console/devices", c.signedIn(c.devicesPage))
	c.mux.HandleFunc("GET /console/environments", c.signedIn(c.environmentsPage))
	c.mux.HandleFunc("GET /console/diagrams/{machine}", c.signedIn(c.diagram))
	// The API itself, opened by the session: the event stream, the
	// answers, inputs, cancellation, file reads and exports.
	c.mux.HandleFunc("/console/api/", c.signedIn(c.checked(c.forward)))
}

// ServeHTTP serves the console's routes; every answer forbids framing,
// scripts and connections from anywhere but this origin, and caching.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(r.URL.Path, "/console/static/") {
		h.Set("Cache-Control", "no-store")
	}
	c.mux.ServeHTTP(w, r)
}

// Register mounts the console on mux under Prefix.
func (c *Console) Register(mux *http.ServeMux) { mux.Handle(Prefix, c) }

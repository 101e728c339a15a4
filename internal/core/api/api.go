// Package api is Core's public JSON API under /api/v1/, opened by project
// API keys (or the administration key): Sessions, Turns with ordered
// input, their status projection and their event stream as Server-Sent
// Events, resumable with Last-Event-ID from the journal.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/agent"
	"github.com/agentwire/agentwire/internal/core/vault"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Route is one route of the API; docs/openapi.yaml describes each (a
// test holds the two together).
type Route struct {
	Method, Path string
}

// Routes lists every route API registers, in OpenAPI path syntax.
var Routes = []Route{
	{"GET", "/api/v1/devices"},
	{"POST", "/api/v1/devices/{device_id}/revoke"},
	{"GET", "/api/v1/engine-profiles"},
	{"POST", "/api/v1/sessions"},
	{"GET", "/api/v1/sessions/{session_id}"},
	{"GET", "/api/v1/sessions/{session_id}/diagnostics"},
	{"POST", "/api/v1/sessions/{session_id}/turns"},
	{"GET", "/api/v1/sessions/{session_id}/turns"},
	{"GET", "/api/v1/turns/{turn_id}"},
	{"POST", "/api/v1/turns/{turn_id}/input"},
	{"GET", "/api/v1/turns/{turn_id}/events"},
	{"POST", "/api/v1/turns/{turn_id}/cancel"},
	{"POST", "/api/v1/turns/{turn_id}/interactions/{interaction_id}"},
	{"POST", "/api/v1/turns/{turn_id}/function-results"},
	{"GET", "/api/v1/sessions/{session_id}/files"},
	{"GET", "/api/v1/sessions/{session_id}/files/content"},
	{"PUT", "/api/v1/sessions/{session_id}/files/content"},
	{"GET", "/api/v1/writes/{mutation_id}"},
	{"POST", "/api/v1/writes/{mutation_id}/resolve"},
	{"GET", "/api/v1/sessions/{session_id}/export"},
	{"POST", "/api/v1/agents"},
	{"GET", "/api/v1/agents"},
	{"GET", "/api/v1/agents/{agent_id}"},
	{"PUT", "/api/v1/agents/{agent_id}"},
	{"POST", "/api/v1/environments"},
	{"GET", "/api/v1/environments"},
	{"GET", "/api/v1/environments/{environment_id}"},
	{"POST", "/api/v1/environments/{environment_id}/suspend"},
	{"POST", "/api/v1/environments/{environment_id}/resume"},
	{"GET", "/api/v1/vault/secrets"},
	{"PUT", "/api/v1/vault/secrets/{name}"},
	{"DELETE", "/api/v1/vault/secrets/{name}"},
}

// Config is what the API needs.
type Config struct {
	Store       store.Store
	Credentials credential.Authenticator
	Journal     *Journal
	// Devices answers GET /api/v1/devices with the devices of a project
	// ("" for the administration key: every device).
	Devices func(ctx context.Context, project string) (any, error)
	// Submitted is told about each new Turn (it wakes the worker); may be nil.
	Submitted func(turnID string)
	// Cancel sends the cancellation of a running Turn and returns its
	// delivery ID; ErrNotRunning and ErrFinished map to 409.
	Cancel func(ctx context.Context, turnID string) (string, error)
	// Answer sends the answer to an interaction and returns its delivery
	// ID; ErrAnswered and ErrNotRunning map to 409. May be nil.
	Answer AnswerFunc
	// InputAdded is told after an active input is stored (it wakes its
	// delivery); may be nil.
	InputAdded func(turnID string)
	Now        func() time.Time
	Logger     *slog.Logger
	// Sealer seals the Vault's secrets (vault.Ephemeral when nil: they
	// then open only in this process).
	Sealer *vault.Sealer
	// Profiles are the engine profiles by agent kind: an Agent is
	// refused when its kind's profile does not qualify a feature it uses.
	Profiles agent.Profiles
	// Clock times the revalidation of open event streams (nil: the
	// system clock); Revalidate is how often a stream asks whether its
	// key is still valid (DefaultRevalidate when 0).
	Clock      peer.Clock
	Revalidate time.Duration
	// Stall is how long an event stream's client may take no event before
	// its stream ends with subscriber_overflow (DefaultStall when 0).
	Stall time.Duration

	// Files reads a Session's workspace (files.go); nil answers 501.
	Files FilesFunc
	// Write and Resolve: workspace writes (files_write.go); nil answers 501.
	Write   WriteFunc
	Resolve ResolveFunc
	// Export pulls a Session's output archive (files_export.go); nil answers 501.
	Export ExportFunc
	// CheckInput refuses an active input the Turn's running Harness does
	// not take (its words go to the caller); nil checks nothing here.
	CheckInput func(ctx context.Context, turnID string, in wire.MessageInput) error
	// Waiting says why a queued Turn is not placed; nil says nothing.
	Waiting func(turnID string) (Waiting, bool)
	// Suspend and Resume drive an Environment's suspension attempts
	// (environments.go); nil answers 501.
	Suspend SuspendFunc
	Resume  ResumeFunc
	// Quotas bound each project (quota.go); the zero value bounds nothing.
	Quotas Quotas
	// Timeouts are the route classes' deadlines (deadlines.go).
	Timeouts Timeouts
	// UploadDir holds upload bodies while they arrive (upload.go; the
	// system's temporary directory when empty).
	UploadDir string
}

// API serves the public routes.
type API struct {
	cfg Config
	// stopping is closed by Shutdown: open event streams end at once.
	stopping chan struct{}
	stopOnce sync.Once
	limits   *limiter
}

// Shutdown ends every open event stream with a final "end" event
// {"reason":"shutdown","resume_after":N}, so that a server shutting down
// does not wait for streams that would otherwise last as long as their
// Turns.
func (a *API) Shutdown() { a.stopOnce.Do(func() { close(a.stopping) }) }

// New returns the API.
func New(cfg Config) *API {
	if cfg.Profiles == nil {
		cfg.Profiles = agent.DefaultProfiles()
	}
	if cfg.Sealer == nil {
		cfg.Sealer = vault.Ephemeral()
	}
	return &API{cfg: cfg, stopping: make(chan struct{}), limits: newLimiter(cfg.Quotas)}
}

// Register adds every route of Routes to mux.
func (a *API) Register(mux *http.ServeMux) {
	h := map[Route]http.HandlerFunc{
		{"GET", "/api/v1/devices"}:                                        a.devices,
		{"POST", "/api/v1/devices/{device_id}/revoke"}:                    a.revokeDevice,
		{"GET", "/api/v1/engine-profiles"}:                                a.engineProfiles,
		{"GET", "/api/v1/vault/secrets"}:                                  a.listSecrets,
		{"PUT", "/api/v1/vault/secrets/{name}"}:                           a.putSecret,
		{"DELETE", "/api/v1/vault/secrets/{name}"}:                        a.deleteSecret,
		{"POST", "/api/v1/sessions"}:                                      a.createSession,
		{"GET", "/api/v1/sessions/{session_id}"}:                          a.getSession,
		{"GET", "/api/v1/sessions/{session_id}/diagnostics"}:              a.diagnostics,
		{"POST", "/api/v1/sessions/{session_id}/turns"}:                   a.createTurn,
		{"GET", "/api/v1/sessions/{session_id}/turns"}:                    a.listTurns,
		{"GET", "/api/v1/turns/{turn_id}"}:                                a.getTurn,
		{"POST", "/api/v1/turns/{turn_id}/input"}:                         a.addInput,
		{"GET", "/api/v1/turns/{turn_id}/events"}:                         a.events,
		{"POST", "/api/v1/turns/{turn_id}/cancel"}:                        a.cancel,
		{"POST", "/api/v1/turns/{turn_id}/interactions/{interaction_id}"}: a.answer,
		{"POST", "/api/v1/turns/{turn_id}/function-results"}:              a.functionResult,
		{"GET", "/api/v1/sessions/{session_id}/files"}:                    a.listFiles,
		{"GET", "/api/v1/sessions/{session_id}/files/content"}:            a.fileContent,
		{"PUT", "/api/v1/sessions/{session_id}/files/content"}:            a.putFile,
		{"GET", "/api/v1/writes/{mutation_id}"}:                           a.getWrite,
		{"POST", "/api/v1/writes/{mutation_id}/resolve"}:                  a.resolveWrite,
		{"GET", "/api/v1/sessions/{session_id}/export"}:                   a.exportFiles,
		{"POST", "/api/v1/agents"}:                                        a.createAgent,
		{"GET", "/api/v1/agents"}:                                         a.listAgents,
		{"GET", "/api/v1/agents/{agent_id}"}:                              a.getAgent,
		{"PUT", "/api/v1/agents/{agent_id}"}:                              a.updateAgent,
		{"POST", "/api/v1/environments"}:                                  a.createEnvironment,
		{"GET", "/api/v1/environments"}:                                   a.listEnvironments,
		{"GET", "/api/v1/environments/{environment_id}"}:                  a.getEnvironment,
		{"POST", "/api/v1/environments/{environment_id}/suspend"}:         a.suspendEnvironment,
		{"POST", "/api/v1/environments/{environment_id}/resume"}:          a.resumeEnvironment,
	}
	for _, r := range Routes {
		mux.HandleFunc(r.Method+" "+r.Path, a.withDeadlines(classOf(r), a.authorized(h[r])))
	}
}

// Error is the API's error body: a finite code, a bounded detail and the
// request field at fault, when one is; a 429 names the quota it met and
// that quota's limit.
type Error struct {
	Error  string  `json:"error"`
	Detail string  `json:"detail,omitempty"`
	Field  string  `json:"field,omitempty"`
	Quota  string  `json:"quota,omitempty"`
	Limit  float64 `json:"limit,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func badField(w http.ResponseWriter, field, detail string) {
	writeJSON(w, http.StatusBadRequest, Error{Error: "invalid_request", Field: field, Detail: detail})
}

type ctxKey struct{}

// authorized admits a project API key or the administration key; a device
// credential never opens the public API.
func (a *API) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.clientRefused(w, r) {
			return
		}
		secret := credential.BearerToken(r.Header.Get("Authorization"))
		c, err := a.cfg.Credentials.Authenticate(r.Context(), secret, store.KindProject)
		if errors.Is(err, credential.ErrWrongKind) {
			c, err = a.cfg.Credentials.Authenticate(r.Context(), secret, store.KindAdmin)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			a.authFailed(r)
		}
		switch {
		case err == nil:
			if a.rateLimited(w, c) {
				return
			}
			next(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, c)))
		case errors.Is(err, credential.ErrMissing):
			writeJSON(w, http.StatusUnauthorized, Error{Error: "missing_bearer", Detail: "a project API key is required"})
		case errors.Is(err, credential.ErrWrongKind):
			writeJSON(w, http.StatusForbidden, Error{Error: "wrong_credential_kind", Detail: "only a project API key or the administration key opens the API"})
		case errors.Is(err, credential.ErrBad):
			writeJSON(w, http.StatusUnauthorized, Error{Error: "bad_credential", Detail: "the credential is unknown or revoked"})
		default:
			a.internal(w, "authorize", err)
		}
	}
}

// DefaultRevalidate is how often an open event stream checks that the key
// it was opened with is unrevoked.
const DefaultRevalidate = 5 * time.Second

func (a *API) revalidate() time.Duration {
	if a.cfg.Revalidate > 0 {
		return a.cfg.Revalidate
	}
	return DefaultRevalidate
}

// stall is how long an event stream's client may take no event
// (Config.Stall, DefaultStall when 0).
func (a *API) stall() time.Duration {
	if a.cfg.Stall > 0 {
		return a.cfg.Stall
	}
	return DefaultStall
}

func (a *API) clock() peer.Clock {
	if a.cfg.Clock != nil {
		return a.cfg.Clock
	}
	return peer.SystemClock()
}

// caller is the credential that authorized the request.
func caller(r *http.Request) store.Credential {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	return c
}

func (a *API) internal(w http.ResponseWriter, what string, err error) {
	a.cfg.Logger.Error("api: "+what, "err", err)
	writeJSON(w, http.StatusInternalServerError, Error{Error: "internal"})
}

// visible reports whether the caller may see a record of project.
func visible(r *http.Request, project string) bool {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	return c.Kind == store.KindAdmin || c.Project == project
}

func notFound(w http.ResponseWriter, what string) {
	writeJSON(w, http.StatusNotFound, Error{Error: "not_found", Detail: what + " not found"})
}

// maxBody bounds a request body (the public inline bound, line 185).
const maxBody = 5 << 20

// decode reads a JSON body strictly: unknown members are named.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		field := ""
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			field = ute.Field
		} else if s := err.Error(); strings.HasPrefix(s, "json: unknown field ") {
			field = strings.Trim(strings.TrimPrefix(s, "json: unknown field "), `"`)
		}
		badField(w, field, boundedText(err.Error()))
		return false
	}
	if dec.More() {
		badField(w, "", "the body holds more than one JSON value")
		return false
	}
	return true
}

func boundedText(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// validInput checks an ordered MessageInput with the wire validator and
// returns the failing field path under prefix.
func validInput(in wire.MessageInput, prefix string) (string, string, bool) {
	err := wire.PromptSteer{InputID: "api", Input: in}.Validate()
	if err == nil {
		// decision: the wire accepts whitespace-only text (whether a Harness
		// takes it is an admission question, daemon-protocol.txt:98), but the
		// public API wants every message to say something: text that is not
		// only whitespace, or an image.
		for i, m := range in {
			if (wire.MessageInput{m}).WhitespaceOnly() {
				return fmt.Sprintf("%s[%d].content", prefix, i), "a message needs text that is not only whitespace, or an image", false
			}
		}
		return "", "", true
	}
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		return prefix + strings.TrimPrefix(fe.Field, "input"), fe.Detail, false
	}
	return prefix, boundedText(err.Error()), false
}

func (a *API) now() time.Time { return a.cfg.Now().UTC().Truncate(time.Millisecond) }

func (a *API) devices(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	project := c.Project
	if c.Kind == store.KindAdmin {
		project = ""
	}
	list, err := a.cfg.Devices(r.Context(), project)
	if err != nil {
		a.internal(w, "devices", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"devices": list})
}

func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return json.RawMessage(b)
	}
	return buf.Bytes()
}

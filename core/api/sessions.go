package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/wire"
)

// SessionRequest creates a Session with its Environment.
type SessionRequest struct {
	AgentKind   string             `json:"agent_kind"`
	Environment EnvironmentRequest `json:"environment"`
	Options     json.RawMessage    `json:"options,omitempty"`
}

// EnvironmentRequest is the Environment a Session is bound to.
type EnvironmentRequest struct {
	Type    string          `json:"type"`
	Binding json.RawMessage `json:"binding,omitempty"`
	// Initialization declares what Core sends the Runtime before the
	// Environment is used on a connection (environments.go).
	Initialization json.RawMessage `json:"initialization,omitempty"`
}

// Session is the API's view of a Session.
type Session struct {
	ID            string          `json:"id"`
	AgentKind     string          `json:"agent_kind"`
	EnvironmentID string          `json:"environment_id"`
	Environment   string          `json:"environment_type"`
	Options       json.RawMessage `json:"options,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
}

func (a *API) createSession(w http.ResponseWriter, r *http.Request) {
	var req SessionRequest
	if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.AgentKind) == "" {
		badField(w, "agent_kind", "required")
		return
	}
	if len(req.AgentKind) > wire.MaxAgentKindBytes {
		badField(w, "agent_kind", "longer than "+strconv.Itoa(wire.MaxAgentKindBytes)+" bytes")
		return
	}
	envType, err := wire.ParseEnvironmentType(req.Environment.Type)
	if err != nil {
		badField(w, "environment.type", "must be none, openai_hosted or self_hosted")
		return
	}
	if req.Options != nil && !isObject(req.Options) {
		badField(w, "options", "must be a JSON object")
		return
	}
	if req.Environment.Binding != nil && !isObject(req.Environment.Binding) {
		badField(w, "environment.binding", "must be a JSON object")
		return
	}
	initialization, ok := checkInitialization(w, req.Environment.Initialization, envType.Local() && req.Environment.Binding != nil)
	if !ok {
		return
	}
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	now := a.now()
	// decision: each Session gets its own Environment record, created
	// with it; a Session's binding is fixed at creation and no later
	// request (nor a device) can choose another (daemon-protocol.txt:19).
	env := store.Environment{ID: credential.NewID("env"), Project: c.Project, Type: string(envType), Binding: compactOrNil(req.Environment.Binding), Initialization: initialization, CreatedAt: now}
	if err := a.cfg.Store.CreateEnvironment(r.Context(), env); err != nil {
		a.internal(w, "create environment", err)
		return
	}
	s := store.Session{ID: credential.NewID("ses"), Project: c.Project, AgentKind: req.AgentKind, EnvironmentID: env.ID, Options: compactOrNil(req.Options), CreatedAt: now}
	if err := a.cfg.Store.CreateSession(r.Context(), s); err != nil {
		a.internal(w, "create session", err)
		return
	}
	writeJSON(w, http.StatusCreated, sessionView(s, env))
}

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

func compactOrNil(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return compact(b)
}

func sessionView(s store.Session, env store.Environment) Session {
	return Session{ID: s.ID, AgentKind: s.AgentKind, EnvironmentID: s.EnvironmentID, Environment: env.Type, Options: s.Options, CreatedAt: s.CreatedAt}
}

// session loads a Session the caller may see.
func (a *API) session(w http.ResponseWriter, r *http.Request, id string) (store.Session, bool) {
	s, err := a.cfg.Store.GetSession(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(r, s.Project)) {
		notFound(w, "session")
		return s, false
	}
	if err != nil {
		a.internal(w, "get session", err)
		return s, false
	}
	return s, true
}

func (a *API) getSession(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("session_id"))
	if !ok {
		return
	}
	env, err := a.cfg.Store.GetEnvironment(r.Context(), s.EnvironmentID)
	if err != nil {
		a.internal(w, "get environment", err)
		return
	}
	writeJSON(w, http.StatusOK, sessionView(s, env))
}

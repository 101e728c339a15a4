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
	"github.com/agentwire/agentwire/internal/core/agent"
	"github.com/agentwire/agentwire/wire"
)

// SessionRequest creates a Session. A Session that works in a workspace
// names a registered Environment of its project (environment_id); one
// without a workspace leaves it out and may say environment.type none.
type SessionRequest struct {
	// AgentID names an Agent of the project: the Session runs its current
	// version, frozen for every Turn; agent_kind then comes from it.
	AgentID       string              `json:"agent_id,omitempty"`
	AgentKind     string              `json:"agent_kind"`
	EnvironmentID string              `json:"environment_id,omitempty"`
	Environment   *EnvironmentRequest `json:"environment,omitempty"`
	Options       json.RawMessage     `json:"options,omitempty"`
}

// EnvironmentRequest is what a Session without a registered Environment
// may say of its Environment: only its type, none. Binding and
// initialization are named so that a caller still sending them is told
// where they went, rather than meeting an unknown field.
type EnvironmentRequest struct {
	Type           string          `json:"type"`
	Binding        json.RawMessage `json:"binding,omitempty"`
	Initialization json.RawMessage `json:"initialization,omitempty"`
}

// Session is the API's view of a Session.
type Session struct {
	ID            string          `json:"id"`
	AgentKind     string          `json:"agent_kind"`
	EnvironmentID string          `json:"environment_id"`
	Environment   string          `json:"environment_type"`
	DeviceID      string          `json:"device_id,omitempty"`
	Options       json.RawMessage `json:"options,omitempty"`
	AgentID       string          `json:"agent_id,omitempty"`
	AgentVersion  int             `json:"agent_version,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
}

func (a *API) createSession(w http.ResponseWriter, r *http.Request) {
	var req SessionRequest
	if !decode(w, r, &req) {
		return
	}
	var ag store.Agent
	var def agent.Definition
	if req.AgentID != "" {
		var err error
		ag, err = a.cfg.Store.GetAgent(r.Context(), req.AgentID, 0)
		if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(r, ag.Project)) {
			badField(w, "agent_id", "no such Agent in this project")
			return
		}
		if err != nil {
			a.internal(w, "get agent", err)
			return
		}
		if err := json.Unmarshal(ag.Definition, &def); err != nil {
			a.internal(w, "read agent", err)
			return
		}
		if req.AgentKind != "" && req.AgentKind != def.AgentKind {
			badField(w, "agent_kind", "the Agent runs "+def.AgentKind+"; leave agent_kind out with agent_id")
			return
		}
		req.AgentKind = def.AgentKind
	}
	if strings.TrimSpace(req.AgentKind) == "" {
		badField(w, "agent_kind", "required")
		return
	}
	if err := agent.CheckKind(req.AgentKind); err != nil {
		badField(w, "agent_kind", err.Error())
		return
	}
	if len(req.AgentKind) > wire.MaxAgentKindBytes {
		badField(w, "agent_kind", "longer than "+strconv.Itoa(wire.MaxAgentKindBytes)+" bytes")
		return
	}
	if req.Options != nil && !isObject(req.Options) {
		badField(w, "options", "must be a JSON object")
		return
	}
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	now := a.now()
	var env store.Environment
	switch e := req.Environment; {
	case e != nil && e.Binding != nil:
		// decision: a binding is Core's, never the caller's
		// (daemon-protocol.txt:19): a Session names an Environment its
		// project registered, whose ID Core minted.
		badField(w, "environment.binding", "a Session cannot choose a binding; register the workspace (POST /api/v1/environments) and name it by environment_id")
		return
	case e != nil && e.Initialization != nil:
		badField(w, "environment.initialization", "initialization belongs to a registered Environment (POST /api/v1/environments)")
		return
	case req.EnvironmentID != "":
		if e != nil && e.Type != "" {
			badField(w, "environment.type", "leave it out with environment_id: the registered Environment has its type")
			return
		}
		var ok bool
		if env, ok = a.sessionEnvironment(w, r, req.EnvironmentID); !ok {
			return
		}
	default:
		if e != nil && e.Type != "" && e.Type != string(wire.EnvironmentTypeNone) {
			if _, err := wire.ParseEnvironmentType(e.Type); err != nil {
				badField(w, "environment.type", "must be none, openai_hosted or self_hosted")
			} else {
				badField(w, "environment_id", "required for a "+e.Type+" Environment: register the workspace (POST /api/v1/environments) and name it here")
			}
			return
		}
		// decision: an Environment of type none is the Session's own,
		// created with it; it has no workspace and no device.
		env = store.Environment{ID: credential.NewUUID(), Project: c.Project, Type: string(wire.EnvironmentTypeNone), CreatedAt: now}
		if err := a.cfg.Store.CreateEnvironment(r.Context(), env); err != nil {
			a.internal(w, "create environment", err)
			return
		}
	}
	// A Session is its Environment's project's (an administrator may
	// create one in any project's registered Environment).
	s := store.Session{ID: credential.NewID("ses"), Project: env.Project, AgentKind: req.AgentKind, EnvironmentID: env.ID, Options: compactOrNil(req.Options), CreatedAt: now,
		AgentID: ag.ID, AgentVersion: ag.Version}
	if ag.ID != "" && ag.Project != env.Project {
		badField(w, "agent_id", "the Agent belongs to another project than the Environment")
		return
	}
	if t, err := wire.ParseEnvironmentType(env.Type); err == nil {
		var fe *agent.FieldError
		if err := def.CheckOrigins(t.Local()); errors.As(err, &fe) {
			badField(w, "agent_id", "the Agent's "+fe.Field+": "+fe.Detail)
			return
		}
	}
	release, ok := a.admit(r.Context(), w, s.Project, demand{sessions: 1, bytes: int64(len(s.Options))})
	if !ok {
		return
	}
	if err := a.cfg.Store.CreateSession(r.Context(), s); err != nil {
		release()
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
	return Session{ID: s.ID, AgentKind: s.AgentKind, EnvironmentID: s.EnvironmentID, Environment: env.Type, DeviceID: env.DeviceID, Options: s.Options,
		AgentID: s.AgentID, AgentVersion: s.AgentVersion, CreatedAt: s.CreatedAt}
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

// Diagnostics is a Session's failed Turns as Core recorded them.
type Diagnostics struct {
	SessionID string           `json:"session_id"`
	Failed    []TurnDiagnostic `json:"failed_turns"`
}

// TurnDiagnostic is one failed Turn: Core's error (the public reason) and,
// only for engine_failed, the engine's classification.
type TurnDiagnostic struct {
	TurnID           string    `json:"turn_id"`
	Reason           string    `json:"reason"`
	Detail           string    `json:"detail,omitempty"`
	EngineErrorCode  string    `json:"engine_error_code,omitempty"`
	EngineHTTPStatus int       `json:"engine_http_status,omitempty"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// diagnostics answers GET /api/v1/sessions/{id}/diagnostics: the failed
// Turns among the Session's newest 100, oldest first.
//
// decision: the engine's category is shown only for a Turn whose Core
// error is engine_failed (daemon-protocol.txt:173); every other failure
// shows Core's own reason, and nothing of the engine's prose.
func (a *API) diagnostics(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("session_id"))
	if !ok {
		return
	}
	ts, err := a.cfg.Store.SessionTurns(r.Context(), s.ID, maxListedTurns)
	if err != nil {
		a.internal(w, "list turns", err)
		return
	}
	d := Diagnostics{SessionID: s.ID, Failed: []TurnDiagnostic{}}
	for _, t := range ts {
		st := t.Status()
		if st.State != "failed" {
			continue
		}
		d.Failed = append(d.Failed, TurnDiagnostic{TurnID: t.ID, Reason: st.Reason, Detail: st.Detail,
			EngineErrorCode: st.EngineErrorCode, EngineHTTPStatus: st.EngineHTTPStatus, UpdatedAt: t.UpdatedAt})
	}
	writeJSON(w, http.StatusOK, d)
}

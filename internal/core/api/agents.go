package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/agent"
)

// Agent is the API's view of one version of an Agent.
type Agent struct {
	ID        string           `json:"id"`
	Version   int              `json:"version"`
	Project   string           `json:"project"`
	CreatedAt time.Time        `json:"created_at"`
	Agent     agent.Definition `json:"agent"`
}

func agentView(a store.Agent) (Agent, error) {
	v := Agent{ID: a.ID, Version: a.Version, Project: a.Project, CreatedAt: a.CreatedAt}
	err := json.Unmarshal(a.Definition, &v.Agent)
	return v, err
}

// readDefinition decodes and validates an Agent definition and checks
// that its kind's engine profile qualifies every feature it uses,
// answering 400 with the field at fault.
func readDefinition(w http.ResponseWriter, r *http.Request, profiles agent.Profiles) (agent.Definition, json.RawMessage, bool) {
	var d agent.Definition
	if !decode(w, r, &d) {
		return d, nil, false
	}
	err := d.Validate()
	if err == nil {
		err = profiles.Lookup(d.AgentKind).Qualify(d)
	}
	if err != nil {
		var fe *agent.FieldError
		if errors.As(err, &fe) {
			badField(w, fe.Field, fe.Detail)
		} else {
			badField(w, "", boundedText(err.Error()))
		}
		return d, nil, false
	}
	raw, err := json.Marshal(d)
	if err != nil {
		badField(w, "", boundedText(err.Error()))
		return d, nil, false
	}
	return d, raw, true
}

// createAgent answers POST /api/v1/agents: version 1 of a new Agent of the
// caller's project.
func (a *API) createAgent(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	if c.Project == "" {
		writeJSON(w, http.StatusForbidden, Error{Error: "project_key_required", Detail: "an Agent belongs to a project: use a project key"})
		return
	}
	_, raw, ok := readDefinition(w, r, a.cfg.Profiles)
	if !ok {
		return
	}
	ag := store.Agent{ID: credential.NewID("agent"), Project: c.Project, Version: 1, Definition: raw, CreatedAt: a.now()}
	if err := a.cfg.Store.PutAgent(r.Context(), ag); err != nil {
		a.internal(w, "create agent", err)
		return
	}
	a.writeAgent(w, http.StatusCreated, ag)
}

// updateAgent answers PUT /api/v1/agents/{id}: the next version. Sessions
// created before keep the version they were created with.
func (a *API) updateAgent(w http.ResponseWriter, r *http.Request) {
	cur, ok := a.agent(w, r, 0)
	if !ok {
		return
	}
	_, raw, ok := readDefinition(w, r, a.cfg.Profiles)
	if !ok {
		return
	}
	ag := store.Agent{ID: cur.ID, Project: cur.Project, Version: cur.Version + 1, Definition: raw, CreatedAt: a.now()}
	err := a.cfg.Store.PutAgent(r.Context(), ag)
	if errors.Is(err, store.ErrConflict) {
		writeJSON(w, http.StatusConflict, Error{Error: "agent_changed", Detail: "another version was written meanwhile; read the Agent again"})
		return
	}
	if err != nil {
		a.internal(w, "update agent", err)
		return
	}
	a.writeAgent(w, http.StatusOK, ag)
}

// getAgent answers GET /api/v1/agents/{id}[?version=N].
func (a *API) getAgent(w http.ResponseWriter, r *http.Request) {
	version := 0
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			badField(w, "version", "want a version number from 1")
			return
		}
		version = n
	}
	if ag, ok := a.agent(w, r, version); ok {
		a.writeAgent(w, http.StatusOK, ag)
	}
}

// listAgents answers GET /api/v1/agents: the latest version of each of
// the caller's project's Agents.
func (a *API) listAgents(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	list, err := a.cfg.Store.ListAgents(r.Context(), c.Project)
	if err != nil {
		a.internal(w, "list agents", err)
		return
	}
	out := make([]Agent, 0, len(list))
	for _, ag := range list {
		v, err := agentView(ag)
		if err != nil {
			a.internal(w, "read agent", err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// agent loads a version (0: the latest) of the Agent the caller may see.
func (a *API) agent(w http.ResponseWriter, r *http.Request, version int) (store.Agent, bool) {
	ag, err := a.cfg.Store.GetAgent(r.Context(), r.PathValue("agent_id"), version)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(r, ag.Project)) {
		notFound(w, "agent")
		return ag, false
	}
	if err != nil {
		a.internal(w, "get agent", err)
		return ag, false
	}
	return ag, true
}

func (a *API) writeAgent(w http.ResponseWriter, status int, ag store.Agent) {
	v, err := agentView(ag)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, Error{Error: "internal", Detail: "the stored Agent cannot be read"})
		return
	}
	writeJSON(w, status, v)
}

// engineProfiles answers GET /api/v1/engine-profiles: what each agent
// kind's profile qualifies, so a user can tell why an Agent is refused.
func (a *API) engineProfiles(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"profiles": a.cfg.Profiles.Sorted()})
}

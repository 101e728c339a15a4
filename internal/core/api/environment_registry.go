package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/envinit"
	"github.com/agentwire/agentwire/wire"
)

// The Environment registry (docs/tenancy.md): a local Environment is a
// workspace on one device of the caller's project, registered here. Core
// mints its ID, the identity every frame names it by, and the Runtime is
// configured with that ID for the directory (agentwire runtime
// --environment ID=DIR). A Session names a registered Environment; it
// never supplies a binding of its own (daemon-protocol.txt:19, 59).

// EnvironmentCreate registers a local Environment.
type EnvironmentCreate struct {
	// Type is self_hosted (the default) or openai_hosted.
	Type string `json:"type,omitempty"`
	// DeviceID is the device of the caller's project that hosts the
	// workspace.
	DeviceID string `json:"device_id"`
	// Initialization declares what Core sends the Runtime before the
	// Environment is used on a connection (environments.go).
	Initialization json.RawMessage `json:"initialization,omitempty"`
}

func (a *API) createEnvironment(w http.ResponseWriter, r *http.Request) {
	var req EnvironmentCreate
	if !decode(w, r, &req) {
		return
	}
	if req.Type == "" {
		req.Type = string(wire.EnvironmentTypeSelfHosted)
	}
	t, err := wire.ParseEnvironmentType(req.Type)
	if err != nil || !t.Local() {
		// decision: an Environment of type none has no workspace and no
		// device, so there is nothing to register; a Session asks for one
		// with environment.type none.
		badField(w, "type", "must be self_hosted or openai_hosted (a Session without a workspace uses environment.type none)")
		return
	}
	deviceID := strings.TrimSpace(req.DeviceID)
	if deviceID == "" {
		badField(w, "device_id", "required: the device that hosts the workspace")
		return
	}
	d, err := a.cfg.Store.GetDevice(r.Context(), deviceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (d.Project == "" || !visible(r, d.Project))) {
		// Another project's device answers exactly as a missing one; an
		// unassigned device belongs to no project, so it hosts nothing.
		writeJSON(w, http.StatusNotFound, Error{Error: "not_found", Field: "device_id", Detail: "device not found"})
		return
	}
	if err != nil {
		a.internal(w, "get device", err)
		return
	}
	initialization, ok := checkInitialization(w, "initialization", req.Initialization, true)
	if !ok {
		return
	}
	id := credential.NewUUID()
	if initialization, ok = a.sealInitialization(w, d.Project, id, initialization); !ok {
		return
	}
	binding, err := json.Marshal(wire.LocalEnvironment{ID: id})
	if err != nil {
		a.internal(w, "encode binding", err)
		return
	}
	env := store.Environment{ID: id, Project: d.Project, Type: string(t), Binding: binding, DeviceID: d.ID, Initialization: initialization, CreatedAt: a.now()}
	if err := a.cfg.Store.CreateEnvironment(r.Context(), env); err != nil {
		a.internal(w, "create environment", err)
		return
	}
	writeJSON(w, http.StatusCreated, a.environmentView(env))
}

func (a *API) listEnvironments(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	project := c.Project
	if c.Kind == store.KindAdmin {
		project = ""
	}
	list, err := a.cfg.Store.ListEnvironments(r.Context(), project)
	if err != nil {
		a.internal(w, "list environments", err)
		return
	}
	out := make([]EnvironmentView, 0, len(list))
	for _, e := range list {
		out = append(out, a.environmentView(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"environments": out})
}

// sessionEnvironment finds the registered Environment a Session names:
// one of the caller's project (another project's answers as a missing
// one) that a device hosts. False after it wrote the answer.
func (a *API) sessionEnvironment(w http.ResponseWriter, r *http.Request, id string) (store.Environment, bool) {
	env, err := a.cfg.Store.GetEnvironment(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(r, env.Project)) {
		writeJSON(w, http.StatusNotFound, Error{Error: "not_found", Field: "environment_id", Detail: "environment not found"})
		return env, false
	}
	if err != nil {
		a.internal(w, "get environment", err)
		return env, false
	}
	if t, err := wire.ParseEnvironmentType(env.Type); err != nil || !t.Local() || env.DeviceID == "" {
		// An Environment of type none is the Session's own, and a local
		// one stored before registration is hosted by no device.
		badField(w, "environment_id", "not a registered Environment with a device; register one with POST /api/v1/environments")
		return env, false
	}
	return env, true
}

// sealInitialization seals the declaration's variables before it is
// stored.
//
// decision: initialization variables are typically API keys; Core keeps
// them sealed with the Vault's key (core/vault) and opens them only into
// the configure step it sends, and its transcript redacts them
// (daemon-protocol.txt:104 leaves storage to Core). Declarations stored
// before this keep their values until the Environment is registered again.
func (a *API) sealInitialization(w http.ResponseWriter, project, envID string, raw json.RawMessage) (json.RawMessage, bool) {
	if raw == nil {
		return nil, true
	}
	spec, err := envinit.Parse(raw)
	if err == nil {
		spec, err = spec.Seal(func(name string, value []byte) ([]byte, error) {
			return a.cfg.Sealer.Seal(project, envinit.SecretName(envID, name), value)
		})
	}
	var out json.RawMessage
	if err == nil {
		out, err = json.Marshal(spec)
	}
	if err != nil {
		a.internal(w, "seal initialization", err)
		return nil, false
	}
	return out, true
}

package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/vault"
)

// The Vault: a project's named secrets (an MCP server's bearer token, say),
// written here and never read back; an Agent names one (mcp_servers[].
// bearer_secret) and Core opens it only to put it into the Run's
// configuration.

// SecretView is what the API shows of a secret: never its value.
type SecretView struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// maxSecret bounds a secret's value.
const maxSecret = 8 << 10

func secretView(s store.Secret) SecretView {
	return SecretView{Name: s.Name, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// projectOf is the caller's project; secrets are a project's, so other
// keys are refused.
func projectOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	if c.Project == "" {
		writeJSON(w, http.StatusForbidden, Error{Error: "project_key_required", Detail: "a secret belongs to a project: use a project key"})
		return "", false
	}
	return c.Project, true
}

// putSecret answers PUT /api/v1/vault/secrets/{name} {"value": "..."}.
func (a *API) putSecret(w http.ResponseWriter, r *http.Request) {
	project, ok := projectOf(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if !vault.NameRule.MatchString(name) {
		badField(w, "name", vault.NameSyntax)
		return
	}
	var req struct {
		Value string `json:"value"`
	}
	if !decode(w, r, &req) {
		return
	}
	switch {
	case strings.TrimSpace(req.Value) == "":
		badField(w, "value", "required and not blank")
		return
	case len(req.Value) > maxSecret:
		badField(w, "value", "at most 8 KiB")
		return
	}
	sealed, err := a.cfg.Sealer.Seal(project, name, []byte(req.Value))
	if err != nil {
		a.internal(w, "seal secret", err)
		return
	}
	now := a.now()
	if err := a.cfg.Store.PutSecret(r.Context(), store.Secret{Project: project, Name: name, Sealed: sealed, CreatedAt: now, UpdatedAt: now}); err != nil {
		a.internal(w, "put secret", err)
		return
	}
	s, err := a.cfg.Store.GetSecret(r.Context(), project, name)
	if err != nil {
		a.internal(w, "get secret", err)
		return
	}
	writeJSON(w, http.StatusOK, secretView(s))
}

// listSecrets answers GET /api/v1/vault/secrets: names and times.
func (a *API) listSecrets(w http.ResponseWriter, r *http.Request) {
	project, ok := projectOf(w, r)
	if !ok {
		return
	}
	list, err := a.cfg.Store.ListSecrets(r.Context(), project)
	if err != nil {
		a.internal(w, "list secrets", err)
		return
	}
	out := make([]SecretView, 0, len(list))
	for _, s := range list {
		out = append(out, secretView(s))
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": out})
}

// deleteSecret answers DELETE /api/v1/vault/secrets/{name}. A Run already
// configured with the value keeps it; later Turns naming it fail before
// anything is sent.
func (a *API) deleteSecret(w http.ResponseWriter, r *http.Request) {
	project, ok := projectOf(w, r)
	if !ok {
		return
	}
	err := a.cfg.Store.DeleteSecret(r.Context(), project, r.PathValue("name"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFound(w, "secret")
	case err != nil:
		a.internal(w, "delete secret", err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

package api

import (
	"errors"
	"net/http"

	"github.com/agentwire/agentwire/core/store"
)

// revokeDevice answers POST /api/v1/devices/{device_id}/revoke: every
// live credential of the device is revoked, so its open connection is
// retired at its next heartbeat (close 4001, the daemon stops) and the
// credential opens nothing again (docs/tenancy.md). A project revokes
// only its own devices; another project's device answers as a missing
// one.
func (a *API) revokeDevice(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("device_id")
	d, err := a.cfg.Store.GetDevice(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (d.Project == "" && !isAdmin(r) || d.Project != "" && !visible(r, d.Project))) {
		notFound(w, "device")
		return
	}
	if err != nil {
		a.internal(w, "get device", err)
		return
	}
	revoked, err := a.cfg.Credentials.RevokeDevice(r.Context(), id)
	if err != nil {
		a.internal(w, "revoke device", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"device_id": id, "revoked": revoked})
}

func isAdmin(r *http.Request) bool {
	c, _ := r.Context().Value(ctxKey{}).(store.Credential)
	return c.Kind == store.KindAdmin
}

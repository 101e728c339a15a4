package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
)

// ExportFunc pulls a Session's output archive (a tar); its errors are
// *FilesError (or anything else, 500).
type ExportFunc func(ctx context.Context, sessionID string) ([]byte, error)

// exportFiles answers the archive of the workspace's outputs directory,
// returned only after the read-only handle's confirmed close.
func (a *API) exportFiles(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("session_id"))
	if !ok {
		return
	}
	if len(r.URL.Query()) != 0 {
		for name := range r.URL.Query() {
			badField(w, name, "unknown query parameter")
			return
		}
	}
	if a.cfg.Export == nil {
		writeJSON(w, http.StatusNotImplemented, Error{Error: "not_implemented", Detail: "this Core serves no exports"})
		return
	}
	data, err := a.cfg.Export(r.Context(), s.ID)
	var fe *FilesError
	switch {
	case errors.As(err, &fe):
		status, known := filesStatus[fe.Code]
		if !known {
			status, fe = http.StatusServiceUnavailable, &FilesError{Code: FilesUnavailable, Reason: fe.Code, Detail: fe.Detail}
		}
		writeJSON(w, status, filesErrorBody{Error: fe.Code, Reason: fe.Reason, Detail: boundedText(fe.Detail)})
		return
	case err != nil:
		if r.Context().Err() != nil {
			return
		}
		a.internal(w, "export", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

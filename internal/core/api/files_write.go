package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/wire"
)

// Workspace writes (daemon-protocol.txt:185): PUT a file's whole body,
// read a write's durable record, and an operator's resolution of a write
// whose outcome is unknown.

// MaxWriteBody is the public decoded inline bound of a write's body,
// checked before any Runtime work (daemon-protocol.txt:185).
const MaxWriteBody = 5 << 20

// WriteFunc writes body to path in a Session's workspace and returns the
// write's record; its errors are *WriteError (or anything else, 500).
type WriteFunc func(ctx context.Context, sessionID, path string, body []byte) (WriteRecord, error)

// ResolveFunc records an operator's resolution of an unknown write.
type ResolveFunc func(ctx context.Context, mutationID, resolution, note string) (store.WorkspaceWrite, error)

// WriteError is a write that was not admitted.
type WriteError struct {
	Code       string // one of the FilesXxx codes, or WriteUnsettled
	Reason     string
	Detail     string
	MutationID string // the unsettled write that blocks this one
}

func (e *WriteError) Error() string { return "api: write: " + e.Code + " " + e.Reason }

// WriteUnsettled (409): an earlier write of the Session holds its mutation
// owner; successors wait for its exact settlement or an operator's
// resolution.
const WriteUnsettled = "write_unsettled"

// WriteRecord is the public view of a write: Outcome is the projection
// (pending while in flight, completed, rejected, aborted, unknown, or
// resolved by an operator); State is the machine's state.
type WriteRecord struct {
	MutationID string `json:"mutation_id"`
	SessionID  string `json:"session_id"`
	Path       string `json:"path"`
	Outcome    string `json:"outcome"`
	State      string `json:"state,omitempty"`
	SizeBytes  int64  `json:"size_bytes"`
	SHA256     string `json:"sha256,omitempty"`
	ErrorCode  string `json:"error_code,omitempty"`
	Reason     string `json:"reason,omitempty"`
	DeviceID   string `json:"device_id,omitempty"`
	Resolution string `json:"resolution,omitempty"`
	Note       string `json:"note,omitempty"`
}

// RecordOf is the public view of a stored write.
func RecordOf(w store.WorkspaceWrite) WriteRecord {
	out := w.Outcome
	switch {
	case out == "" && w.State == store.WriteStateUnknown, out == "" && w.State == "unconfirmed":
		out = "unknown"
	case out == "":
		out = "pending"
	}
	return WriteRecord{MutationID: w.MutationID, SessionID: w.SessionID, Path: w.Path, Outcome: out, State: w.State,
		SizeBytes: w.SizeBytes, SHA256: w.SHA256, ErrorCode: w.ErrorCode, Reason: w.Reason, DeviceID: w.DeviceID,
		Resolution: w.Resolution, Note: w.Note}
}

// decision: the answer's status follows the settlement: 200 completed,
// 409 rejected (the Runtime's finite code), 503 aborted (nothing reached
// the installer), 202 unknown (the write may or may not have happened;
// the record stays visible and successors wait, daemon-protocol.txt:185).
var writeStatus = map[string]int{"completed": http.StatusOK, "rejected": http.StatusConflict, "aborted": http.StatusServiceUnavailable,
	"unknown": http.StatusAccepted}

func (a *API) putFile(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("session_id"))
	if !ok {
		return
	}
	var path string
	for name, vals := range r.URL.Query() {
		switch {
		case len(vals) != 1:
			badField(w, name, "give it once")
			return
		case name == "path":
			path = vals[0]
		default:
			badField(w, name, "unknown query parameter")
			return
		}
	}
	if err := wire.CheckWorkspacePath(path, false); err != nil || path == "" {
		detail := "a workspace-relative file path is required"
		if err != nil {
			detail = boundedText(err.Error())
		}
		badField(w, "path", detail)
		return
	}
	if a.cfg.Write == nil {
		writeJSON(w, http.StatusNotImplemented, Error{Error: "not_implemented", Detail: "this Core serves no workspace writes"})
		return
	}
	// The 5 MiB bound is checked before any Runtime work.
	body, ok := a.readUpload(w, r)
	if !ok {
		return
	}
	rec, err := a.cfg.Write(r.Context(), s.ID, path, body)
	var we *WriteError
	switch {
	case errors.As(err, &we):
		status, known := filesStatus[we.Code]
		if we.Code == WriteUnsettled {
			status, known = http.StatusConflict, true
		}
		if !known {
			status, we = http.StatusServiceUnavailable, &WriteError{Code: FilesUnavailable, Reason: we.Code, Detail: we.Detail}
		}
		body := map[string]string{"error": we.Code}
		for k, v := range map[string]string{"reason": we.Reason, "detail": boundedText(we.Detail), "mutation_id": we.MutationID} {
			if v != "" {
				body[k] = v
			}
		}
		if we.Code == FilesInvalid {
			body["field"] = "path"
		}
		writeJSON(w, status, body)
		return
	case err != nil:
		if r.Context().Err() != nil {
			return // the caller went away; the write settles without it
		}
		a.internal(w, "write", err)
		return
	}
	status, ok := writeStatus[rec.Outcome]
	if !ok {
		status = http.StatusAccepted
	}
	writeJSON(w, status, rec)
}

func (a *API) getWrite(w http.ResponseWriter, r *http.Request) {
	rec, ok := a.write(w, r)
	if ok {
		writeJSON(w, http.StatusOK, RecordOf(rec))
	}
}

// write finds the write of the path and checks its Session is visible.
func (a *API) write(w http.ResponseWriter, r *http.Request) (store.WorkspaceWrite, bool) {
	rec, err := a.cfg.Store.GetWorkspaceWrite(r.Context(), r.PathValue("mutation_id"))
	if errors.Is(err, store.ErrNotFound) {
		notFound(w, "write")
		return rec, false
	}
	if err != nil {
		a.internal(w, "get write", err)
		return rec, false
	}
	// Another project's write answers exactly as a missing one: the
	// answer never tells a caller what exists elsewhere (docs/tenancy.md).
	s, err := a.cfg.Store.GetSession(r.Context(), rec.SessionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !visible(r, s.Project)) {
		notFound(w, "write")
		return rec, false
	}
	if err != nil {
		a.internal(w, "get session", err)
		return rec, false
	}
	return rec, true
}

// ResolveRequest is the body of an operator's resolution.
type ResolveRequest struct {
	Resolution string `json:"resolution"`
	Note       string `json:"note"`
}

// decision: resolving an unknown write is an operator's act: it asserts
// what happened in a workspace no receipt describes (daemon-protocol.txt:
// 185), so it takes the administration key; a project API key gets 403.
func (a *API) resolveWrite(w http.ResponseWriter, r *http.Request) {
	if c, _ := r.Context().Value(ctxKey{}).(store.Credential); c.Kind != store.KindAdmin {
		writeJSON(w, http.StatusForbidden, Error{Error: "wrong_credential_kind", Detail: "resolving a write takes the administration key"})
		return
	}
	rec, ok := a.write(w, r)
	if !ok {
		return
	}
	var req ResolveRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		badField(w, "body", "a JSON object with resolution and note")
		return
	}
	if req.Resolution != store.ResolutionApplied && req.Resolution != store.ResolutionNotApplied {
		badField(w, "resolution", "must be applied or not_applied")
		return
	}
	if len(req.Note) > 1024 {
		badField(w, "note", "at most 1024 bytes")
		return
	}
	if a.cfg.Resolve == nil {
		writeJSON(w, http.StatusNotImplemented, Error{Error: "not_implemented", Detail: "this Core resolves no writes"})
		return
	}
	got, err := a.cfg.Resolve(r.Context(), rec.MutationID, req.Resolution, req.Note)
	if errors.Is(err, store.ErrStale) {
		// decision: an unconfirmed write (its deadline passed on a live
		// connection) may still get its exact receipt there
		// (spec/workspace_write.yaml settle_late), so it is resolvable only
		// once that connection is gone and the machine ended it unknown.
		writeJSON(w, http.StatusConflict, Error{Error: "not_unknown", Detail: "only a write that ended unknown is resolved; this one is " + RecordOf(rec).Outcome + " (state " + rec.State + ")"})
		return
	}
	if err != nil {
		a.internal(w, "resolve write", err)
		return
	}
	writeJSON(w, http.StatusOK, RecordOf(got))
}

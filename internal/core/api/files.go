package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/agentwire/agentwire/wire"
)

// The Files routes: one directory listing or one file's bytes of a
// Session's bound workspace, each exactly one bounded read on the wire
// (daemon-protocol.txt:179-183). A listing is at most one wire read's
// entries (1024), with its truncation shown; there is no recursion or
// pagination.

// FilesQuery is one read: a listing (Directory, MaxEntries) or a file's
// bytes (MaxBytes); the limits are exclusive.
type FilesQuery struct {
	Path       string
	Directory  bool
	MaxBytes   int64
	MaxEntries int64
}

// FilesResult is what a confirmed read returned.
type FilesResult struct {
	Data      []byte
	Entries   []wire.WorkspaceDirectoryEntry
	Truncated bool
}

// FilesFunc reads a Session's workspace; its errors are *FilesError (or
// anything else, answered 500).
type FilesFunc func(ctx context.Context, sessionID string, q FilesQuery) (FilesResult, error)

// Error codes of FilesError.
const (
	FilesNotFound         = "not_found"         // 404: the path does not exist
	FilesNotDirectory     = "not_directory"     // 409: a listing of something not a directory
	FilesPermissionDenied = "permission_denied" // 403: the Runtime may not read the path
	FilesInvalid          = "invalid_request"   // 400: the path or a limit
	FilesNoWorkspace      = "no_workspace"      // 409: the Session's Environment has no bound workspace
	FilesSessionBusy      = "session_busy"      // 409: another read holds the Session, or its Turn is starting
	FilesUnavailable      = "unavailable"       // 503: no data; Reason says why
)

// FilesError is a read that returned no data.
type FilesError struct {
	Code   string
	Reason string
	Detail string
}

func (e *FilesError) Error() string { return "api: files: " + e.Code + " " + e.Reason }

var filesStatus = map[string]int{
	FilesNotFound: http.StatusNotFound, FilesNotDirectory: http.StatusConflict, FilesPermissionDenied: http.StatusForbidden,
	FilesInvalid: http.StatusBadRequest, FilesNoWorkspace: http.StatusConflict, FilesSessionBusy: http.StatusConflict,
	FilesUnavailable: http.StatusServiceUnavailable,
}

// filesErrorBody is Error with the reason of an unavailable read.
type filesErrorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
}

// FilesListing is the body of a listing.
type FilesListing struct {
	SessionID string                         `json:"session_id"`
	Path      string                         `json:"path"`
	Entries   []wire.WorkspaceDirectoryEntry `json:"entries"`
	Truncated bool                           `json:"truncated"`
}

// FilesContent is the body of a file read; Data is base64 in JSON.
type FilesContent struct {
	SessionID string `json:"session_id"`
	Path      string `json:"path"`
	Data      []byte `json:"data"`
	SizeBytes int    `json:"size_bytes"`
	Truncated bool   `json:"truncated"`
}

func (a *API) listFiles(w http.ResponseWriter, r *http.Request) { a.files(w, r, true) }

func (a *API) fileContent(w http.ResponseWriter, r *http.Request) { a.files(w, r, false) }

func (a *API) files(w http.ResponseWriter, r *http.Request, directory bool) {
	s, ok := a.session(w, r, r.PathValue("session_id"))
	if !ok {
		return
	}
	q, ok := filesQuery(w, r, directory)
	if !ok {
		return
	}
	if a.cfg.Files == nil {
		writeJSON(w, http.StatusNotImplemented, Error{Error: "not_implemented", Detail: "this Core serves no workspace reads"})
		return
	}
	res, err := a.cfg.Files(r.Context(), s.ID, q)
	var fe *FilesError
	switch {
	case errors.As(err, &fe):
		status, known := filesStatus[fe.Code]
		if !known {
			status, fe = http.StatusServiceUnavailable, &FilesError{Code: FilesUnavailable, Reason: fe.Code, Detail: fe.Detail}
		}
		body := filesErrorBody{Error: fe.Code, Reason: fe.Reason, Detail: boundedText(fe.Detail)}
		if fe.Code == FilesNotFound || fe.Code == FilesNotDirectory || fe.Code == FilesInvalid || fe.Code == FilesPermissionDenied {
			body.Field = "path"
		}
		writeJSON(w, status, body)
		return
	case err != nil:
		if r.Context().Err() != nil {
			return // the caller went away; the read settles without it
		}
		a.internal(w, "files", err)
		return
	}
	if directory {
		entries := res.Entries
		if entries == nil {
			entries = []wire.WorkspaceDirectoryEntry{}
		}
		writeJSON(w, http.StatusOK, FilesListing{SessionID: s.ID, Path: q.Path, Entries: entries, Truncated: res.Truncated})
		return
	}
	data := res.Data
	if data == nil {
		data = []byte{}
	}
	if err := writeContent(w, FilesContent{SessionID: s.ID, Path: q.Path, Data: data, SizeBytes: len(data), Truncated: res.Truncated}); err != nil {
		a.cfg.Logger.Debug("files: the content did not reach the caller", "session_id", s.ID, "err", err)
	}
}

// filesQuery reads path and the one limit of the route; every other
// query parameter is refused by name.
//
// decision: a listing defaults to the wire's whole bound (1024 entries)
// and a file read to 1 MiB (daemon-protocol.txt:179, 181); the caller may
// ask for less, never for more, and never for both limits.
func filesQuery(w http.ResponseWriter, r *http.Request, directory bool) (FilesQuery, bool) {
	q := FilesQuery{Directory: directory, MaxEntries: wire.MaxDirectoryEntries, MaxBytes: wire.MaxReadBytes}
	limit, other, max := "max_bytes", "max_entries", int64(wire.MaxReadBytes)
	if directory {
		limit, other, max = "max_entries", "max_bytes", wire.MaxDirectoryEntries
	}
	for name, vals := range r.URL.Query() {
		switch {
		case len(vals) != 1:
			badField(w, name, "give it once")
			return q, false
		case name == "path":
			q.Path = vals[0]
		case name == limit:
			n, err := strconv.ParseInt(vals[0], 10, 64)
			if err != nil || n < 1 || n > max {
				badField(w, name, "must be an integer from 1 to "+strconv.FormatInt(max, 10))
				return q, false
			}
			if directory {
				q.MaxEntries = n
			} else {
				q.MaxBytes = n
			}
		case name == other:
			badField(w, name, "byte and entry limits are exclusive: this route takes "+limit)
			return q, false
		default:
			badField(w, name, "unknown query parameter")
			return q, false
		}
	}
	if directory {
		q.MaxBytes = 0
	} else {
		q.MaxEntries = 0
	}
	if err := wire.CheckWorkspacePath(q.Path, directory); err != nil {
		badField(w, "path", boundedText(err.Error()))
		return q, false
	}
	return q, true
}

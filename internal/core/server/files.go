package server

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/core/gateway"
)

// files maps a public read onto the gateway's and its errors onto the
// API's: a Runtime's finite rejection keeps its code where the API has
// one; everything that returned no data for another reason is unavailable
// with that reason.
func (s *Server) files(ctx context.Context, sessionID string, q api.FilesQuery) (api.FilesResult, error) {
	d, err := s.gateway.ReadWorkspace(ctx, sessionID, gateway.ReadQuery{Path: q.Path, Directory: q.Directory, MaxBytes: q.MaxBytes, MaxEntries: q.MaxEntries})
	if err == nil {
		return api.FilesResult{Data: d.Data, Entries: d.Entries, Truncated: d.Truncated}, nil
	}
	return api.FilesResult{}, readError(err)
}

// readError maps a gateway read's (or export's) error onto the API's.
func readError(err error) error {
	var re *gateway.ReadError
	switch {
	case errors.Is(err, gateway.ErrNoWorkspace):
		return &api.FilesError{Code: api.FilesNoWorkspace, Detail: "the Session's Environment has no bound workspace"}
	case errors.Is(err, gateway.ErrSessionBusy):
		return &api.FilesError{Code: api.FilesSessionBusy, Detail: "another read holds the Session, or its Turn is starting; try again"}
	case errors.As(err, &re) && re.Rejected:
		switch re.Code {
		case api.FilesNotFound, api.FilesNotDirectory, api.FilesPermissionDenied, api.FilesInvalid:
			return &api.FilesError{Code: re.Code, Detail: re.Detail}
		}
		return &api.FilesError{Code: api.FilesUnavailable, Reason: re.Code, Detail: re.Detail}
	case errors.As(err, &re):
		return &api.FilesError{Code: api.FilesUnavailable, Reason: re.Code, Detail: re.Detail}
	}
	return err
}

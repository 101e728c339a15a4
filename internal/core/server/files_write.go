package server

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/core/gateway"
)

// write maps a public write onto the gateway's and its errors onto the
// API's.
func (s *Server) write(ctx context.Context, sessionID, path string, body []byte) (api.WriteRecord, error) {
	res, err := s.gateway.WriteWorkspace(ctx, sessionID, path, body, gateway.WriteOptions{})
	var blocked *gateway.WriteBlockedError
	var re *gateway.ReadError
	switch {
	case err == nil:
		rec, gerr := s.cfg.Store.GetWorkspaceWrite(ctx, res.MutationID)
		if gerr != nil {
			return api.WriteRecord{MutationID: res.MutationID, SessionID: sessionID, Path: path, Outcome: res.Outcome, State: res.State,
				ErrorCode: res.ErrorCode, Reason: res.Reason, SizeBytes: int64(len(body)), DeviceID: res.DeviceID}, nil
		}
		out := api.RecordOf(rec)
		// The caller is told how the machine settled the write, even where
		// the record is still held (unconfirmed shows as unknown).
		out.Outcome = res.Outcome
		return out, nil
	case errors.As(err, &blocked):
		return api.WriteRecord{}, &api.WriteError{Code: api.WriteUnsettled, MutationID: blocked.MutationID, Detail: blocked.Error()}
	case errors.Is(err, gateway.ErrNoWorkspace):
		return api.WriteRecord{}, &api.WriteError{Code: api.FilesNoWorkspace, Detail: "the Session's Environment has no bound workspace"}
	case errors.Is(err, gateway.ErrSessionBusy):
		return api.WriteRecord{}, &api.WriteError{Code: api.FilesSessionBusy, Detail: "a Turn, a read or a write holds the Session, or a Turn of another Session runs in its workspace; try again"}
	case errors.Is(err, gateway.ErrWriteNoDevice):
		return api.WriteRecord{}, &api.WriteError{Code: api.FilesUnavailable, Reason: "no_device", Detail: err.Error()}
	case errors.As(err, &re) && re.Rejected:
		return api.WriteRecord{}, &api.WriteError{Code: re.Code, Detail: re.Detail}
	case errors.As(err, &re):
		return api.WriteRecord{}, &api.WriteError{Code: api.FilesUnavailable, Reason: re.Code, Detail: re.Detail}
	}
	return api.WriteRecord{}, err
}

func (s *Server) resolveWrite(ctx context.Context, mutationID, resolution, note string) (store.WorkspaceWrite, error) {
	return s.gateway.ResolveWrite(ctx, mutationID, resolution, note)
}

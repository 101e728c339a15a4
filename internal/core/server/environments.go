package server

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/core/gateway"
)

// suspend and resume map the gateway's suspension answers onto the API's.
func (s *Server) suspend(ctx context.Context, envID string, wait bool) (store.Suspension, error) {
	a, err := s.gateway.SuspendEnvironment(ctx, envID, wait)
	return a, suspensionErr(err)
}

func (s *Server) resume(ctx context.Context, envID string, rollback, wait bool) (store.Suspension, error) {
	a, err := s.gateway.ResumeEnvironment(ctx, envID, rollback, wait)
	return a, suspensionErr(err)
}

func suspensionErr(err error) error {
	var re *gateway.SuspensionRefused
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gateway.ErrSuspensionExpired):
		return api.ErrSuspensionExpired
	case errors.Is(err, gateway.ErrSuspensionOpen):
		return api.ErrSuspensionOpen
	case errors.Is(err, gateway.ErrNotSuspended):
		return api.ErrNotSuspended
	case errors.Is(err, gateway.ErrDeviceOffline):
		return api.ErrDeviceOffline
	case errors.Is(err, gateway.ErrNoWorkspace):
		return api.ErrNoWorkspace
	case errors.As(err, &re):
		return &api.SuspensionError{Detail: re.Detail}
	}
	return err
}

package server

import "context"

// export maps a public export onto the gateway's; errors as for reads.
func (s *Server) export(ctx context.Context, sessionID string) ([]byte, error) {
	d, err := s.gateway.ExportWorkspace(ctx, sessionID)
	if err != nil {
		return nil, readError(err)
	}
	return d.Data, nil
}

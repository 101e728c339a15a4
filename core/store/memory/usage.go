package memory

import (
	"context"

	"github.com/agentwire/agentwire/core/store"
)

func (s *Store) ProjectUsage(ctx context.Context, project string) (store.Usage, error) {
	if err := s.lock(ctx); err != nil {
		return store.Usage{}, err
	}
	defer s.mu.Unlock()
	var u store.Usage
	for _, x := range s.sessions {
		if x.Project == project {
			u.Sessions++
			u.Bytes += int64(len(x.Options))
		}
	}
	for _, t := range s.turns {
		if s.sessions[t.SessionID].Project != project {
			continue
		}
		if t.State == store.TurnQueued {
			u.QueuedTurns++
		}
		u.Bytes += int64(len(t.Input))
		for _, in := range s.inputs[t.ID] {
			u.Bytes += int64(len(in.Content))
		}
		for _, e := range s.events[t.ID] {
			u.Bytes += int64(len(e.Payload))
		}
	}
	return u, nil
}

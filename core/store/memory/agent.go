package memory

import (
	"context"
	"sort"

	"github.com/agentwire/agentwire/core/store"
)

// Agents: every version of each Agent, by ID.

func (s *Store) PutAgent(ctx context.Context, a store.Agent) error {
	if a.Version < 1 || a.ID == "" {
		return store.ErrInvalid
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.agents == nil {
		s.agents = map[string][]store.Agent{}
	}
	vs := s.agents[a.ID]
	if len(vs) != a.Version-1 || (len(vs) > 0 && vs[0].Project != a.Project) {
		return store.ErrConflict
	}
	a.Definition = clone(a.Definition)
	s.agents[a.ID] = append(vs, a)
	return nil
}

func (s *Store) GetAgent(ctx context.Context, id string, version int) (store.Agent, error) {
	if err := s.lock(ctx); err != nil {
		return store.Agent{}, err
	}
	defer s.mu.Unlock()
	vs := s.agents[id]
	switch {
	case len(vs) == 0, version > len(vs), version < 0:
		return store.Agent{}, store.ErrNotFound
	case version == 0:
		version = len(vs)
	}
	a := vs[version-1]
	a.Definition = clone(a.Definition)
	return a, nil
}

func (s *Store) ListAgents(ctx context.Context, project string) ([]store.Agent, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Agent
	first := map[string]store.Agent{}
	for id, vs := range s.agents {
		if len(vs) > 0 && vs[0].Project == project {
			a := vs[len(vs)-1]
			a.Definition = clone(a.Definition)
			out = append(out, a)
			first[id] = vs[0]
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := first[out[i].ID], first[out[j].ID]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

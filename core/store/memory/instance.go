package memory

import (
	"context"
	"sort"

	"github.com/agentwire/agentwire/core/store"
)

// Generic machine instances (store.Instances), keyed by machine and key.

type instanceKey struct{ machine, key string }

func (s *Store) MoveInstance(ctx context.Context, m store.Move) (store.Instance, error) {
	if err := m.Validate(); err != nil {
		return store.Instance{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.Instance{}, err
	}
	defer s.mu.Unlock()
	if s.instances == nil {
		s.instances = map[instanceKey]store.Instance{}
	}
	k := instanceKey{m.Machine, m.Key}
	in, ok := s.instances[k]
	switch {
	case m.From == "" && ok:
		return store.Instance{}, store.ErrConflict
	case m.From == "":
		in = store.Instance{Machine: m.Machine, Key: m.Key}
	case !ok:
		return store.Instance{}, store.ErrNotFound
	case in.Settled || in.State != m.From || (m.Version != 0 && in.Version != m.Version):
		return store.Instance{}, store.ErrStale
	}
	in.State, in.Settled, in.UpdatedAt = m.To, m.Settles(), m.At
	in.Version++
	s.instances[k] = in
	return in, nil
}

func (s *Store) GetInstance(ctx context.Context, machine, key string) (store.Instance, error) {
	if err := s.lock(ctx); err != nil {
		return store.Instance{}, err
	}
	defer s.mu.Unlock()
	in, ok := s.instances[instanceKey{machine, key}]
	if !ok {
		return store.Instance{}, store.ErrNotFound
	}
	return in, nil
}

func (s *Store) OpenInstances(ctx context.Context, machine string) ([]store.Instance, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Instance
	for k, in := range s.instances {
		if k.machine == machine && !in.Settled {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.Before(out[j].UpdatedAt)
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

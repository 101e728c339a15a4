package memory

import (
	"context"
	"sort"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm/suspension"
)

// Suspension attempts and initialization outcomes. The maps are created
// lazily so that New stays as it is.

func (s *Store) susp() map[string]store.Suspension {
	if s.suspensions == nil {
		s.suspensions = map[string]store.Suspension{}
	}
	return s.suspensions
}

func (s *Store) CreateSuspension(ctx context.Context, x store.Suspension) error {
	if err := (store.Move{Machine: suspension.Name, Key: x.ID, To: x.State}).Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m := s.susp()
	if _, ok := m[x.ID]; ok {
		return store.ErrConflict
	}
	for _, o := range m {
		if o.EnvironmentID == x.EnvironmentID && !o.Settled {
			return store.ErrConflict
		}
	}
	if x.UpdatedAt.IsZero() {
		x.UpdatedAt = x.CreatedAt
	}
	m[x.ID] = x
	return nil
}

func (s *Store) GetSuspension(ctx context.Context, id string) (store.Suspension, error) {
	if err := s.lock(ctx); err != nil {
		return store.Suspension{}, err
	}
	defer s.mu.Unlock()
	x, ok := s.susp()[id]
	if !ok {
		return store.Suspension{}, store.ErrNotFound
	}
	return x, nil
}

func (s *Store) TransitionSuspension(ctx context.Context, mv store.Move, code string) error {
	if err := mv.ValidateFor(suspension.Name); err != nil {
		return err
	}
	id, from, to, settled, at := mv.Key, mv.From, mv.To, mv.Settles(), mv.At
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m := s.susp()
	x, ok := m[id]
	if !ok {
		return store.ErrNotFound
	}
	if x.Settled || x.State != from {
		return store.ErrStale
	}
	x.State, x.Settled, x.UpdatedAt = to, settled, at
	if code != "" {
		x.ErrorCode = code
	}
	m[id] = x
	return nil
}

func (s *Store) AdoptSuspension(ctx context.Context, id, state string, epoch uint64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	m := s.susp()
	x, ok := m[id]
	if !ok {
		return store.ErrNotFound
	}
	if x.Settled || x.State != state {
		return store.ErrStale
	}
	x.OwnerEpoch = epoch
	m[id] = x
	return nil
}

func (s *Store) LatestSuspension(ctx context.Context, environmentID string) (store.Suspension, error) {
	if err := s.lock(ctx); err != nil {
		return store.Suspension{}, err
	}
	defer s.mu.Unlock()
	var best store.Suspension
	found := false
	for _, x := range s.susp() {
		if x.EnvironmentID != environmentID {
			continue
		}
		if !found || x.CreatedAt.After(best.CreatedAt) || (x.CreatedAt.Equal(best.CreatedAt) && x.ID > best.ID) {
			best, found = x, true
		}
	}
	if !found {
		return store.Suspension{}, store.ErrNotFound
	}
	return best, nil
}

func (s *Store) OpenSuspensions(ctx context.Context) ([]store.Suspension, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Suspension
	for _, x := range s.susp() {
		if !x.Settled {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (s *Store) RecordInitialization(ctx context.Context, i store.Initialization) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.envs[i.EnvironmentID]; !ok {
		return store.ErrNotFound
	}
	if s.inits == nil {
		s.inits = map[string]store.Initialization{}
	}
	if old, ok := s.inits[i.EnvironmentID]; ok && old.At.After(i.At) {
		return nil
	}
	s.inits[i.EnvironmentID] = i
	return nil
}

func (s *Store) GetInitialization(ctx context.Context, environmentID string) (store.Initialization, error) {
	if err := s.lock(ctx); err != nil {
		return store.Initialization{}, err
	}
	defer s.mu.Unlock()
	i, ok := s.inits[environmentID]
	if !ok {
		return store.Initialization{}, store.ErrNotFound
	}
	return i, nil
}

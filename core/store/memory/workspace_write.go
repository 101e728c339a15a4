package memory

import (
	"context"
	"sort"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm/workspace_write"
)

// Workspace-write reservations: one held owner per Session, each move
// conditional on the expected state, all under the store's one lock.

func (s *Store) ReserveWorkspaceWrite(ctx context.Context, w store.WorkspaceWrite) error {
	if err := (store.Move{Machine: workspace_write.Name, Key: w.MutationID, To: w.State}).Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.writes[w.MutationID]; ok {
		return store.ErrConflict
	}
	for _, x := range s.writes {
		if x.SessionID == w.SessionID && x.Outcome == "" {
			return store.ErrConflict
		}
	}
	w.Outcome, w.SettledAt = "", time.Time{}
	w.ErrorCode, w.Reason, w.Resolution, w.Note = "", "", "", ""
	s.writes[w.MutationID] = w
	return nil
}

func (s *Store) SettleWorkspaceWrite(ctx context.Context, mutationID, outcome string, at time.Time) error {
	if outcome == "" {
		return store.ErrInvalid
	}
	return s.moveWrite(ctx, mutationID, func(w *store.WorkspaceWrite) bool {
		w.Outcome, w.SettledAt = outcome, at
		return true
	})
}

func (s *Store) TransitionWorkspaceWrite(ctx context.Context, m store.Move, release bool, code, reason string) error {
	if err := m.ValidateFor(workspace_write.Name); err != nil {
		return err
	}
	mutationID, from, to, at := m.Key, m.From, m.To, m.At
	return s.moveWrite(ctx, mutationID, func(w *store.WorkspaceWrite) bool {
		if w.State != from {
			return false
		}
		w.State = to
		if release {
			w.Outcome, w.SettledAt = to, at
		}
		if code != "" {
			w.ErrorCode = code
		}
		if reason != "" {
			w.Reason = reason
		}
		return true
	})
}

func (s *Store) ResolveWorkspaceWrite(ctx context.Context, mutationID, resolution, note string, at time.Time) error {
	if resolution == "" {
		return store.ErrInvalid
	}
	return s.moveWrite(ctx, mutationID, func(w *store.WorkspaceWrite) bool {
		if w.State != store.WriteStateUnknown {
			return false
		}
		w.Outcome, w.Resolution, w.Note, w.SettledAt = store.WriteResolved, resolution, note, at
		return true
	})
}

// moveWrite applies move to a held write; ErrStale when the owner was
// released or move refuses.
func (s *Store) moveWrite(ctx context.Context, mutationID string, move func(*store.WorkspaceWrite) bool) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	w, ok := s.writes[mutationID]
	if !ok {
		return store.ErrNotFound
	}
	if w.Outcome != "" || !move(&w) {
		return store.ErrStale
	}
	s.writes[mutationID] = w
	return nil
}

func (s *Store) GetWorkspaceWrite(ctx context.Context, mutationID string) (store.WorkspaceWrite, error) {
	if err := s.lock(ctx); err != nil {
		return store.WorkspaceWrite{}, err
	}
	defer s.mu.Unlock()
	w, ok := s.writes[mutationID]
	if !ok {
		return store.WorkspaceWrite{}, store.ErrNotFound
	}
	return w, nil
}

func (s *Store) UnsettledWorkspaceWrite(ctx context.Context, sessionID string) (store.WorkspaceWrite, error) {
	if err := s.lock(ctx); err != nil {
		return store.WorkspaceWrite{}, err
	}
	defer s.mu.Unlock()
	for _, w := range s.writes {
		if w.SessionID == sessionID && w.Outcome == "" {
			return w, nil
		}
	}
	return store.WorkspaceWrite{}, store.ErrNotFound
}

func (s *Store) OpenWorkspaceWrites(ctx context.Context) ([]store.WorkspaceWrite, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.WorkspaceWrite
	for _, w := range s.writes {
		if w.Outcome == "" {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].MutationID < out[j].MutationID
	})
	return out, nil
}

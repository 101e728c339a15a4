package memory

import (
	"context"
	"slices"
	"strings"

	"github.com/agentwire/agentwire/core/store"
)

// ListSessions lists a project's Sessions ("" lists every project's),
// newest first, at most limit of them. It is no method of store.Store:
// the web console shows a project's Sessions when its store can list them.
func (s *Store) ListSessions(ctx context.Context, project string, limit int) ([]store.Session, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Session
	for _, x := range s.sessions {
		if project == "" || x.Project == project {
			x.Options = clone(x.Options)
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b store.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

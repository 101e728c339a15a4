package postgres

import (
	"context"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
)

// ListSessions lists a project's Sessions ("" lists every project's),
// newest first, at most limit of them (limit <= 0: all). Like the other
// stores' it is no method of store.Store: the web console shows a
// project's Sessions when its store can list them.
func (s *Store) ListSessions(ctx context.Context, project string, limit int) ([]store.Session, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT id, project, agent_kind, environment_id, options, created_at, started, native_session_id, agent_id, agent_version
		FROM sessions WHERE $1 = '' OR project = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, project, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var x store.Session
		var env *string
		if err := rows.Scan(&x.ID, &x.Project, &x.AgentKind, &env, (*[]byte)(&x.Options), at(&x.CreatedAt), &x.Started, &x.NativeSessionID, &x.AgentID, &x.AgentVersion); err != nil {
			return nil, fmt.Errorf("postgres: list sessions: %w", err)
		}
		if env != nil {
			x.EnvironmentID = *env
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return out, nil
}

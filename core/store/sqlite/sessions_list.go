package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
)

// ListSessions lists a project's Sessions ("" lists every project's),
// newest first, at most limit of them (limit <= 0: all). It is no method
// of store.Store: the web console shows a project's Sessions when its
// store can list them.
func (s *Store) ListSessions(ctx context.Context, project string, limit int) ([]store.Session, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, project, agent_kind, environment_id, options, created_at, started, native_session_id, agent_id, agent_version
		FROM sessions WHERE ? = '' OR project = ? ORDER BY created_at DESC, id DESC LIMIT ?`, project, project, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var x store.Session
		var env sql.NullString
		var at int64
		if err := rows.Scan(&x.ID, &x.Project, &x.AgentKind, &env, (*[]byte)(&x.Options), &at, &x.Started, &x.NativeSessionID, &x.AgentID, &x.AgentVersion); err != nil {
			return nil, fmt.Errorf("sqlite: list sessions: %w", err)
		}
		x.EnvironmentID, x.CreatedAt = env.String, fromMS(at)
		out = append(out, x)
	}
	return out, rows.Err()
}

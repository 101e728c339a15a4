package postgres

import (
	"context"

	"github.com/agentwire/agentwire/core/store"
)

// ProjectUsage counts with one read. octet_length() of a bytea comes from
// the value's header, so the journal's payloads are not read to be
// summed; the sums still visit every row of the project, which is why the
// API keeps the result for a few seconds (core/api/quota.go).
func (s *Store) ProjectUsage(ctx context.Context, project string) (store.Usage, error) {
	if err := s.check(ctx); err != nil {
		return store.Usage{}, err
	}
	var u store.Usage
	err := s.pool.QueryRow(ctx, `SELECT
	(SELECT COUNT(*) FROM sessions WHERE project = $1),
	(SELECT COUNT(*) FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.project = $1 AND t.state = 'queued'),
	(SELECT COALESCE(SUM(octet_length(options)), 0) FROM sessions WHERE project = $1)
	+ (SELECT COALESCE(SUM(octet_length(t.input)), 0) FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.project = $1)
	+ (SELECT COALESCE(SUM(octet_length(i.content)), 0) FROM inputs i JOIN turns t ON t.id = i.turn_id JOIN sessions s ON s.id = t.session_id WHERE s.project = $1)
	+ (SELECT COALESCE(SUM(octet_length(e.payload)), 0) FROM events e JOIN turns t ON t.id = e.turn_id JOIN sessions s ON s.id = t.session_id WHERE s.project = $1)`,
		project).Scan(&u.Sessions, &u.QueuedTurns, &u.Bytes)
	if err != nil {
		return store.Usage{}, s.fail("project usage of "+project, err)
	}
	return u, nil
}

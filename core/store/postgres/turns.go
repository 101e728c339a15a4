package postgres

import (
	"context"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

func (s *Store) CreateEnvironment(ctx context.Context, e store.Environment) error {
	_, err := s.exec(ctx, "creating Environment "+e.ID, `INSERT INTO environments(id, project, type, binding, initialization, device_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		e.ID, e.Project, e.Type, blob(e.Binding), blob(e.Initialization), e.DeviceID, ts(e.CreatedAt))
	return err
}

const envCols = `id, project, type, binding, initialization, device_id, created_at`

func scanEnvironment(sc scanner) (store.Environment, error) {
	var e store.Environment
	err := sc.Scan(&e.ID, &e.Project, &e.Type, (*[]byte)(&e.Binding), (*[]byte)(&e.Initialization), &e.DeviceID, at(&e.CreatedAt))
	return e, err
}

func (s *Store) GetEnvironment(ctx context.Context, id string) (store.Environment, error) {
	if err := s.check(ctx); err != nil {
		return store.Environment{}, err
	}
	e, err := scanEnvironment(s.pool.QueryRow(ctx, `SELECT `+envCols+` FROM environments WHERE id = $1`, id))
	return e, s.notFound("reading Environment "+id, err)
}

func (s *Store) ListEnvironments(ctx context.Context, project string) ([]store.Environment, error) {
	out, err := collect(ctx, s, "listing Environments", `SELECT `+envCols+` FROM environments
		WHERE $1 = '' OR project = $1 ORDER BY created_at, id`, scanEnvironment, project)
	if out == nil && err == nil {
		out = []store.Environment{}
	}
	return out, err
}

func (s *Store) CreateSession(ctx context.Context, x store.Session) error {
	var env any
	if x.EnvironmentID != "" {
		env = x.EnvironmentID
	}
	// The guard turns a missing Environment into "no row inserted"
	// rather than a foreign-key error, so the two failures stay apart.
	n, err := s.exec(ctx, "creating Session "+x.ID, `INSERT INTO sessions(id, project, agent_kind, environment_id, options, created_at, agent_id, agent_version)
		SELECT $1, $2, $3, $4::text, $5, $6, $7, $8 WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM environments WHERE id = $4::text)`,
		x.ID, x.Project, x.AgentKind, env, blob(x.Options), ts(x.CreatedAt), x.AgentID, x.AgentVersion)
	if err == nil && n == 0 {
		return wrap("creating Session "+x.ID+": no Environment "+x.EnvironmentID, store.ErrNotFound)
	}
	return err
}

func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	if err := s.check(ctx); err != nil {
		return store.Session{}, err
	}
	x := store.Session{ID: id}
	var env *string
	err := s.pool.QueryRow(ctx, `SELECT project, agent_kind, environment_id, options, created_at, started, native_session_id, agent_id, agent_version
		FROM sessions WHERE id = $1`, id).
		Scan(&x.Project, &x.AgentKind, &env, (*[]byte)(&x.Options), at(&x.CreatedAt), &x.Started, &x.NativeSessionID, &x.AgentID, &x.AgentVersion)
	if env != nil {
		x.EnvironmentID = *env
	}
	return x, s.notFound("reading Session "+id, err)
}

func (s *Store) RecordNativeSession(ctx context.Context, sessionID, nativeID string) error {
	if nativeID == "" {
		return store.ErrInvalid
	}
	return s.conditional(ctx, "recording the native Session of "+sessionID, "sessions", "id", sessionID,
		`UPDATE sessions SET native_session_id = $1 WHERE id = $2 AND native_session_id IN ('', $1)`,
		nativeID, sessionID)
}

func (s *Store) CreateTurn(ctx context.Context, t store.Turn) error {
	n, err := s.exec(ctx, "creating Turn "+t.ID, `INSERT INTO turns(id, session_id, input, state, not_before, created_at, updated_at)
		SELECT $1, $2, $3, $4, $5, $6, $6 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $2)`,
		t.ID, t.SessionID, blob(t.Input), string(store.TurnQueued), ts(t.NotBefore), ts(t.CreatedAt))
	if err == nil && n == 0 {
		return wrap("creating Turn "+t.ID+": no Session "+t.SessionID, store.ErrNotFound)
	}
	return err
}

const turnCols = `id, session_id, input, state, attempts, not_before, device_id, owner_epoch, run_id, input_cursor,
	reason, engine_error_code, engine_http_status, evidence, created_at, updated_at`

func scanTurn(sc scanner) (store.Turn, error) {
	var t store.Turn
	var state string
	err := sc.Scan(&t.ID, &t.SessionID, (*[]byte)(&t.Input), &state, &t.Attempts, at(&t.NotBefore), &t.DeviceID, &t.OwnerEpoch, &t.RunID,
		&t.InputCursor, &t.Outcome.Reason, &t.Outcome.EngineErrorCode, &t.Outcome.EngineHTTPStatus, (*[]byte)(&t.Outcome.Evidence),
		at(&t.CreatedAt), at(&t.UpdatedAt))
	t.State = store.TurnState(state)
	return t, err
}

func (s *Store) GetTurn(ctx context.Context, id string) (store.Turn, error) {
	if err := s.check(ctx); err != nil {
		return store.Turn{}, err
	}
	t, err := scanTurn(s.pool.QueryRow(ctx, `SELECT `+turnCols+` FROM turns WHERE id = $1`, id))
	return t, s.notFound("reading Turn "+id, err)
}

func (s *Store) DueTurns(ctx context.Context, now time.Time, after string, limit int) ([]store.Turn, error) {
	// A Turn is listed only when no older Turn of its Session is queued
	// (turns_queued_session answers that per row). The page's cursor is
	// the (created_at, n) of the Turn named by after, whatever its state
	// now; an unknown one yields NULL, which nothing comes after.
	return collect(ctx, s, "listing due Turns", `SELECT `+turnCols+` FROM turns t
		WHERE state = 'queued' AND COALESCE(not_before, '-infinity') <= COALESCE($1::timestamptz, '-infinity')
		AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.session_id = t.session_id AND o.state = 'queued'
			AND (o.created_at, o.n) < (t.created_at, t.n))
		AND ($2 = '' OR (created_at, n) > (SELECT created_at, n FROM turns WHERE id = $2))
		ORDER BY created_at, n LIMIT $3`, scanTurn, ts(now), after, limitOf(limit))
}

func (s *Store) SessionTurns(ctx context.Context, sessionID string, limit int) ([]store.Turn, error) {
	return collect(ctx, s, "listing the Turns of Session "+sessionID, `SELECT `+turnCols+` FROM (
		SELECT * FROM turns WHERE session_id = $1 ORDER BY created_at DESC, n DESC LIMIT $2) t
		ORDER BY created_at, n`, scanTurn, sessionID, limitOf(limit))
}

func (s *Store) ActiveTurns(ctx context.Context) ([]store.Turn, error) {
	return collect(ctx, s, "listing active Turns", `SELECT `+turnCols+` FROM turns
		WHERE state IN ('claimed', 'cancelling', 'starting', 'running') ORDER BY created_at, n`, scanTurn)
}

// The four forms of a Turn move (store.TurnMove): every one is
// conditional on the Turn's state and Run, so a move made from a state the
// Turn has left changes nothing. Each is wrapped by moveSQL, which also
// says whether the Turn exists, so a move that failed is classified in the
// same statement (and a batch needs no read after it).
const (
	// claimTurnSQL: a due queued Turn placed on a device owner. Arguments:
	// id, from, to, device, epoch, run, at, claim at.
	claimTurnSQL = `UPDATE turns SET state = $3, device_id = $4, owner_epoch = $5, run_id = $6, attempts = attempts + 1, updated_at = $7
	WHERE id = $1 AND state = $2 AND run_id = '' AND COALESCE(not_before, '-infinity') <= COALESCE($8::timestamptz, '-infinity')
	AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.session_id = turns.session_id AND o.id <> turns.id
		AND o.state IN ('claimed', 'cancelling', 'starting', 'running')) RETURNING 1`
	// requeueTurnSQL: back to the queue, its placement cleared. Arguments:
	// id, from, to, run, not before, at.
	requeueTurnSQL = `UPDATE turns SET state = $3, device_id = '', owner_epoch = 0, run_id = '', not_before = $5, updated_at = $6
	WHERE id = $1 AND state = $2 AND run_id = $4 RETURNING 1`
	// finishTurnSQL: a terminal state with its outcome. Arguments: id,
	// from, to, run, reason, engine code, engine status, evidence, at.
	finishTurnSQL = `UPDATE turns SET state = $3, reason = $5, engine_error_code = $6, engine_http_status = $7, evidence = $8, updated_at = $9
	WHERE id = $1 AND state = $2 AND run_id = $4 RETURNING 1`
	// moveTurnSQL: any other move (the turns_started trigger marks the
	// Session started when the Turn runs). Arguments: id, from, to, run, at.
	moveTurnSQL = `UPDATE turns SET state = $3, updated_at = $5 WHERE id = $1 AND state = $2 AND run_id = $4 RETURNING 1`
)

// moveSQL wraps a move's UPDATE: it returns whether the move applied and
// whether the Turn exists ($1 is the Turn's ID in every form).
func moveSQL(update string) string {
	return `WITH moved AS (` + update + `) SELECT EXISTS (SELECT 1 FROM moved), EXISTS (SELECT 1 FROM turns WHERE id = $1)`
}

var (
	claimMoveSQL   = moveSQL(claimTurnSQL)
	requeueMoveSQL = moveSQL(requeueTurnSQL)
	finishMoveSQL  = moveSQL(finishTurnSQL)
	plainMoveSQL   = moveSQL(moveTurnSQL)
)

// moveStatement is the statement and arguments of one move.
func moveStatement(m store.TurnMove) (string, []any) {
	base := []any{m.TurnID, string(m.From), string(m.To)}
	switch {
	case m.Claim != nil:
		c := m.Claim
		return claimMoveSQL, append(base, c.DeviceID, c.OwnerEpoch, c.RunID, ts(m.At), ts(c.At))
	case m.To == store.TurnQueued:
		return requeueMoveSQL, append(base, m.RunID, ts(m.NotBefore), ts(m.At))
	case m.Outcome != nil:
		o := m.Outcome
		return finishMoveSQL, append(base, m.RunID, o.Reason, o.EngineErrorCode, o.EngineHTTPStatus, blob(o.Evidence), ts(m.At))
	}
	return plainMoveSQL, append(base, m.RunID, ts(m.At))
}

// moveResult is a move's own result from moveSQL's two answers.
func moveResult(m store.TurnMove, moved, exists bool) error {
	switch {
	case moved:
		return nil
	case !exists:
		return wrap(moveOp(m), store.ErrNotFound)
	}
	return wrap(moveOp(m), store.ErrStale)
}

func moveOp(m store.TurnMove) string {
	return "moving Turn " + m.TurnID + " from " + string(m.From) + " to " + string(m.To)
}

func (s *Store) MoveTurn(ctx context.Context, m store.TurnMove) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Claim != nil {
		// A claim locks its Session's row first (Commit): see
		// lockSessionsSQL.
		res, err := s.Commit(ctx, store.Batch{Moves: []store.TurnMove{m}})
		if err != nil {
			return err
		}
		return res.Moves[0]
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	q, args := moveStatement(m)
	var moved, exists bool
	if err := s.pool.QueryRow(ctx, q, args...).Scan(&moved, &exists); err != nil {
		return s.fail(moveOp(m), err)
	}
	return moveResult(m, moved, exists)
}

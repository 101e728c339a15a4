package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

func (s *Store) CreateEnvironment(ctx context.Context, e store.Environment) error {
	_, err := s.exec(ctx, `INSERT INTO environments(id, project, type, binding, initialization, device_id, created_at) VALUES (?,?,?,?,?,?,?)`,
		e.ID, e.Project, e.Type, blob(e.Binding), blob(e.Initialization), e.DeviceID, ms(e.CreatedAt))
	return err
}

const envCols = `id, project, type, binding, initialization, device_id, created_at`

func scanEnvironment(sc scanner) (store.Environment, error) {
	var e store.Environment
	var at int64
	err := sc.Scan(&e.ID, &e.Project, &e.Type, (*[]byte)(&e.Binding), (*[]byte)(&e.Initialization), &e.DeviceID, &at)
	e.CreatedAt = fromMS(at)
	return e, err
}

func (s *Store) GetEnvironment(ctx context.Context, id string) (store.Environment, error) {
	if err := s.check(ctx); err != nil {
		return store.Environment{}, err
	}
	e, err := scanEnvironment(s.r.QueryRowContext(ctx, `SELECT `+envCols+` FROM environments WHERE id = ?`, id))
	return e, notFound(err)
}

func (s *Store) ListEnvironments(ctx context.Context, project string) ([]store.Environment, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+envCols+` FROM environments WHERE ? = '' OR project = ? ORDER BY created_at, id`, project, project)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	out := []store.Environment{}
	for rows.Next() {
		e, err := scanEnvironment(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (s *Store) CreateSession(ctx context.Context, x store.Session) error {
	var env any
	if x.EnvironmentID != "" {
		env = x.EnvironmentID
	}
	// The guard turns a missing Environment into "no row inserted"
	// rather than a foreign-key error, so the two failures stay apart.
	n, err := s.exec(ctx, `INSERT INTO sessions(id, project, agent_kind, environment_id, options, created_at, agent_id, agent_version)
		SELECT ?,?,?,?,?,?,?,? WHERE ? IS NULL OR EXISTS (SELECT 1 FROM environments WHERE id = ?)`,
		x.ID, x.Project, x.AgentKind, env, blob(x.Options), ms(x.CreatedAt), x.AgentID, x.AgentVersion, env, env)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	if err := s.check(ctx); err != nil {
		return store.Session{}, err
	}
	x := store.Session{ID: id}
	var env sql.NullString
	var at int64
	err := s.r.QueryRowContext(ctx, `SELECT project, agent_kind, environment_id, options, created_at, started, native_session_id, agent_id, agent_version
		FROM sessions WHERE id = ?`, id).
		Scan(&x.Project, &x.AgentKind, &env, (*[]byte)(&x.Options), &at, &x.Started, &x.NativeSessionID, &x.AgentID, &x.AgentVersion)
	x.EnvironmentID, x.CreatedAt = env.String, fromMS(at)
	return x, notFound(err)
}

func (s *Store) RecordNativeSession(ctx context.Context, sessionID, nativeID string) error {
	if nativeID == "" {
		return store.ErrInvalid
	}
	return s.conditional(ctx, "sessions", "id", sessionID,
		`UPDATE sessions SET native_session_id = ? WHERE id = ? AND native_session_id IN ('', ?)`,
		nativeID, sessionID, nativeID)
}

func (s *Store) CreateTurn(ctx context.Context, t store.Turn) error {
	n, err := s.exec(ctx, createTurnSQL, createArgs(t)...)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// createTurnSQL inserts a queued Turn of an existing Session.
const createTurnSQL = `INSERT INTO turns(id, session_id, input, state, not_before, created_at, updated_at)
	SELECT ?,?,?,?,?,?,? WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?)`

func createArgs(t store.Turn) []any {
	return []any{t.ID, t.SessionID, blob(t.Input), string(store.TurnQueued), ms(t.NotBefore), ms(t.CreatedAt), ms(t.CreatedAt), t.SessionID}
}

const turnCols = `id, session_id, input, state, attempts, not_before, device_id, owner_epoch, run_id, input_cursor,
	reason, engine_error_code, engine_http_status, evidence, created_at, updated_at`

type scanner interface{ Scan(...any) error }

func scanTurn(sc scanner) (store.Turn, error) {
	var t store.Turn
	var state string
	var notBefore, created, updated int64
	err := sc.Scan(&t.ID, &t.SessionID, (*[]byte)(&t.Input), &state, &t.Attempts, &notBefore, &t.DeviceID, &t.OwnerEpoch, &t.RunID,
		&t.InputCursor, &t.Outcome.Reason, &t.Outcome.EngineErrorCode, &t.Outcome.EngineHTTPStatus, (*[]byte)(&t.Outcome.Evidence),
		&created, &updated)
	t.State = store.TurnState(state)
	t.NotBefore, t.CreatedAt, t.UpdatedAt = fromMS(notBefore), fromMS(created), fromMS(updated)
	return t, err
}

func (s *Store) GetTurn(ctx context.Context, id string) (store.Turn, error) {
	if err := s.check(ctx); err != nil {
		return store.Turn{}, err
	}
	t, err := scanTurn(s.r.QueryRowContext(ctx, `SELECT `+turnCols+` FROM turns WHERE id = ?`, id))
	return t, notFound(err)
}

func (s *Store) turns(ctx context.Context, q string, args ...any) ([]store.Turn, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Turn
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *Store) DueTurns(ctx context.Context, now time.Time, after string, limit int) ([]store.Turn, error) {
	if limit <= 0 {
		limit = -1
	}
	// A Turn is listed only when no older Turn of its Session is queued;
	// the turns_session index answers that per row.
	const heads = `SELECT ` + turnCols + ` FROM turns t WHERE state = ? AND not_before <= ?
		AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.session_id = t.session_id AND o.state = ?
			AND (o.created_at < t.created_at OR (o.created_at = t.created_at AND o.rowid < t.rowid)))`
	if after == "" {
		return s.turns(ctx, heads+` ORDER BY created_at, rowid LIMIT ?`,
			string(store.TurnQueued), ms(now), string(store.TurnQueued), limit)
	}
	return s.turns(ctx, heads+` AND (created_at, rowid) > (SELECT created_at, rowid FROM turns WHERE id = ?)
		ORDER BY created_at, rowid LIMIT ?`,
		string(store.TurnQueued), ms(now), string(store.TurnQueued), after, limit)
}

func (s *Store) SessionTurns(ctx context.Context, sessionID string, limit int) ([]store.Turn, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	return s.turns(ctx, `SELECT `+turnCols+` FROM (SELECT rowid AS r, * FROM turns WHERE session_id = ?
		ORDER BY created_at DESC, rowid DESC LIMIT ?) ORDER BY created_at, r`, sessionID, limit)
}

func (s *Store) ActiveTurns(ctx context.Context) ([]store.Turn, error) {
	return s.turns(ctx, `SELECT `+turnCols+` FROM turns WHERE state IN (?, ?, ?, ?) ORDER BY created_at, rowid`,
		string(store.TurnClaimed), string(store.TurnCancelling), string(store.TurnStarting), string(store.TurnRunning))
}

// The four forms of a Turn move (store.TurnMove): every one is
// conditional on the Turn's state and Run, so a move made from a state the
// Turn has left changes nothing (ErrStale).
const (
	// claimTurnSQL: a due queued Turn placed on a device owner. Arguments:
	// to, device, epoch, run, at, id, from, at.
	claimTurnSQL = `UPDATE turns SET state = ?, device_id = ?, owner_epoch = ?, run_id = ?, attempts = attempts + 1, updated_at = ?
	WHERE id = ? AND state = ? AND run_id = '' AND not_before <= ?
	AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.session_id = turns.session_id AND o.id != turns.id
		AND o.state IN ('claimed', 'cancelling', 'starting', 'running'))`
	// requeueTurnSQL: back to the queue, its placement cleared. Arguments:
	// to, not before, at, id, from, run.
	requeueTurnSQL = `UPDATE turns SET state = ?, device_id = '', owner_epoch = 0, run_id = '', not_before = ?, updated_at = ?
	WHERE id = ? AND state = ? AND run_id = ?`
	// finishTurnSQL: a terminal state with its outcome. Arguments: to,
	// reason, engine code, engine status, evidence, at, id, from, run.
	finishTurnSQL = `UPDATE turns SET state = ?, reason = ?, engine_error_code = ?, engine_http_status = ?, evidence = ?, updated_at = ?
	WHERE id = ? AND state = ? AND run_id = ?`
	// moveTurnSQL: any other move (the turns_started trigger marks the
	// Session started when the Turn runs). Arguments: to, at, id, from, run.
	moveTurnSQL = `UPDATE turns SET state = ?, updated_at = ? WHERE id = ? AND state = ? AND run_id = ?`
)

// moveStatement is the statement and arguments of one move.
func moveStatement(m store.TurnMove) (string, []any) {
	switch {
	case m.Claim != nil:
		c := m.Claim
		return claimTurnSQL, []any{string(m.To), c.DeviceID, c.OwnerEpoch, c.RunID, ms(m.At), m.TurnID, string(m.From), ms(c.At)}
	case m.To == store.TurnQueued:
		return requeueTurnSQL, []any{string(m.To), ms(m.NotBefore), ms(m.At), m.TurnID, string(m.From), m.RunID}
	case m.Outcome != nil:
		o := m.Outcome
		return finishTurnSQL, []any{string(m.To), o.Reason, o.EngineErrorCode, o.EngineHTTPStatus, blob(o.Evidence), ms(m.At), m.TurnID, string(m.From), m.RunID}
	}
	return moveTurnSQL, []any{string(m.To), ms(m.At), m.TurnID, string(m.From), m.RunID}
}

func (s *Store) MoveTurn(ctx context.Context, m store.TurnMove) error {
	if err := m.Validate(); err != nil {
		return err
	}
	q, args := moveStatement(m)
	return s.conditional(ctx, "turns", "id", m.TurnID, q, args...)
}

// conditionalIn is one move of a Commit, inside its
// transaction: its own result (nil, ErrStale, ErrNotFound), and an error
// only when the transaction itself failed.
func conditionalIn(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, turnID string, args []any) (result, err error) {
	r, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: moving Turn %s: %w", turnID, err)
	}
	if n, err := r.RowsAffected(); err != nil || n == 1 {
		return nil, err
	}
	// Classified inside the transaction: the writer's one connection is
	// the transaction's.
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM turns WHERE id = ?`, turnID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound, nil
	case err != nil:
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return store.ErrStale, nil
}

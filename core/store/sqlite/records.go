package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// insertSeq runs an INSERT ... SELECT that computes the next sequence
// number of a Turn inside the statement and returns it; no row means the
// Turn does not exist.
func (s *Store) insertSeq(ctx context.Context, q string, args ...any) (int64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	var seq int64
	err := s.w.QueryRowContext(ctx, q, args...).Scan(&seq)
	switch {
	case err == nil:
		return seq, nil
	case isConstraint(err):
		return 0, store.ErrConflict
	}
	return 0, notFound(err)
}

func (s *Store) AppendInput(ctx context.Context, in store.Input) (store.Input, error) {
	seq, err := s.insertSeq(ctx, `INSERT INTO inputs(turn_id, seq, id, content, created_at)
		SELECT ?, COALESCE((SELECT MAX(seq) FROM inputs WHERE turn_id = ?), 0) + 1, ?, ?, ?
		WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?) RETURNING seq`,
		in.TurnID, in.TurnID, in.ID, blob(in.Content), ms(in.CreatedAt), in.TurnID)
	if err != nil {
		return store.Input{}, err
	}
	in.Seq = seq
	return in, nil
}

func (s *Store) Inputs(ctx context.Context, turnID string, after int64) ([]store.Input, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, id, content, created_at FROM inputs WHERE turn_id = ? AND seq > ? ORDER BY seq`, turnID, after)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Input
	for rows.Next() {
		in := store.Input{TurnID: turnID}
		var at int64
		if err := rows.Scan(&in.Seq, &in.ID, (*[]byte)(&in.Content), &at); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		in.CreatedAt = fromMS(at)
		out = append(out, in)
	}
	return out, rows.Err()
}

func (s *Store) AdvanceInputCursor(ctx context.Context, turnID string, from, to int64) error {
	return s.conditional(ctx, "turns", "id", turnID,
		`UPDATE turns SET input_cursor = ?
		 WHERE id = ? AND input_cursor = ? AND ? > ? AND ? <= (SELECT COALESCE(MAX(seq), 0) FROM inputs WHERE turn_id = ?)`,
		to, turnID, from, to, from, to, turnID)
}

func (s *Store) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	res, err := s.Commit(ctx, store.Batch{Events: []store.Event{e}})
	if len(res.Events) == 0 || res.Events[0].Seq == 0 {
		return store.Event{}, err
	}
	return res.Events[0], err
}

// appendEventSQL inserts an event after its Turn's last and returns its
// sequence number; no row when the Turn does not exist. Arguments: turn,
// turn, run, type, payload, at, turn.
const appendEventSQL = `INSERT INTO events(turn_id, seq, run_id, type, payload, at)
	SELECT ?, COALESCE((SELECT MAX(seq) FROM events WHERE turn_id = ?), 0) + 1, ?, ?, ?, ?
	WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?) RETURNING seq`

// Commit writes the batch in one transaction with prepared statements
// (moves, appends, finishes): one commit (one fsync) for the whole batch.
func (s *Store) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	if err := s.check(ctx); err != nil {
		return store.BatchResult{}, err
	}
	// Prepared before the transaction: the single writer connection is
	// the transaction's until it ends.
	stmts := map[string]*sql.Stmt{}
	prepare := func(q string) error {
		if stmts[q] != nil {
			return nil
		}
		st, err := s.w.stmt(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		stmts[q] = st
		return nil
	}
	moveErrs := func(ms []store.TurnMove) ([]error, error) {
		out := make([]error, len(ms))
		for i, m := range ms {
			if out[i] = m.Validate(); out[i] != nil {
				continue
			}
			q, _ := moveStatement(m)
			if err := prepare(q); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	res := store.BatchResult{Events: make([]store.Event, len(b.Events))}
	var err error
	if res.Moves, err = moveErrs(b.Moves); err != nil {
		return store.BatchResult{}, err
	}
	if res.Finishes, err = moveErrs(b.Finishes); err != nil {
		return store.BatchResult{}, err
	}
	if len(b.Events) > 0 {
		if err := prepare(appendEventSQL); err != nil {
			return store.BatchResult{}, err
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.BatchResult{}, fmt.Errorf("sqlite: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	apply := func(ms []store.TurnMove, errs []error) error {
		for i, m := range ms {
			if errs[i] != nil {
				continue
			}
			q, args := moveStatement(m)
			var err error
			if errs[i], err = conditionalIn(ctx, tx, tx.StmtContext(ctx, stmts[q]), m.TurnID, args); err != nil {
				return err
			}
		}
		return nil
	}
	if err := apply(b.Moves, res.Moves); err != nil {
		return store.BatchResult{}, err
	}
	var missing []string
	if len(b.Events) > 0 {
		stmt := tx.StmtContext(ctx, stmts[appendEventSQL])
		for i, e := range b.Events {
			res.Events[i] = e
			err := stmt.QueryRowContext(ctx, e.TurnID, e.TurnID, e.RunID, e.Type, blob(e.Payload), ms(e.At), e.TurnID).Scan(&res.Events[i].Seq)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				missing = append(missing, e.TurnID)
			case err != nil:
				return store.BatchResult{}, fmt.Errorf("sqlite: appending an event: %w", err)
			}
		}
	}
	if err := apply(b.Finishes, res.Finishes); err != nil {
		return store.BatchResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return store.BatchResult{}, fmt.Errorf("sqlite: %w", err)
	}
	return res, store.MissingTurns(missing)
}

// EventSizes reads length(payload): on a BLOB column SQLite answers it
// from the record header, without loading the payload.
func (s *Store) EventSizes(ctx context.Context, turnID string, after int64, limit int) ([]store.EventSize, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, COALESCE(length(payload), 0) FROM events WHERE turn_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		turnID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.EventSize
	for rows.Next() {
		var e store.EventSize
		if err := rows.Scan(&e.Seq, &e.Bytes); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return out, nil
}

func (s *Store) Events(ctx context.Context, turnID string, after int64, limit int) ([]store.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, run_id, type, payload, at FROM events WHERE turn_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		turnID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		e := store.Event{TurnID: turnID}
		var at int64
		if err := rows.Scan(&e.Seq, &e.RunID, &e.Type, (*[]byte)(&e.Payload), &at); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

func (s *Store) LastEvent(ctx context.Context, turnID, typ string) (store.Event, error) {
	if err := s.check(ctx); err != nil {
		return store.Event{}, err
	}
	e := store.Event{TurnID: turnID}
	var at int64
	err := s.r.QueryRowContext(ctx, `SELECT seq, run_id, type, payload, at FROM events WHERE turn_id = ? AND type = ? ORDER BY seq DESC LIMIT 1`,
		turnID, typ).Scan(&e.Seq, &e.RunID, &e.Type, (*[]byte)(&e.Payload), &at)
	e.At = fromMS(at)
	return e, notFound(err)
}

func (s *Store) CreateInteraction(ctx context.Context, i store.Interaction) error {
	if i.State == "" {
		i.State = store.InteractionPending
	}
	n, err := s.exec(ctx, `INSERT INTO interactions(id, turn_id, run_id, kind, call_id, request, state, answer, created_at, updated_at)
		SELECT ?,?,?,?,?,?,?,?,?,? WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?)`,
		i.ID, i.TurnID, i.RunID, i.Kind, i.CallID, blob(i.Request), string(i.State), blob(i.Answer), ms(i.CreatedAt), ms(i.CreatedAt), i.TurnID)
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

const interactionCols = `id, turn_id, run_id, kind, call_id, request, state, answer, created_at, updated_at`

func scanInteraction(r scanner) (store.Interaction, error) {
	var i store.Interaction
	var state string
	var created, updated int64
	err := r.Scan(&i.ID, &i.TurnID, &i.RunID, &i.Kind, &i.CallID, (*[]byte)(&i.Request), &state, (*[]byte)(&i.Answer), &created, &updated)
	i.State, i.CreatedAt, i.UpdatedAt = store.InteractionState(state), fromMS(created), fromMS(updated)
	return i, notFound(err)
}

func (s *Store) GetInteraction(ctx context.Context, id string) (store.Interaction, error) {
	if err := s.check(ctx); err != nil {
		return store.Interaction{}, err
	}
	return scanInteraction(s.r.QueryRowContext(ctx, `SELECT `+interactionCols+` FROM interactions WHERE id = ?`, id))
}

func (s *Store) FunctionCall(ctx context.Context, turnID, callID string) (store.Interaction, error) {
	if err := s.check(ctx); err != nil {
		return store.Interaction{}, err
	}
	if callID == "" {
		return store.Interaction{}, store.ErrNotFound
	}
	return scanInteraction(s.r.QueryRowContext(ctx, `SELECT `+interactionCols+` FROM interactions
		WHERE turn_id = ? AND call_id = ? ORDER BY created_at DESC, id DESC LIMIT 1`, turnID, callID))
}

func (s *Store) TransitionInteraction(ctx context.Context, id string, from, to store.InteractionState, answer json.RawMessage, at time.Time) error {
	return s.conditional(ctx, "interactions", "id", id,
		`UPDATE interactions SET state = ?, answer = COALESCE(?, answer), updated_at = ? WHERE id = ? AND state = ?`,
		string(to), blob(answer), ms(at), id, string(from))
}

func (s *Store) AcquireOwner(ctx context.Context, deviceID string, at time.Time) (uint64, error) {
	return s.AcquireLease(ctx, deviceID, "", at, time.Time{})
}

func (s *Store) ReleaseOwner(ctx context.Context, deviceID string, epoch uint64, at time.Time) error {
	if _, err := s.exec(ctx, `UPDATE leases SET ended = 1 WHERE device_id = ? AND epoch = ?`, deviceID, epoch); err != nil {
		return err
	}
	return s.conditional(ctx, "devices", "id", deviceID,
		`UPDATE devices SET connected = 0, declaration = NULL, last_seen = ? WHERE id = ? AND owner_epoch = ?`,
		ms(at), deviceID, epoch)
}

func (s *Store) RecordDeclaration(ctx context.Context, deviceID string, epoch uint64, decl json.RawMessage, at time.Time) error {
	return s.conditional(ctx, "devices", "id", deviceID,
		`UPDATE devices SET declaration = ?, last_seen = ? WHERE id = ? AND owner_epoch = ? AND connected = 1`,
		blob(decl), ms(at), deviceID, epoch)
}

const deviceCols = `id, project, owner_epoch, replica_id, connected, declaration, last_seen`

func scanDevice(sc scanner) (store.Device, error) {
	var d store.Device
	var seen int64
	err := sc.Scan(&d.ID, &d.Project, &d.OwnerEpoch, &d.ReplicaID, &d.Connected, (*[]byte)(&d.Declaration), &seen)
	d.LastSeen = fromMS(seen)
	return d, err
}

func (s *Store) GetDevice(ctx context.Context, deviceID string) (store.Device, error) {
	if err := s.check(ctx); err != nil {
		return store.Device{}, err
	}
	d, err := scanDevice(s.r.QueryRowContext(ctx, `SELECT `+deviceCols+` FROM devices WHERE id = ?`, deviceID))
	return d, notFound(err)
}

func (s *Store) ListDevices(ctx context.Context) ([]store.Device, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+deviceCols+` FROM devices ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	out := []store.Device{}
	for rows.Next() {
		d, err := scanDevice(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

func (s *Store) AssignDevice(ctx context.Context, deviceID, project string, at time.Time) error {
	if deviceID == "" || project == "" {
		return errors.Join(store.ErrInvalid, fmt.Errorf("a device assignment needs a device and a project"))
	}
	// One upsert whose update applies only while the device has no project
	// or already this one; a device of another project changes nothing.
	n, err := s.exec(ctx, `INSERT INTO devices(id, project, owner_epoch, connected, declaration, last_seen) VALUES (?, ?, 0, 0, NULL, ?)
		ON CONFLICT(id) DO UPDATE SET project = excluded.project WHERE devices.project = '' OR devices.project = excluded.project`,
		deviceID, project, ms(at))
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrConflict
	}
	return nil
}

func (s *Store) CreateCredential(ctx context.Context, c store.Credential) error {
	_, err := s.exec(ctx, `INSERT INTO credentials(id, kind, device_id, project, hash, created_at, revoked_at) VALUES (?,?,?,?,?,?,?)`,
		c.ID, string(c.Kind), c.DeviceID, c.Project, c.Hash, ms(c.CreatedAt), ms(c.RevokedAt))
	return err
}

const credCols = `id, kind, device_id, project, hash, created_at, revoked_at`

func scanCred(sc scanner) (store.Credential, error) {
	var c store.Credential
	var kind string
	var created, revoked int64
	err := sc.Scan(&c.ID, &kind, &c.DeviceID, &c.Project, &c.Hash, &created, &revoked)
	c.Kind, c.CreatedAt, c.RevokedAt = store.CredentialKind(kind), fromMS(created), fromMS(revoked)
	return c, err
}

func (s *Store) CredentialByHash(ctx context.Context, hash string) (store.Credential, error) {
	if err := s.check(ctx); err != nil {
		return store.Credential{}, err
	}
	c, err := scanCred(s.r.QueryRowContext(ctx, `SELECT `+credCols+` FROM credentials WHERE hash = ?`, hash))
	return c, notFound(err)
}

func (s *Store) ListCredentials(ctx context.Context) ([]store.Credential, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+credCols+` FROM credentials ORDER BY created_at, rowid`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Credential
	for rows.Next() {
		c, err := scanCred(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s *Store) RevokeCredential(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return errors.Join(store.ErrInvalid, fmt.Errorf("revocation time is zero"))
	}
	return s.conditional(ctx, "credentials", "id", id,
		`UPDATE credentials SET revoked_at = ? WHERE id = ? AND revoked_at = 0`, ms(at), id)
}

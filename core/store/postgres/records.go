package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// appendInputSQL numbers an input with its Turn's input_seq and stores
// it, in one statement: the UPDATE locks the Turn's row, so concurrent
// appends take the numbers one after the other; no Turn, no row. A
// duplicate input ID fails the whole statement, counter included.
// Arguments: turn, input ID, content, created at.
const appendInputSQL = `WITH t AS (UPDATE turns SET input_seq = input_seq + 1 WHERE id = $1 RETURNING input_seq)
	INSERT INTO inputs(turn_id, seq, id, content, created_at) SELECT $1, input_seq, $2, $3, $4 FROM t RETURNING seq`

func (s *Store) AppendInput(ctx context.Context, in store.Input) (store.Input, error) {
	if err := s.check(ctx); err != nil {
		return store.Input{}, err
	}
	op := "appending input " + in.ID + " to Turn " + in.TurnID
	err := s.pool.QueryRow(ctx, appendInputSQL, in.TurnID, in.ID, blob(in.Content), ts(in.CreatedAt)).Scan(&in.Seq)
	switch {
	case err == nil:
		return in, nil
	case isConstraint(err):
		return store.Input{}, fmt.Errorf("postgres: %s: %w", op, store.ErrConflict)
	}
	return store.Input{}, s.notFound(op, err)
}

func (s *Store) Inputs(ctx context.Context, turnID string, after int64) ([]store.Input, error) {
	return collect(ctx, s, "listing the inputs of Turn "+turnID, `SELECT seq, id, content, created_at FROM inputs
		WHERE turn_id = $1 AND seq > $2 ORDER BY seq`, func(sc scanner) (store.Input, error) {
		in := store.Input{TurnID: turnID}
		err := sc.Scan(&in.Seq, &in.ID, (*[]byte)(&in.Content), at(&in.CreatedAt))
		return in, err
	}, turnID, after)
}

func (s *Store) AdvanceInputCursor(ctx context.Context, turnID string, from, to int64) error {
	// input_seq is the Turn's last input: the cursor never passes it.
	return s.conditional(ctx, "advancing the input cursor of Turn "+turnID, "turns", "id", turnID,
		`UPDATE turns SET input_cursor = $3 WHERE id = $1 AND input_cursor = $2 AND $3 > $2 AND $3 <= input_seq`,
		turnID, from, to)
}

func (s *Store) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	res, err := s.Commit(ctx, store.Batch{Events: []store.Event{e}})
	if len(res.Events) == 0 || res.Events[0].Seq == 0 {
		return store.Event{}, err
	}
	return res.Events[0], err
}

// EventSizes reads octet_length(payload): PostgreSQL answers it from the
// value's header, without detoasting the payload.
func (s *Store) EventSizes(ctx context.Context, turnID string, after int64, limit int) ([]store.EventSize, error) {
	out, err := collect(ctx, s, "sizing the events of Turn "+turnID, `SELECT seq, COALESCE(octet_length(payload), 0) FROM events
		WHERE turn_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, func(sc scanner) (store.EventSize, error) {
		var e store.EventSize
		err := sc.Scan(&e.Seq, &e.Bytes)
		return e, err
	}, turnID, after, limitOf(limit))
	return out, err
}

func scanEvent(turnID string) func(scanner) (store.Event, error) {
	return func(sc scanner) (store.Event, error) {
		e := store.Event{TurnID: turnID}
		err := sc.Scan(&e.Seq, &e.RunID, &e.Type, (*[]byte)(&e.Payload), at(&e.At))
		return e, err
	}
}

func (s *Store) Events(ctx context.Context, turnID string, after int64, limit int) ([]store.Event, error) {
	return collect(ctx, s, "reading the journal of Turn "+turnID, `SELECT seq, run_id, type, payload, at FROM events
		WHERE turn_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, scanEvent(turnID), turnID, after, limitOf(limit))
}

func (s *Store) LastEvent(ctx context.Context, turnID, typ string) (store.Event, error) {
	if err := s.check(ctx); err != nil {
		return store.Event{}, err
	}
	e, err := scanEvent(turnID)(s.pool.QueryRow(ctx, `SELECT seq, run_id, type, payload, at FROM events
		WHERE turn_id = $1 AND type = $2 ORDER BY seq DESC LIMIT 1`, turnID, typ))
	if err != nil {
		return store.Event{}, s.notFound("reading the last "+typ+" event of Turn "+turnID, err)
	}
	return e, nil
}

func (s *Store) CreateInteraction(ctx context.Context, i store.Interaction) error {
	if i.State == "" {
		i.State = store.InteractionPending
	}
	n, err := s.exec(ctx, "creating interaction "+i.ID, `INSERT INTO interactions(id, turn_id, run_id, kind, call_id, request, state, answer, created_at, updated_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $9 WHERE EXISTS (SELECT 1 FROM turns WHERE id = $2)`,
		i.ID, i.TurnID, i.RunID, i.Kind, i.CallID, blob(i.Request), string(i.State), blob(i.Answer), ts(i.CreatedAt))
	if err == nil && n == 0 {
		return wrap("creating interaction "+i.ID+": no Turn "+i.TurnID, store.ErrNotFound)
	}
	return err
}

const interactionCols = `id, turn_id, run_id, kind, call_id, request, state, answer, created_at, updated_at`

func scanInteraction(r scanner) (store.Interaction, error) {
	var i store.Interaction
	var state string
	err := r.Scan(&i.ID, &i.TurnID, &i.RunID, &i.Kind, &i.CallID, (*[]byte)(&i.Request), &state, (*[]byte)(&i.Answer), at(&i.CreatedAt), at(&i.UpdatedAt))
	i.State = store.InteractionState(state)
	return i, err
}

func (s *Store) GetInteraction(ctx context.Context, id string) (store.Interaction, error) {
	if err := s.check(ctx); err != nil {
		return store.Interaction{}, err
	}
	i, err := scanInteraction(s.pool.QueryRow(ctx, `SELECT `+interactionCols+` FROM interactions WHERE id = $1`, id))
	return i, s.notFound("reading interaction "+id, err)
}

func (s *Store) FunctionCall(ctx context.Context, turnID, callID string) (store.Interaction, error) {
	if err := s.check(ctx); err != nil {
		return store.Interaction{}, err
	}
	if callID == "" {
		return store.Interaction{}, store.ErrNotFound
	}
	i, err := scanInteraction(s.pool.QueryRow(ctx, `SELECT `+interactionCols+` FROM interactions
		WHERE turn_id = $1 AND call_id = $2 ORDER BY created_at DESC, id DESC LIMIT 1`, turnID, callID))
	return i, s.notFound("finding function call "+callID+" of Turn "+turnID, err)
}

func (s *Store) TransitionInteraction(ctx context.Context, id string, from, to store.InteractionState, answer json.RawMessage, at time.Time) error {
	return s.conditional(ctx, "moving interaction "+id, "interactions", "id", id,
		`UPDATE interactions SET state = $1, answer = COALESCE($2, answer), updated_at = $3 WHERE id = $4 AND state = $5`,
		string(to), blob(answer), ts(at), id, string(from))
}

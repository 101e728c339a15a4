package sqlite

import (
	"context"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
)

// Generic machine instances (store.Instances): creating one is an INSERT
// on its primary key, moving one an UPDATE conditional on its state and,
// when given, its version.

const instanceCols = `machine, key, state, version, settled, updated_at`

func scanInstance(r scanner) (store.Instance, error) {
	var in store.Instance
	var at int64
	err := r.Scan(&in.Machine, &in.Key, &in.State, &in.Version, &in.Settled, &at)
	in.UpdatedAt = fromMS(at)
	return in, err
}

func (s *Store) MoveInstance(ctx context.Context, m store.Move) (store.Instance, error) {
	if err := m.Validate(); err != nil {
		return store.Instance{}, err
	}
	if err := s.check(ctx); err != nil {
		return store.Instance{}, err
	}
	var row scanner
	if m.From == "" {
		row = s.w.QueryRowContext(ctx, `INSERT INTO instances(`+instanceCols+`) VALUES (?,?,?,1,?,?)
			ON CONFLICT(machine, key) DO NOTHING RETURNING `+instanceCols,
			m.Machine, m.Key, m.To, m.Settles(), ms(m.At))
	} else {
		row = s.w.QueryRowContext(ctx, `UPDATE instances SET state = ?, version = version + 1, settled = ?, updated_at = ?
			WHERE machine = ? AND key = ? AND settled = 0 AND state = ? AND (? = 0 OR version = ?)
			RETURNING `+instanceCols,
			m.To, m.Settles(), ms(m.At), m.Machine, m.Key, m.From, m.Version, m.Version)
	}
	in, err := scanInstance(row)
	if err == nil {
		return in, nil
	}
	if err := notFound(err); err != store.ErrNotFound {
		return store.Instance{}, err
	}
	// Nothing changed: tell why.
	_, err = s.GetInstance(ctx, m.Machine, m.Key)
	switch {
	case m.From == "" && err == nil:
		return store.Instance{}, store.ErrConflict
	case m.From != "" && err == nil:
		return store.Instance{}, store.ErrStale
	}
	return store.Instance{}, err
}

func (s *Store) GetInstance(ctx context.Context, machine, key string) (store.Instance, error) {
	if err := s.check(ctx); err != nil {
		return store.Instance{}, err
	}
	in, err := scanInstance(s.w.QueryRowContext(ctx, `SELECT `+instanceCols+` FROM instances WHERE machine = ? AND key = ?`, machine, key))
	return in, notFound(err)
}

func (s *Store) OpenInstances(ctx context.Context, machine string) ([]store.Instance, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+instanceCols+` FROM instances
		WHERE machine = ? AND settled = 0 ORDER BY updated_at, key`, machine)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Instance
	for rows.Next() {
		in, err := scanInstance(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

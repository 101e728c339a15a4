package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/agentwire/agentwire/core/store"
)

// Generic machine instances (store.Instances): creating one is an INSERT
// on its primary key, moving one an UPDATE conditional on its state and,
// when given, its version.

const instanceCols = `machine, key, state, version, settled, updated_at`

func scanInstance(r scanner) (store.Instance, error) {
	var in store.Instance
	err := r.Scan(&in.Machine, &in.Key, &in.State, &in.Version, &in.Settled, at(&in.UpdatedAt))
	return in, err
}

func (s *Store) MoveInstance(ctx context.Context, m store.Move) (store.Instance, error) {
	if err := m.Validate(); err != nil {
		return store.Instance{}, err
	}
	if err := s.check(ctx); err != nil {
		return store.Instance{}, err
	}
	op := "moving " + m.Machine + " " + m.Key + " to " + m.To
	var row pgx.Row
	if m.From == "" {
		row = s.pool.QueryRow(ctx, `INSERT INTO instances(`+instanceCols+`) VALUES ($1, $2, $3, 1, $4, $5)
			ON CONFLICT (machine, key) DO NOTHING RETURNING `+instanceCols,
			m.Machine, m.Key, m.To, m.Settles(), ts(m.At))
	} else {
		row = s.pool.QueryRow(ctx, `UPDATE instances SET state = $1, version = version + 1, settled = $2, updated_at = $3
			WHERE machine = $4 AND key = $5 AND NOT settled AND state = $6 AND ($7::bigint = 0 OR version = $7)
			RETURNING `+instanceCols,
			m.To, m.Settles(), ts(m.At), m.Machine, m.Key, m.From, m.Version)
	}
	in, err := scanInstance(row)
	switch {
	case err == nil:
		return in, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return store.Instance{}, s.fail(op, err)
	}
	// Nothing changed: tell why (the read decides nothing).
	_, err = s.GetInstance(ctx, m.Machine, m.Key)
	switch {
	case m.From == "" && err == nil:
		return store.Instance{}, wrap(op, store.ErrConflict)
	case m.From != "" && err == nil:
		return store.Instance{}, wrap(op, store.ErrStale)
	}
	return store.Instance{}, err
}

func (s *Store) GetInstance(ctx context.Context, machine, key string) (store.Instance, error) {
	if err := s.check(ctx); err != nil {
		return store.Instance{}, err
	}
	in, err := scanInstance(s.pool.QueryRow(ctx, `SELECT `+instanceCols+` FROM instances WHERE machine = $1 AND key = $2`, machine, key))
	return in, s.notFound("reading "+machine+" "+key, err)
}

func (s *Store) OpenInstances(ctx context.Context, machine string) ([]store.Instance, error) {
	return collect(ctx, s, "listing open "+machine+" instances", `SELECT `+instanceCols+` FROM instances
		WHERE machine = $1 AND NOT settled ORDER BY updated_at, key`, scanInstance, machine)
}

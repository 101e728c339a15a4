package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

func (s *Store) AppendInput(ctx context.Context, in store.Input) (store.Input, error) {
	if err := s.lock(ctx); err != nil {
		return store.Input{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.turns[in.TurnID]; !ok {
		return store.Input{}, store.ErrNotFound
	}
	list := s.inputs[in.TurnID]
	for _, x := range list {
		if x.ID == in.ID {
			return store.Input{}, store.ErrConflict
		}
	}
	in.Seq = int64(len(list)) + 1
	in.Content = clone(in.Content)
	s.inputs[in.TurnID] = append(list, in)
	in.Content = clone(in.Content)
	return in, nil
}

func (s *Store) Inputs(ctx context.Context, turnID string, after int64) ([]store.Input, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Input
	for _, x := range s.inputs[turnID] {
		if x.Seq > after {
			x.Content = clone(x.Content)
			out = append(out, x)
		}
	}
	return out, nil
}

func (s *Store) AdvanceInputCursor(ctx context.Context, turnID string, from, to int64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t, ok := s.turns[turnID]
	if !ok {
		return store.ErrNotFound
	}
	if t.InputCursor != from || to <= from || to > int64(len(s.inputs[turnID])) {
		return store.ErrStale
	}
	t.InputCursor = to
	return nil
}

func (s *Store) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	res, err := s.Commit(ctx, store.Batch{Events: []store.Event{e}})
	if len(res.Events) == 0 || res.Events[0].Seq == 0 {
		return store.Event{}, err
	}
	return res.Events[0], err
}

func (s *Store) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	if err := s.lock(ctx); err != nil {
		return store.BatchResult{}, err
	}
	defer s.mu.Unlock()
	moves := make([]error, len(b.Moves))
	for i, m := range b.Moves {
		moves[i] = s.move(m)
	}
	out := make([]store.Event, len(b.Events))
	var missing []string
	for i, e := range b.Events {
		if _, ok := s.turns[e.TurnID]; !ok {
			missing = append(missing, e.TurnID)
			out[i] = e
			continue
		}
		e.Seq = int64(len(s.events[e.TurnID])) + 1
		e.Payload = clone(e.Payload)
		s.events[e.TurnID] = append(s.events[e.TurnID], e)
		e.Payload = clone(e.Payload)
		out[i] = e
	}
	res := store.BatchResult{Moves: moves, Events: out, Finishes: make([]error, len(b.Finishes))}
	for i, f := range b.Finishes {
		res.Finishes[i] = s.move(f)
	}
	return res, store.MissingTurns(missing)
}

func (s *Store) Events(ctx context.Context, turnID string, after int64, limit int) ([]store.Event, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Event
	for _, e := range s.events[turnID] {
		if e.Seq <= after {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		e.Payload = clone(e.Payload)
		out = append(out, e)
	}
	return out, nil
}

func (s *Store) EventSizes(ctx context.Context, turnID string, after int64, limit int) ([]store.EventSize, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.EventSize
	for _, e := range s.events[turnID] {
		if e.Seq <= after {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, store.EventSize{Seq: e.Seq, Bytes: len(e.Payload)})
	}
	return out, nil
}

func (s *Store) LastEvent(ctx context.Context, turnID, typ string) (store.Event, error) {
	if err := s.lock(ctx); err != nil {
		return store.Event{}, err
	}
	defer s.mu.Unlock()
	evs := s.events[turnID]
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			e := evs[i]
			e.Payload = clone(e.Payload)
			return e, nil
		}
	}
	return store.Event{}, store.ErrNotFound
}

func (s *Store) CreateInteraction(ctx context.Context, i store.Interaction) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.interactions[i.ID]; ok {
		return store.ErrConflict
	}
	if _, ok := s.turns[i.TurnID]; !ok {
		return store.ErrNotFound
	}
	i.Request, i.Answer = clone(i.Request), clone(i.Answer)
	if i.State == "" {
		i.State = store.InteractionPending
	}
	i.UpdatedAt = i.CreatedAt
	s.interactions[i.ID] = i
	return nil
}

func (s *Store) GetInteraction(ctx context.Context, id string) (store.Interaction, error) {
	if err := s.lock(ctx); err != nil {
		return store.Interaction{}, err
	}
	defer s.mu.Unlock()
	i, ok := s.interactions[id]
	if !ok {
		return store.Interaction{}, store.ErrNotFound
	}
	i.Request, i.Answer = clone(i.Request), clone(i.Answer)
	return i, nil
}

func (s *Store) FunctionCall(ctx context.Context, turnID, callID string) (store.Interaction, error) {
	if err := s.lock(ctx); err != nil {
		return store.Interaction{}, err
	}
	defer s.mu.Unlock()
	var best store.Interaction
	found := false
	for _, i := range s.interactions {
		if callID == "" || i.TurnID != turnID || i.CallID != callID {
			continue
		}
		if !found || i.CreatedAt.After(best.CreatedAt) || (i.CreatedAt.Equal(best.CreatedAt) && i.ID > best.ID) {
			best, found = i, true
		}
	}
	if !found {
		return store.Interaction{}, store.ErrNotFound
	}
	best.Request, best.Answer = clone(best.Request), clone(best.Answer)
	return best, nil
}

func (s *Store) TransitionInteraction(ctx context.Context, id string, from, to store.InteractionState, answer json.RawMessage, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	i, ok := s.interactions[id]
	if !ok {
		return store.ErrNotFound
	}
	if i.State != from {
		return store.ErrStale
	}
	i.State, i.UpdatedAt = to, at
	if answer != nil {
		i.Answer = clone(answer)
	}
	s.interactions[id] = i
	return nil
}

func (s *Store) AcquireOwner(ctx context.Context, deviceID string, at time.Time) (uint64, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.acquire(deviceID, "", at, time.Time{}), nil
}

func (s *Store) ReleaseOwner(ctx context.Context, deviceID string, epoch uint64, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	d, ok := s.devices[deviceID]
	if !ok {
		return store.ErrNotFound
	}
	s.endLease(deviceID, epoch)
	if d.OwnerEpoch != epoch {
		return store.ErrStale
	}
	d.Connected, d.Declaration, d.LastSeen = false, nil, at
	s.devices[deviceID] = d
	return nil
}

func (s *Store) RecordDeclaration(ctx context.Context, deviceID string, epoch uint64, decl json.RawMessage, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	d, ok := s.devices[deviceID]
	if !ok {
		return store.ErrNotFound
	}
	if d.OwnerEpoch != epoch || !d.Connected {
		return store.ErrStale
	}
	d.Declaration, d.LastSeen = clone(decl), at
	s.devices[deviceID] = d
	return nil
}

func (s *Store) GetDevice(ctx context.Context, deviceID string) (store.Device, error) {
	if err := s.lock(ctx); err != nil {
		return store.Device{}, err
	}
	defer s.mu.Unlock()
	d, ok := s.devices[deviceID]
	if !ok {
		return store.Device{}, store.ErrNotFound
	}
	d.Declaration = clone(d.Declaration)
	return d, nil
}

func (s *Store) ListDevices(ctx context.Context) ([]store.Device, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.Device, 0, len(s.devices))
	for _, d := range s.devices {
		d.Declaration = clone(d.Declaration)
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (s *Store) AssignDevice(ctx context.Context, deviceID, project string, at time.Time) error {
	if deviceID == "" || project == "" {
		return errors.Join(store.ErrInvalid, fmt.Errorf("a device assignment needs a device and a project"))
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	d, ok := s.devices[deviceID]
	if !ok {
		d = store.Device{ID: deviceID, LastSeen: at}
	}
	if d.Project != "" && d.Project != project {
		return store.ErrConflict
	}
	d.Project = project
	s.devices[deviceID] = d
	return nil
}

func (s *Store) CreateCredential(ctx context.Context, c store.Credential) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.creds[c.ID]; ok {
		return store.ErrConflict
	}
	for _, x := range s.creds {
		if x.Hash == c.Hash {
			return store.ErrConflict
		}
	}
	s.creds[c.ID] = c
	s.credOrder = append(s.credOrder, c.ID)
	return nil
}

func (s *Store) CredentialByHash(ctx context.Context, hash string) (store.Credential, error) {
	if err := s.lock(ctx); err != nil {
		return store.Credential{}, err
	}
	defer s.mu.Unlock()
	for _, c := range s.creds {
		if c.Hash == hash {
			return c, nil
		}
	}
	return store.Credential{}, store.ErrNotFound
}

func (s *Store) ListCredentials(ctx context.Context) ([]store.Credential, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.Credential, 0, len(s.creds))
	for _, id := range s.credOrder {
		out = append(out, s.creds[id])
	}
	return out, nil
}

func (s *Store) RevokeCredential(ctx context.Context, id string, at time.Time) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	c, ok := s.creds[id]
	if !ok {
		return store.ErrNotFound
	}
	if c.Revoked() {
		return store.ErrStale
	}
	c.RevokedAt = at
	s.creds[id] = c
	return nil
}

// Close makes every later call fail with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

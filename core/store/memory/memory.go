// Package memory is an in-memory store.Store for tests and benchmarks. One
// mutex makes each conditional write atomic, as a single SQL statement is.
package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// Store keeps everything in maps guarded by one mutex.
type Store struct {
	mu           sync.Mutex
	closed       bool
	envs         map[string]store.Environment
	sessions     map[string]store.Session
	turns        map[string]*store.Turn
	turnOrder    []string
	inputs       map[string][]store.Input
	events       map[string][]store.Event
	interactions map[string]store.Interaction
	writes       map[string]store.WorkspaceWrite
	devices      map[string]store.Device
	creds        map[string]store.Credential
	credOrder    []string
	suspensions  map[string]store.Suspension     // suspension.go
	inits        map[string]store.Initialization // by Environment ID
	instances    map[instanceKey]store.Instance  // instance.go
	agents       map[string][]store.Agent        // agent.go: every version, by ID
	secrets      map[secretKey]store.Secret      // vault.go: sealed, by project and name
	replicas     map[string]*replicaRec          // replica.go
	leases       map[leaseKey]*store.Lease       // replica.go
	// activeBy is the active (claimed, not finished) Turn of each
	// Session: a Session has one at a time.
	activeBy map[string]string
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Credentials = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{
		envs:         map[string]store.Environment{},
		sessions:     map[string]store.Session{},
		turns:        map[string]*store.Turn{},
		inputs:       map[string][]store.Input{},
		events:       map[string][]store.Event{},
		interactions: map[string]store.Interaction{},
		writes:       map[string]store.WorkspaceWrite{},
		devices:      map[string]store.Device{},
		creds:        map[string]store.Credential{},
	}
}

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

func (s *Store) CreateEnvironment(ctx context.Context, e store.Environment) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.envs[e.ID]; ok {
		return store.ErrConflict
	}
	e.Binding, e.Initialization = clone(e.Binding), clone(e.Initialization)
	s.envs[e.ID] = e
	return nil
}

func (s *Store) GetEnvironment(ctx context.Context, id string) (store.Environment, error) {
	if err := s.lock(ctx); err != nil {
		return store.Environment{}, err
	}
	defer s.mu.Unlock()
	e, ok := s.envs[id]
	if !ok {
		return store.Environment{}, store.ErrNotFound
	}
	e.Binding, e.Initialization = clone(e.Binding), clone(e.Initialization)
	return e, nil
}

func (s *Store) ListEnvironments(ctx context.Context, project string) ([]store.Environment, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []store.Environment{}
	for _, e := range s.envs {
		if project == "" || e.Project == project {
			e.Binding, e.Initialization = clone(e.Binding), clone(e.Initialization)
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (s *Store) CreateSession(ctx context.Context, x store.Session) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.sessions[x.ID]; ok {
		return store.ErrConflict
	}
	if x.EnvironmentID != "" {
		if _, ok := s.envs[x.EnvironmentID]; !ok {
			return store.ErrNotFound
		}
	}
	x.Options = clone(x.Options)
	s.sessions[x.ID] = x
	return nil
}

func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	if err := s.lock(ctx); err != nil {
		return store.Session{}, err
	}
	defer s.mu.Unlock()
	x, ok := s.sessions[id]
	if !ok {
		return store.Session{}, store.ErrNotFound
	}
	x.Options = clone(x.Options)
	return x, nil
}

func copyTurn(t *store.Turn) store.Turn {
	c := *t
	c.Input = clone(t.Input)
	c.Outcome.Evidence = clone(t.Outcome.Evidence)
	return c
}

func (s *Store) CreateTurn(ctx context.Context, t store.Turn) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.turns[t.ID]; ok {
		return store.ErrConflict
	}
	if _, ok := s.sessions[t.SessionID]; !ok {
		return store.ErrNotFound
	}
	c := copyTurn(&t)
	c.State = store.TurnQueued
	c.UpdatedAt = c.CreatedAt
	s.turns[t.ID] = &c
	s.turnOrder = append(s.turnOrder, t.ID)
	return nil
}

func (s *Store) GetTurn(ctx context.Context, id string) (store.Turn, error) {
	if err := s.lock(ctx); err != nil {
		return store.Turn{}, err
	}
	defer s.mu.Unlock()
	t, ok := s.turns[id]
	if !ok {
		return store.Turn{}, store.ErrNotFound
	}
	return copyTurn(t), nil
}

func (s *Store) DueTurns(ctx context.Context, now time.Time, after string, limit int) ([]store.Turn, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	// The order is creation time, then insertion (the rowid of SQLite).
	type entry struct {
		t   *store.Turn
		pos int
	}
	var queued []entry
	cursor := entry{pos: -1}
	for pos, id := range s.turnOrder {
		t := s.turns[id]
		if id == after {
			cursor = entry{t, pos}
		}
		if t.State == store.TurnQueued {
			queued = append(queued, entry{t, pos})
		}
	}
	if after != "" && cursor.t == nil {
		return nil, nil // as SQLite: no Turn comes after an unknown one
	}
	sort.SliceStable(queued, func(i, j int) bool { return queued[i].t.CreatedAt.Before(queued[j].t.CreatedAt) })
	var out []store.Turn
	head := map[string]bool{} // Sessions whose oldest queued Turn was seen
	for _, e := range queued {
		t := e.t
		if head[t.SessionID] {
			continue
		}
		head[t.SessionID] = true
		if cursor.t != nil && (t.CreatedAt.Before(cursor.t.CreatedAt) || t.CreatedAt.Equal(cursor.t.CreatedAt) && e.pos <= cursor.pos) {
			continue
		}
		if !t.NotBefore.After(now) {
			out = append(out, copyTurn(t))
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *Store) MoveTurn(ctx context.Context, m store.TurnMove) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.move(m)
}

// sessionBusy reports another Turn of t's Session claimed and not
// finished, with s.mu held.
func (s *Store) sessionBusy(t *store.Turn) bool {
	id, ok := s.activeBy[t.SessionID]
	return ok && id != t.ID
}

func active(st store.TurnState) bool {
	switch st {
	case store.TurnClaimed, store.TurnCancelling, store.TurnStarting, store.TurnRunning:
		return true
	}
	return false
}

// move is MoveTurn with s.mu held.
func (s *Store) move(m store.TurnMove) error {
	if err := m.Validate(); err != nil {
		return err
	}
	t, ok := s.turns[m.TurnID]
	if !ok {
		return store.ErrNotFound
	}
	if t.State != m.From || t.RunID != m.RunID || (m.Claim != nil && (t.NotBefore.After(m.Claim.At) || s.sessionBusy(t))) {
		return store.ErrStale
	}
	t.State, t.UpdatedAt = m.To, m.At
	switch {
	case active(m.To):
		if s.activeBy == nil {
			s.activeBy = map[string]string{}
		}
		s.activeBy[t.SessionID] = t.ID
	case s.activeBy[t.SessionID] == t.ID:
		delete(s.activeBy, t.SessionID)
	}
	switch {
	case m.Claim != nil:
		t.DeviceID, t.OwnerEpoch, t.RunID = m.Claim.DeviceID, m.Claim.OwnerEpoch, m.Claim.RunID
		t.Attempts++
	case m.To == store.TurnQueued:
		t.DeviceID, t.OwnerEpoch, t.RunID, t.NotBefore = "", 0, "", m.NotBefore
	case m.To == store.TurnRunning:
		if x, ok := s.sessions[t.SessionID]; ok {
			x.Started = true
			s.sessions[t.SessionID] = x
		}
	}
	if m.Outcome != nil {
		t.Outcome = *m.Outcome
		t.Outcome.Evidence = clone(m.Outcome.Evidence)
	}
	return nil
}

func (s *Store) RecordNativeSession(ctx context.Context, sessionID, nativeID string) error {
	if nativeID == "" {
		return store.ErrInvalid
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	x, ok := s.sessions[sessionID]
	switch {
	case !ok:
		return store.ErrNotFound
	case x.NativeSessionID != "" && x.NativeSessionID != nativeID:
		return store.ErrStale
	}
	x.NativeSessionID = nativeID
	s.sessions[sessionID] = x
	return nil
}

func (s *Store) SessionTurns(ctx context.Context, sessionID string, limit int) ([]store.Turn, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Turn
	for _, id := range s.turnOrder {
		if t := s.turns[id]; t.SessionID == sessionID {
			out = append(out, copyTurn(t))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (s *Store) ActiveTurns(ctx context.Context) ([]store.Turn, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Turn
	for _, id := range s.turnOrder {
		if t := s.turns[id]; t.State != store.TurnQueued && !t.State.Terminal() {
			out = append(out, copyTurn(t))
		}
	}
	return out, nil
}

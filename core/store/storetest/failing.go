package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// ErrInjected is the error a Failing store's writes fail with while it
// fails, as a full disk would make them.
var ErrInjected = errors.New("storetest: injected store failure (database or disk is full)")

// Failing wraps a store.Store whose writes fail on command: every write
// while Fail is in force, or every write after the next n with FailAfter,
// until Heal. Reads always pass through, as they do on a full disk.
// Tests use it to check that a store failure is never silent.
type Failing struct {
	store.Store
	mu       sync.Mutex
	failing  bool
	budget   int // writes that still pass once armed by FailAfter (-1: not armed)
	failures int
	only     map[string]bool // when set, only these writes fail
}

// NewFailing wraps s; it passes every write until told otherwise.
func NewFailing(s store.Store) *Failing { return &Failing{Store: s, budget: -1} }

// Fail makes every write fail from now on, until Heal.
func (f *Failing) Fail() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing, f.budget = true, -1
}

// FailAfter lets the next n writes pass and fails every one after them,
// until Heal.
func (f *Failing) FailAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing, f.budget = false, n
}

// Only limits the failures to the writes named (methods of store.Store,
// "Commit", "MoveTurn", ...); none named means every write.
func (f *Failing) Only(methods ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.only = nil
	for _, m := range methods {
		if f.only == nil {
			f.only = map[string]bool{}
		}
		f.only[m] = true
	}
}

// Heal makes every write pass again.
func (f *Failing) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing, f.budget = false, -1
}

// Failures is how many writes failed so far.
func (f *Failing) Failures() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

// check decides whether the write named op fails.
func (f *Failing) check(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.only != nil && !f.only[op] {
		return nil
	}
	if f.budget == 0 {
		f.failing, f.budget = true, -1
	}
	if f.budget > 0 {
		f.budget--
		return nil
	}
	if !f.failing {
		return nil
	}
	f.failures++
	return fmt.Errorf("%s: %w", op, ErrInjected)
}

func (f *Failing) CreateEnvironment(ctx context.Context, e store.Environment) error {
	if err := f.check("CreateEnvironment"); err != nil {
		return err
	}
	return f.Store.CreateEnvironment(ctx, e)
}

func (f *Failing) CreateSession(ctx context.Context, s store.Session) error {
	if err := f.check("CreateSession"); err != nil {
		return err
	}
	return f.Store.CreateSession(ctx, s)
}

func (f *Failing) RecordNativeSession(ctx context.Context, sessionID, nativeID string) error {
	if err := f.check("RecordNativeSession"); err != nil {
		return err
	}
	return f.Store.RecordNativeSession(ctx, sessionID, nativeID)
}

func (f *Failing) CreateTurn(ctx context.Context, t store.Turn) error {
	if err := f.check("CreateTurn"); err != nil {
		return err
	}
	return f.Store.CreateTurn(ctx, t)
}

func (f *Failing) MoveTurn(ctx context.Context, m store.TurnMove) error {
	if err := f.check("MoveTurn"); err != nil {
		return err
	}
	return f.Store.MoveTurn(ctx, m)
}

func (f *Failing) AppendInput(ctx context.Context, in store.Input) (store.Input, error) {
	if err := f.check("AppendInput"); err != nil {
		return store.Input{}, err
	}
	return f.Store.AppendInput(ctx, in)
}

func (f *Failing) AdvanceInputCursor(ctx context.Context, turnID string, from, to int64) error {
	if err := f.check("AdvanceInputCursor"); err != nil {
		return err
	}
	return f.Store.AdvanceInputCursor(ctx, turnID, from, to)
}

func (f *Failing) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	if err := f.check("AppendEvent"); err != nil {
		return store.Event{}, err
	}
	return f.Store.AppendEvent(ctx, e)
}

// Commit fails as a whole, writing nothing of the batch, as a failed
// transaction does.
func (f *Failing) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	if err := f.check("Commit"); err != nil {
		return store.BatchResult{}, err
	}
	return f.Store.Commit(ctx, b)
}

func (f *Failing) CreateInteraction(ctx context.Context, i store.Interaction) error {
	if err := f.check("CreateInteraction"); err != nil {
		return err
	}
	return f.Store.CreateInteraction(ctx, i)
}

func (f *Failing) TransitionInteraction(ctx context.Context, id string, from, to store.InteractionState, answer json.RawMessage, at time.Time) error {
	if err := f.check("TransitionInteraction"); err != nil {
		return err
	}
	return f.Store.TransitionInteraction(ctx, id, from, to, answer, at)
}

func (f *Failing) ReserveWorkspaceWrite(ctx context.Context, w store.WorkspaceWrite) error {
	if err := f.check("ReserveWorkspaceWrite"); err != nil {
		return err
	}
	return f.Store.ReserveWorkspaceWrite(ctx, w)
}

func (f *Failing) SettleWorkspaceWrite(ctx context.Context, mutationID, outcome string, at time.Time) error {
	if err := f.check("SettleWorkspaceWrite"); err != nil {
		return err
	}
	return f.Store.SettleWorkspaceWrite(ctx, mutationID, outcome, at)
}

func (f *Failing) TransitionWorkspaceWrite(ctx context.Context, m store.Move, release bool, code, reason string) error {
	if err := f.check("TransitionWorkspaceWrite"); err != nil {
		return err
	}
	return f.Store.TransitionWorkspaceWrite(ctx, m, release, code, reason)
}

func (f *Failing) ResolveWorkspaceWrite(ctx context.Context, mutationID, resolution, note string, at time.Time) error {
	if err := f.check("ResolveWorkspaceWrite"); err != nil {
		return err
	}
	return f.Store.ResolveWorkspaceWrite(ctx, mutationID, resolution, note, at)
}

func (f *Failing) AcquireOwner(ctx context.Context, deviceID string, at time.Time) (uint64, error) {
	if err := f.check("AcquireOwner"); err != nil {
		return 0, err
	}
	return f.Store.AcquireOwner(ctx, deviceID, at)
}

func (f *Failing) ReleaseOwner(ctx context.Context, deviceID string, epoch uint64, at time.Time) error {
	if err := f.check("ReleaseOwner"); err != nil {
		return err
	}
	return f.Store.ReleaseOwner(ctx, deviceID, epoch, at)
}

func (f *Failing) RecordDeclaration(ctx context.Context, deviceID string, epoch uint64, decl json.RawMessage, at time.Time) error {
	if err := f.check("RecordDeclaration"); err != nil {
		return err
	}
	return f.Store.RecordDeclaration(ctx, deviceID, epoch, decl, at)
}

func (f *Failing) AssignDevice(ctx context.Context, deviceID, project string, at time.Time) error {
	if err := f.check("AssignDevice"); err != nil {
		return err
	}
	return f.Store.AssignDevice(ctx, deviceID, project, at)
}

// The credential half passes through to the wrapped store when it keeps
// credentials too (memory and sqlite do); its writes fail like the others.

func (f *Failing) creds() (store.Credentials, error) {
	c, ok := f.Store.(store.Credentials)
	if !ok {
		return nil, fmt.Errorf("storetest: the wrapped %T keeps no credentials: %w", f.Store, store.ErrInvalid)
	}
	return c, nil
}

func (f *Failing) CreateCredential(ctx context.Context, c store.Credential) error {
	if err := f.check("CreateCredential"); err != nil {
		return err
	}
	cs, err := f.creds()
	if err != nil {
		return err
	}
	return cs.CreateCredential(ctx, c)
}

func (f *Failing) RevokeCredential(ctx context.Context, id string, at time.Time) error {
	if err := f.check("RevokeCredential"); err != nil {
		return err
	}
	cs, err := f.creds()
	if err != nil {
		return err
	}
	return cs.RevokeCredential(ctx, id, at)
}

func (f *Failing) CredentialByHash(ctx context.Context, hash string) (store.Credential, error) {
	cs, err := f.creds()
	if err != nil {
		return store.Credential{}, err
	}
	return cs.CredentialByHash(ctx, hash)
}

func (f *Failing) ListCredentials(ctx context.Context) ([]store.Credential, error) {
	cs, err := f.creds()
	if err != nil {
		return nil, err
	}
	return cs.ListCredentials(ctx)
}

func (f *Failing) CreateSuspension(ctx context.Context, s store.Suspension) error {
	if err := f.check("CreateSuspension"); err != nil {
		return err
	}
	return f.Store.CreateSuspension(ctx, s)
}

func (f *Failing) AdoptSuspension(ctx context.Context, id, state string, epoch uint64) error {
	if err := f.check("AdoptSuspension"); err != nil {
		return err
	}
	return f.Store.AdoptSuspension(ctx, id, state, epoch)
}

func (f *Failing) TransitionSuspension(ctx context.Context, m store.Move, code string) error {
	if err := f.check("TransitionSuspension"); err != nil {
		return err
	}
	return f.Store.TransitionSuspension(ctx, m, code)
}

func (f *Failing) RecordInitialization(ctx context.Context, i store.Initialization) error {
	if err := f.check("RecordInitialization"); err != nil {
		return err
	}
	return f.Store.RecordInitialization(ctx, i)
}

func (f *Failing) MoveInstance(ctx context.Context, m store.Move) (store.Instance, error) {
	if err := f.check("MoveInstance"); err != nil {
		return store.Instance{}, err
	}
	return f.Store.MoveInstance(ctx, m)
}

func (f *Failing) PutSecret(ctx context.Context, s store.Secret) error {
	if err := f.check("PutSecret"); err != nil {
		return err
	}
	return f.Store.PutSecret(ctx, s)
}

func (f *Failing) DeleteSecret(ctx context.Context, project, name string) error {
	if err := f.check("DeleteSecret"); err != nil {
		return err
	}
	return f.Store.DeleteSecret(ctx, project, name)
}

func (f *Failing) PutAgent(ctx context.Context, a store.Agent) error {
	if err := f.check("PutAgent"); err != nil {
		return err
	}
	return f.Store.PutAgent(ctx, a)
}

// Package suspend is the suspension lifecycle on Core's side of one
// connection (daemon-protocol.txt:78, 96): the attempts the connection
// carries, the machine's Core hooks, Quiesce and Resume, which send an
// attempt's requests and wait for its stored state to move, and Adopt,
// which restores a stored attempt onto the connection. Every move of an
// attempt's instance is written to the store conditional on the state it
// left, so a stale writer (an old connection, a Core that restarted) can
// never move it. A reply is fenced by the identity it echoes
// (GuardOwnSuspension). Which device an attempt goes to and what it holds
// meanwhile are the gateway's.
package suspend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/suspension"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/link"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// CodeAnswerTimeout is the error code an attempt records when it expires:
// its resume or rollback went unanswered for answer_wait. A late answer
// that settles the attempt keeps it beside the outcome.
const CodeAnswerTimeout = "answer_timeout"

// Wait bounds how long Quiesce and Resume wait for the Runtime's answer
// before they return the attempt as it stands.
//
// decision: the Runtime answers a quiesce within its 5 s drain
// (wire-reference.md §4 quiesceTimeout); the API call waits 10 s, and an
// attempt still unanswered then is returned as it stands (quiescing or
// resuming). The attempt itself is bounded by the table's answer_wait,
// not by this wait: GET /api/v1/environments/{id} shows how it ended.
var Wait = 10 * time.Second

// Refused is a request the suspension machine refused before it left
// Core (the attempt is not in a state that admits it), or that was not
// sent.
type Refused struct{ Detail string }

func (e *Refused) Error() string { return "gateway: suspension: " + e.Detail }

// Store is what the module needs of Core's store.
type Store interface {
	GetSuspension(ctx context.Context, id string) (store.Suspension, error)
	TransitionSuspension(ctx context.Context, m store.Move, code string) error
	AdoptSuspension(ctx context.Context, id, state string, epoch uint64) error
	OpenSuspensions(ctx context.Context) ([]store.Suspension, error)
}

// Deps are the connection's parts the module uses. Released is called
// once an attempt no longer holds its Environment (settled, or expired).
type Deps struct {
	link.Conn
	Store Store
	// Durations overrides policy timers, keyed "machine.timer" (as
	// peer.Config.Durations), for a restored attempt's deadlines.
	Durations map[string]time.Duration
	// Epoch is the connection's owner epoch, recorded on each attempt it
	// adopts (the one it creates is stored with it by the gateway).
	Epoch func() uint64
}

// Move is the store's move of attempt id from one state of the
// suspension machine to another.
func Move(id, from, to string, at time.Time) store.Move {
	return store.Move{Machine: suspension.Name, Key: id, From: from, To: to, At: at}
}

// Key is the driver's key of attempt id.
func Key(id string) peer.Key { return peer.Key{Machine: suspension.Name, ID: id} }

// Book is the attempts one connection carries, by suspend_id.
type Book struct {
	deps Deps
	mu   sync.Mutex
	recs map[string]*rec
}

// NewBook returns the attempts of one connection.
func NewBook(deps Deps) *Book { return &Book{deps: deps, recs: map[string]*rec{}} }

// rec is Core's record of one attempt on one connection; the Book's mu
// guards it.
type rec struct {
	wireEnv   string // the environment_id the attempt fences
	persisted string // the state last written to the store
	code      string // the error code of the last refusal
	signal    chan struct{}
}

func (b *Book) rec(id string) *rec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recs[id]
}

func (b *Book) persisted(r *rec) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return r.persisted
}

// Quiesce sends the quiesce of attempt a, just stored in its initial
// state, for wireEnv on pc and waits: with wait, a bounded time for the
// answer; otherwise until the send's own move is written. It returns the
// attempt as stored. ctx is the caller's, life the gateway's lifetime.
func (b *Book) Quiesce(ctx, life context.Context, pc *peer.Conn, a store.Suspension, wireEnv string, wait bool) (store.Suspension, error) {
	r := &rec{wireEnv: wireEnv, persisted: a.State, signal: make(chan struct{}, 1)}
	b.mu.Lock()
	b.recs[a.ID] = r
	b.mu.Unlock()
	err := pc.Send(life, peer.Outbound{ID: credential.NewUUID(), Payload: wire.EnvironmentQuiesce{EnvironmentID: wireEnv, SuspendID: a.ID}})
	if err != nil && !link.IsWriteError(err) {
		// Nothing left Core: the attempt ends unsent; nothing is suspended.
		sctx, cancel := b.deps.StoreCtx()
		defer cancel()
		if terr := b.deps.Store.TransitionSuspension(sctx, Move(a.ID, b.persisted(r), store.NotSent, b.deps.Clock.Now().UTC()), ""); terr != nil {
			b.deps.Log.Warn("gateway: settle an unsent suspension attempt", "suspend_id", a.ID, "err", terr)
		}
		got, _ := b.deps.Store.GetSuspension(sctx, a.ID)
		return got, &Refused{Detail: "environment_quiesce was not sent: " + link.Bounded(err)}
	}
	if !wait {
		return b.await(ctx, life, pc, a.ID, r, a.State)
	}
	return b.await(ctx, life, pc, a.ID, r, a.State, suspension.StateQuiescing.String())
}

// Resume sends the resume (rollback abandons the attempt) of attempt a
// for wireEnv on pc, restoring the attempt there first when the
// connection does not carry it (Adopt), and waits as Quiesce does.
func (b *Book) Resume(ctx, life context.Context, pc *peer.Conn, a store.Suspension, wireEnv string, rollback, wait bool) (store.Suspension, error) {
	var r *rec
	var prepErr error
	if err := pc.Do(ctx, func(d *peer.Driver) { r, prepErr = b.adopt(d, a, wireEnv) }); err != nil {
		return a, err
	}
	if prepErr != nil {
		return a, prepErr
	}
	before := b.persisted(r)
	err := pc.Send(life, peer.Outbound{ID: credential.NewUUID(), Payload: wire.EnvironmentResume{EnvironmentID: wireEnv, SuspendID: a.ID, Rollback: rollback}})
	if err != nil && !link.IsWriteError(err) {
		var se *peer.SendError
		if errors.As(err, &se) {
			return a, &Refused{Detail: link.Bounded(se.Err)}
		}
		return a, err
	}
	if !wait {
		return b.await(ctx, life, pc, a.ID, r, before)
	}
	return b.await(ctx, life, pc, a.ID, r, before, suspension.StateResuming.String())
}

// await waits until the attempt's stored state is none of pending (the
// state before the send, whose move may not be written yet, and the state
// the send leads to) or the wait runs out, and returns the attempt as
// stored.
func (b *Book) await(ctx, life context.Context, pc *peer.Conn, id string, r *rec, pending ...string) (store.Suspension, error) {
	t := b.deps.Clock.NewTimer(Wait)
	defer t.Stop()
	for slices.Contains(pending, b.persisted(r)) {
		select {
		case <-r.signal:
			continue
		case <-t.C():
		case <-pc.Done():
		case <-ctx.Done():
		case <-life.Done():
		}
		break
	}
	sctx, cancel := b.deps.StoreCtx()
	defer cancel()
	return b.deps.Store.GetSuspension(sctx, id)
}

// Adopt restores attempt a onto d (this connection's driver, on its
// loop) unless the connection carries it already.
func (b *Book) Adopt(d *peer.Driver, a store.Suspension, wireEnv string) error {
	_, err := b.adopt(d, a, wireEnv)
	return err
}

func (b *Book) adopt(d *peer.Driver, a store.Suspension, wireEnv string) (*rec, error) {
	if _, ok := d.Lookup(Key(a.ID)); ok {
		// The record is read here, on the loop: the connection's own
		// adoption of its device's open attempts (run on the loop once the
		// connection went live) may have restored the attempt just before
		// an API call's resume; restoring it twice failed that resume with
		// "the instance already exists" right after a reconnection.
		if r := b.rec(a.ID); r != nil {
			return r, nil
		}
	}
	a, to, since, err := b.carry(a)
	if err != nil {
		return nil, err
	}
	saved, err := b.saved(a.ID, to, since)
	if err != nil {
		return nil, err
	}
	r := &rec{wireEnv: wireEnv, persisted: to, code: a.ErrorCode, signal: make(chan struct{}, 1)}
	if err := d.Restore([]peer.Saved{saved}); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.recs[a.ID] = r
	b.mu.Unlock()
	b.deps.Log.Info("gateway: suspension attempt restored", "suspend_id", a.ID, "stored", a.State, "restored", to)
	return r, nil
}

// carry takes attempt a, as stored, to where the table takes it when its
// connection is lost, and records that this connection carries it now.
// It returns the attempt as it was read, the state it is restored in and
// the time that state's timers run from.
//
// decision: another writer may move the attempt between the read and
// these conditional writes: a replica reaping the lease of the
// connection that carried it (which takes it to uncertain as well). The
// attempt is then read again and carried from where it stands; an
// attempt settled meanwhile is not restored.
func (b *Book) carry(a store.Suspension) (store.Suspension, string, time.Time, error) {
	ctx, cancel := b.deps.StoreCtx()
	defer cancel()
	for try := 0; ; try++ {
		to, since, err := b.carryOnce(ctx, a)
		if !errors.Is(err, store.ErrStale) || try == 2 {
			return a, to, since, err
		}
		if a, err = b.deps.Store.GetSuspension(ctx, a.ID); err != nil {
			return a, "", time.Time{}, fmt.Errorf("gateway: suspension attempt %s: reading it again: %w", a.ID, err)
		}
		if a.Settled {
			return a, "", time.Time{}, fmt.Errorf("gateway: suspension attempt %s settled meanwhile (%s): %w", a.ID, a.State, store.ErrStale)
		}
	}
}

func (b *Book) carryOnce(ctx context.Context, a store.Suspension) (string, time.Time, error) {
	// Where the table takes this state when its connection is lost.
	to, err := LostState(a.State, suspension.EventConnectionLost)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("gateway: suspension attempt %s: %w", a.ID, err)
	}
	// The state's timers run from the move into it, which the store
	// dates: a restored attempt keeps the time its wait has left.
	since := a.UpdatedAt
	if since.IsZero() {
		since = a.CreatedAt
	}
	if to != a.State {
		since = b.deps.Clock.Now().UTC()
		if err := b.deps.Store.TransitionSuspension(ctx, Move(a.ID, a.State, to, since), ""); err != nil {
			return "", time.Time{}, fmt.Errorf("gateway: suspension attempt %s moved meanwhile: %w", a.ID, err)
		}
	}
	// This connection carries the attempt from now on: a replica reaping
	// the lease of the connection that carried it before reconciles only
	// the attempts still recorded under that lease's epoch, and must not
	// take this one back to uncertain under a rollback sent here. Until
	// this write the attempt is in uncertain or suspended, where the
	// table ignores connection_lost, so that reaper changes nothing.
	if b.deps.Epoch != nil {
		if err := b.deps.Store.AdoptSuspension(ctx, a.ID, to, b.deps.Epoch()); err != nil {
			return "", time.Time{}, fmt.Errorf("gateway: suspension attempt %s: recording the connection that carries it: %w", a.ID, err)
		}
	}
	return to, since, nil
}

// LostState is the state the table takes a stored attempt to when the
// connection that carried its last request is gone: the given events'
// steps in turn, each where it moves the machine (connection_lost takes
// quiescing, rolling_back and resuming to uncertain).
func LostState(state string, events ...suspension.Event) (string, error) {
	st, err := suspension.Table.ParseState(state)
	if err != nil {
		return "", err
	}
	in, err := fsm.NewInstance[*peer.Event](suspension.Table, fsm.RoleCore)
	if err != nil {
		return "", err
	}
	if _, err := in.Restore(st); err != nil {
		return "", err
	}
	for _, e := range events {
		if step, err := in.Peek(fsm.EventID(e), nil, nil); err == nil && step.Disposition() == fsm.Moved {
			st = step.To()
			if _, err := in.Restore(st); err != nil {
				return "", err
			}
		}
	}
	return suspension.Table.StateName(st), nil
}

// saved is the instance an attempt is restored as: its state, and for
// each of Core's timers the state keeps armed the deadline that follows
// from the move into it at since (peer.Driver.Restore re-arms it for the
// time that remains; a deadline passed fires at once).
func (b *Book) saved(id, state string, since time.Time) (peer.Saved, error) {
	st, err := suspension.Table.ParseState(state)
	if err != nil {
		return peer.Saved{}, err
	}
	s := peer.Saved{Machine: suspension.Name, ID: id, State: state}
	for _, tm := range suspension.Table.State(st).Timers {
		decl := suspension.Table.Timers[tm-1]
		if !fsm.RoleCore.Performs(suspension.Table.Event(decl.Event).Role) {
			continue
		}
		dur := decl.Duration
		if over, ok := b.deps.Durations[suspension.Name+"."+decl.Name]; ok && over > 0 {
			dur = over
		}
		if s.Deadlines == nil {
			s.Deadlines = map[string]time.Time{}
		}
		s.Deadlines[decl.Name] = since.Add(dur)
	}
	return s, nil
}

// Reconcile takes the open attempts that match (all when match is nil),
// whose connection died with the Core process that carried them, to where
// the table takes them when it is lost: every attempt with a request in
// flight is uncertain now, and its answer_wait runs from now once the
// device connects. A Core that owns its store alone passes every attempt
// at start, before any connection; a replica that reaped an expired lease
// passes the attempts that lease's connection carried (OwnerEpoch).
//
// decision: an attempt left idle was stored before its quiesce was sent,
// and a Core that stopped then may have written it, so it is taken as a
// failed send (the frame may have left) and then a lost connection: the
// table's send_failed and connection_lost steps.
func Reconcile(ctx context.Context, st Store, now time.Time, log *slog.Logger, match func(store.Suspension) bool) {
	open, err := st.OpenSuspensions(ctx)
	if err != nil {
		log.Error("gateway: reconcile: open suspension attempts", "err", err)
		return
	}
	initial := suspension.Table.StateName(suspension.Table.Initial)
	for _, a := range open {
		if match != nil && !match(a) {
			continue
		}
		lost := []suspension.Event{suspension.EventConnectionLost}
		if a.State == initial {
			lost = []suspension.Event{suspension.EventSendFailed, suspension.EventConnectionLost}
		}
		to, err := LostState(a.State, lost...)
		if err != nil || to == a.State {
			continue
		}
		if err := st.TransitionSuspension(ctx, Move(a.ID, a.State, to, now), ""); err != nil {
			log.Warn("gateway: reconcile: suspension attempt", "suspend_id", a.ID, "err", err)
			continue
		}
		log.Info("gateway: reconcile: suspension attempt", "suspend_id", a.ID, "device_id", a.DeviceID, "owner_epoch", a.OwnerEpoch, "stored", a.State, "restored", to)
	}
}

// Holds reports whether attempt a, as stored, holds its Environment: it
// is open and has not expired (an expired attempt's resume or rollback
// went unanswered: released, though not settled).
func Holds(a store.Suspension) bool {
	return !a.Settled && a.State != suspension.StateExpired.String()
}

// Moved is the connection's Saver for suspension instances: it writes the
// instance's new state to the attempt, conditional on the state it left.
func (b *Book) Moved(i *peer.Instance) {
	r := b.rec(i.Key.ID)
	if r == nil {
		return
	}
	b.mu.Lock()
	from, code := r.persisted, r.code
	b.mu.Unlock()
	to := i.StateName()
	if to == from {
		return
	}
	ctx, cancel := b.deps.StoreCtx()
	defer cancel()
	err := b.deps.Store.TransitionSuspension(ctx, Move(i.Key.ID, from, to, b.deps.Clock.Now().UTC()), code)
	if err != nil {
		// Another writer moved the attempt: this connection's view is
		// stale and must not overwrite it.
		b.deps.Log.Warn("gateway: suspension attempt not moved", "suspend_id", i.Key.ID, "from", from, "to", to, "err", err)
	}
	b.mu.Lock()
	if err == nil {
		r.persisted = to
	}
	b.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
	if (i.Terminal() || suspension.State(i.State()) == suspension.StateExpired) && b.deps.Released != nil {
		b.deps.Released() // work held by the attempt may be placed now
	}
}

// Hooks returns the suspension machine's Core hooks over b.
func (b *Book) Hooks() suspension.CoreHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

// GuardOwnSuspension: the reply echoes this attempt's Environment and
// suspend_id, and an acceptance carries no error code.
func (h hooks) GuardOwnSuspension(f *fsm.Firing[*peer.Event]) bool {
	r := h.b.rec(f.Arg.Key.ID)
	return r != nil && guard.OwnSuspension(f.Arg.Payload(), f.Arg.Key.ID, r.wireEnv)
}

// GuardResumeMatchesQuiesce: a resume Core sends names the Environment its
// attempt fenced; Core builds it from the attempt, so this holds unless a
// caller handed it another attempt's request, which the table refuses
// before it leaves.
func (h hooks) GuardResumeMatchesQuiesce(f *fsm.Firing[*peer.Event]) bool {
	r := h.b.rec(f.Arg.Key.ID)
	return r != nil && guard.ResumeMatchesQuiesce(f.Arg.Payload(), r.wireEnv)
}

// DoRecordSuspended: the Saver writes the confirmed state; the attempt's
// refusal code, if an earlier answer left one, is not carried over.
func (h hooks) DoRecordSuspended(f *fsm.Firing[*peer.Event]) error {
	h.b.deps.Log.Info("gateway: environment suspended", "suspend_id", f.Arg.Key.ID)
	return nil
}

// DoRecordOutcome keeps a refusal's finite code for the Saver's write.
func (h hooks) DoRecordOutcome(f *fsm.Firing[*peer.Event]) error {
	if f.Arg == nil || f.Arg.Msg == nil {
		return nil
	}
	_, _, _, code, _ := wire.SuspensionAnswer(f.Arg.Msg.Payload)
	if r := h.b.rec(f.Arg.Key.ID); r != nil && code != "" {
		h.b.mu.Lock()
		r.code = code
		h.b.mu.Unlock()
	}
	return nil
}

// DoRecordTimeout keeps CodeAnswerTimeout for the Saver's write of
// expired; the Saver tells the gateway, which places the Environment's
// work again.
func (h hooks) DoRecordTimeout(f *fsm.Firing[*peer.Event]) error {
	r := h.b.rec(f.Arg.Key.ID)
	if r == nil {
		return fmt.Errorf("gateway: suspension attempt %s: no record", f.Arg.Key.ID)
	}
	h.b.mu.Lock()
	r.code = CodeAnswerTimeout
	h.b.mu.Unlock()
	h.b.deps.Log.Warn("gateway: suspension attempt expired: no answer within answer_wait; the Environment is released", "suspend_id", f.Arg.Key.ID)
	return nil
}

// SendEnvironmentResume queues the rollback that abandons an attempt whose
// answer_wait ran out (rolling_back): it names the attempt's Environment
// and suspend_id, and its write fires resume_rollback (or send_failed).
func (h hooks) SendEnvironmentResume(f *fsm.Firing[*peer.Event]) error {
	id := f.Arg.Key.ID
	r := h.b.rec(id)
	if r == nil {
		return fmt.Errorf("gateway: suspension attempt %s: no record", id)
	}
	log := h.b.deps.Log
	log.Warn("gateway: suspension attempt unanswered; rolling it back", "suspend_id", id, "from", suspension.Table.StateName(f.From))
	f.Arg.Driver().Send(peer.Outbound{ID: credential.NewUUID(), Payload: wire.EnvironmentResume{EnvironmentID: r.wireEnv, SuspendID: id, Rollback: true}}, func(err error) {
		if err != nil {
			log.Warn("gateway: rollback of an unanswered suspension attempt", "suspend_id", id, "err", err)
		}
	})
	return nil
}

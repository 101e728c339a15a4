package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/connection"
	"github.com/agentwire/agentwire/fsm/suspension"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// Suspension (daemon-protocol.txt:78, 96). Core starts a suspension
// attempt from the public API: it stores the attempt first (its ID is the
// wire suspend_id), then sends environment_quiesce; the suspension
// machine decides every outcome, and every move of the attempt's instance
// is written to the store with one write conditional on the state it left,
// so a stale writer (an old connection, a Core that restarted) can never
// move it. A reply is fenced by the identity it echoes
// (GuardOwnSuspension); a reply for another attempt routes to that
// attempt's instance, or to none, and never touches this one.
//
// An attempt is scoped: it goes to the device that hosts its Environment
// (store.Environment.DeviceID), and while it is open Core places no work
// of that Environment anywhere (suspended); other Environments, on the
// same device too, are not held. It is bounded: the table's answer_wait
// (30 s, policy) rolls an unanswered quiesce back and ends an unanswered
// resume or rollback expired with CodeAnswerTimeout, which releases the
// Environment while the attempt stays open for a late answer; an attempt
// whose connection was lost (expired ones too) is restored onto the
// device's next connection (adoptOpen) with the time its wait has left and
// rolled back there, so no attempt holds its Environment for want of an
// answer, and no fence is forgotten.
//
// Releasing an admission or closing an Executor never reaches this file:
// neither suspends, resumes or reclaims anything (daemon-protocol.txt:7).

// Errors of SuspendEnvironment and ResumeEnvironment.
var (
	// ErrSuspensionOpen: the Environment already has an unsettled attempt.
	ErrSuspensionOpen = errors.New("gateway: the Environment already has an unsettled suspension attempt")
	// ErrNotSuspended: the Environment has no unsettled attempt to resume.
	ErrNotSuspended = errors.New("gateway: the Environment has no unsettled suspension attempt")
	// ErrDeviceOffline: the device hosting the Environment (or the
	// attempt's device) has no connection now.
	ErrDeviceOffline = errors.New("gateway: the device is not connected")
)

// CodeAnswerTimeout is the error code an attempt records when it expires:
// its resume or rollback went unanswered for answer_wait. A late answer
// that settles the attempt keeps it beside the outcome.
const CodeAnswerTimeout = "answer_timeout"

// ReadSuspended is the unavailable reason of an idle read or export of an
// Environment an unsettled suspension attempt holds: nothing was placed.
const ReadSuspended = "environment_suspended"

// SuspensionRefused is a request the suspension machine refused before it
// left Core (the attempt is not in a state that admits it).
type SuspensionRefused struct{ Detail string }

func (e *SuspensionRefused) Error() string { return "gateway: suspension: " + e.Detail }

// suspensionWait bounds how long the API call waits for the Runtime's
// answer before it returns the attempt as it stands.
//
// decision: the Runtime answers a quiesce within its 5 s drain
// (wire-reference.md §4 quiesceTimeout); the API call waits 10 s, and an
// attempt still unanswered then is returned as it stands (quiescing or
// resuming). The attempt itself is bounded by the table's answer_wait,
// not by this wait: GET /api/v1/environments/{id} shows how it ended.
var suspensionWait = 10 * time.Second

// suspRec is Core's record of one attempt on one connection; guarded by
// the connection's mu.
type suspRec struct {
	wireEnv   string // the environment_id the attempt fences
	persisted string // the state last written to the store
	code      string // the error code of the last refusal
	signal    chan struct{}
}

func suspKey(id string) peer.Key { return peer.Key{Machine: suspension.Name, ID: id} }

func (c *conn) srec(id string) *suspRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sb[id]
}

// suspMoved is the Saver's part for suspension instances: it writes the
// instance's new state to the attempt, conditional on the state it left.
// suspMove is the store's move of attempt id from one state of the
// suspension machine to another.
func suspMove(id, from, to string, at time.Time) store.Move {
	return store.Move{Machine: suspension.Name, Key: id, From: from, To: to, At: at}
}

func (c *conn) suspMoved(i *peer.Instance) {
	r := c.srec(i.Key.ID)
	if r == nil {
		return
	}
	c.mu.Lock()
	from, code := r.persisted, r.code
	c.mu.Unlock()
	to := i.StateName()
	if to == from {
		return
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	err := c.g.cfg.Store.TransitionSuspension(ctx, suspMove(i.Key.ID, from, to, c.g.cfg.Clock.Now().UTC()), code)
	if err != nil {
		// Another writer moved the attempt: this connection's view is
		// stale and must not overwrite it.
		c.log.Warn("gateway: suspension attempt not moved", "suspend_id", i.Key.ID, "from", from, "to", to, "err", err)
	}
	c.mu.Lock()
	if err == nil {
		r.persisted = to
	}
	c.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
	if i.Terminal() || suspension.State(i.State()) == suspension.StateExpired {
		c.g.kick() // Turns held by the attempt may be placed now
	}
}

// suspHooks are the suspension machine's Core hooks on one connection.
type suspHooks struct{ c *conn }

var _ suspension.CoreHooks[*peer.Event] = suspHooks{}

// reply reads an environment_quiesced or environment_resumed payload.
func reply(f *fsm.Firing[*peer.Event]) (env, suspendID string, accepted bool, code string, ok bool) {
	if f.Arg == nil || f.Arg.Msg == nil {
		return "", "", false, "", false
	}
	return wire.SuspensionAnswer(f.Arg.Msg.Payload)
}

// GuardOwnSuspension: the reply echoes this attempt's Environment and
// suspend_id, and an acceptance carries no error code.
func (h suspHooks) GuardOwnSuspension(f *fsm.Firing[*peer.Event]) bool {
	r := h.c.srec(f.Arg.Key.ID)
	return r != nil && guard.OwnSuspension(f.Arg.Payload(), f.Arg.Key.ID, r.wireEnv)
}

// GuardResumeMatchesQuiesce: a resume Core sends names the Environment its
// attempt fenced; Core builds it from the attempt, so this holds unless a
// caller handed it another attempt's request, which the table refuses
// before it leaves.
func (h suspHooks) GuardResumeMatchesQuiesce(f *fsm.Firing[*peer.Event]) bool {
	r := h.c.srec(f.Arg.Key.ID)
	return r != nil && guard.ResumeMatchesQuiesce(f.Arg.Payload(), r.wireEnv)
}

// DoRecordSuspended: the Saver writes the confirmed state; the attempt's
// refusal code, if an earlier answer left one, is not carried over.
func (h suspHooks) DoRecordSuspended(f *fsm.Firing[*peer.Event]) error {
	h.c.log.Info("gateway: environment suspended", "suspend_id", f.Arg.Key.ID)
	return nil
}

// DoRecordOutcome keeps a refusal's finite code for the Saver's write.
func (h suspHooks) DoRecordOutcome(f *fsm.Firing[*peer.Event]) error {
	_, _, _, code, _ := reply(f)
	if r := h.c.srec(f.Arg.Key.ID); r != nil && code != "" {
		h.c.mu.Lock()
		r.code = code
		h.c.mu.Unlock()
	}
	return nil
}

// DoRecordTimeout keeps CodeAnswerTimeout for the Saver's write of
// expired; the Saver kicks the worker, which places the Environment's work
// again (suspended).
func (h suspHooks) DoRecordTimeout(f *fsm.Firing[*peer.Event]) error {
	r := h.c.srec(f.Arg.Key.ID)
	if r == nil {
		return fmt.Errorf("gateway: suspension attempt %s: no record", f.Arg.Key.ID)
	}
	h.c.mu.Lock()
	r.code = CodeAnswerTimeout
	h.c.mu.Unlock()
	h.c.log.Warn("gateway: suspension attempt expired: no answer within answer_wait; the Environment is released", "suspend_id", f.Arg.Key.ID)
	return nil
}

// SendEnvironmentResume queues the rollback that abandons an attempt whose
// answer_wait ran out (rolling_back): it names the attempt's Environment
// and suspend_id, and its write fires resume_rollback (or send_failed).
func (h suspHooks) SendEnvironmentResume(f *fsm.Firing[*peer.Event]) error {
	id := f.Arg.Key.ID
	r := h.c.srec(id)
	if r == nil {
		return fmt.Errorf("gateway: suspension attempt %s: no record", id)
	}
	log := h.c.log
	log.Warn("gateway: suspension attempt unanswered; rolling it back", "suspend_id", id, "from", suspension.Table.StateName(f.From))
	f.Arg.Driver().Send(peer.Outbound{ID: newUUID(), Payload: wire.EnvironmentResume{EnvironmentID: r.wireEnv, SuspendID: id, Rollback: true}}, func(err error) {
		if err != nil {
			log.Warn("gateway: rollback of an unanswered suspension attempt", "suspend_id", id, "err", err)
		}
	})
	return nil
}

// wireEnvironment is the environment_id Core names an Environment by on the
// wire (its bound local Environment's ID, as for reads) and the device that
// hosts it.
//
// decision: only an Environment with a local binding that a device hosts
// has something to quiesce (daemon-protocol.txt:96 fences the
// Environment's workspace, which lives on its device); the binding's ID is
// the identity runtime_prepare and reads already use. An Environment of
// type none, or a local one stored before registration that no device
// hosts, answers ErrNoWorkspace.
func (g *Gateway) wireEnvironment(ctx context.Context, envID string) (wireID, deviceID string, err error) {
	env, err := g.cfg.Store.GetEnvironment(ctx, envID)
	if err != nil {
		return "", "", err
	}
	t, err := wire.ParseEnvironmentType(env.Type)
	var b wire.LocalEnvironment
	if err != nil || !t.Local() || env.DeviceID == "" || len(env.Binding) == 0 || json.Unmarshal(env.Binding, &b) != nil || b.ID == "" || len(b.ID) > wire.MaxIDBytes {
		return "", "", ErrNoWorkspace
	}
	return b.ID, env.DeviceID, nil
}

// hostConn is the device's current connection.
//
// decision: an attempt goes only to the device that hosts its Environment
// (its resume to the device the attempt was sent to): a valid credential and
// connection are never authority over another binding
// (daemon-protocol.txt:19), so neither the caller nor "the only connected
// device" chooses it.
func (g *Gateway) hostConn(deviceID string) (*conn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.conns[deviceID]; c != nil {
		return c, nil
	}
	return nil, ErrDeviceOffline
}

func (c *conn) addSusp(id string, r *suspRec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sb == nil {
		c.sb = map[string]*suspRec{}
	}
	c.sb[id] = r
}

// SuspendEnvironment starts a suspension attempt of the Environment on the
// device that hosts it and, with wait, waits a bounded time for the
// quiesce's answer. It returns the attempt as stored.
func (g *Gateway) SuspendEnvironment(ctx context.Context, envID string, wait bool) (store.Suspension, error) {
	wireEnv, deviceID, err := g.wireEnvironment(ctx, envID)
	if err != nil {
		return store.Suspension{}, err
	}
	// Only a better answer when an attempt is already open; the conditional
	// insert below decides.
	if open, err := g.cfg.Store.LatestSuspension(ctx, envID); err == nil && !open.Settled {
		return store.Suspension{}, ErrSuspensionOpen
	}
	c, err := g.hostConn(deviceID)
	if err != nil {
		return store.Suspension{}, err
	}
	initial := suspension.Table.StateName(suspension.Table.Initial)
	a := store.Suspension{ID: newUUID(), EnvironmentID: envID, DeviceID: c.deviceID, State: initial, CreatedAt: g.cfg.Clock.Now().UTC()}
	// The attempt is stored before anything is sent, so a Core that stops
	// right after the send still knows the attempt its resume must name.
	if err := g.cfg.Store.CreateSuspension(ctx, a); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return store.Suspension{}, ErrSuspensionOpen
		}
		return store.Suspension{}, err
	}
	r := &suspRec{wireEnv: wireEnv, persisted: initial, signal: make(chan struct{}, 1)}
	c.addSusp(a.ID, r)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	err = pc.Send(g.ctx, peer.Outbound{ID: newUUID(), Payload: wire.EnvironmentQuiesce{EnvironmentID: wireEnv, SuspendID: a.ID}})
	if err != nil && !isWriteError(err) {
		// Nothing left Core: the attempt ends unsent; nothing is suspended.
		sctx, cancel := g.storeCtx()
		defer cancel()
		c.mu.Lock()
		from := r.persisted
		c.mu.Unlock()
		if terr := g.cfg.Store.TransitionSuspension(sctx, suspMove(a.ID, from, store.NotSent, g.cfg.Clock.Now().UTC()), ""); terr != nil {
			c.log.Warn("gateway: settle an unsent suspension attempt", "suspend_id", a.ID, "err", terr)
		}
		got, _ := g.cfg.Store.GetSuspension(sctx, a.ID)
		return got, &SuspensionRefused{Detail: "environment_quiesce was not sent: " + boundedErr(err)}
	}
	if !wait {
		// Only until the send's own move is written.
		return g.awaitSuspension(ctx, c, pc, a.ID, r, initial)
	}
	return g.awaitSuspension(ctx, c, pc, a.ID, r, initial, suspension.StateQuiescing.String())
}

// awaitSuspension waits until the attempt's stored state is none of
// `pending` (the state before the send, whose move may not be written yet,
// and the state the send leads to) or the wait runs out, and returns the
// attempt as stored.
func (g *Gateway) awaitSuspension(ctx context.Context, c *conn, pc *peer.Conn, id string, r *suspRec, pending ...string) (store.Suspension, error) {
	t := g.cfg.Clock.NewTimer(suspensionWait)
	defer t.Stop()
	for {
		c.mu.Lock()
		state := r.persisted
		c.mu.Unlock()
		if !slices.Contains(pending, state) {
			break
		}
		select {
		case <-r.signal:
			continue
		case <-t.C():
		case <-pc.Done():
		case <-ctx.Done():
		case <-g.ctx.Done():
		}
		break
	}
	sctx, cancel := g.storeCtx()
	defer cancel()
	return g.cfg.Store.GetSuspension(sctx, id)
}

// ResumeEnvironment resumes the Environment's unsettled attempt (rollback
// abandons it) on its device's current connection and, with wait, waits a
// bounded time for the answer. An attempt whose instance is not on that connection (it
// was sent on an earlier connection, or by a Core that has since
// restarted) is restored there from the store first: the connection that
// carried its last request is gone, so the table's connection_lost step
// gives the state it restarts from (an unanswered request: uncertain).
func (g *Gateway) ResumeEnvironment(ctx context.Context, envID string, rollback, wait bool) (store.Suspension, error) {
	wireEnv, _, err := g.wireEnvironment(ctx, envID)
	if err != nil {
		return store.Suspension{}, err
	}
	a, err := g.cfg.Store.LatestSuspension(ctx, envID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.Settled) {
		return a, ErrNotSuspended
	}
	if err != nil {
		return store.Suspension{}, err
	}
	c, err := g.hostConn(a.DeviceID)
	if err != nil {
		return a, err
	}
	c.mu.Lock()
	pc := c.pc
	r := c.sb[a.ID]
	c.mu.Unlock()
	var prepErr error
	if err := pc.Do(ctx, func(d *peer.Driver) { r, prepErr = g.adoptAttempt(c, d, a, wireEnv, r) }); err != nil {
		return a, err
	}
	if prepErr != nil {
		return a, prepErr
	}
	c.mu.Lock()
	before := r.persisted
	c.mu.Unlock()
	err = pc.Send(g.ctx, peer.Outbound{ID: newUUID(), Payload: wire.EnvironmentResume{EnvironmentID: wireEnv, SuspendID: a.ID, Rollback: rollback}})
	if err != nil && !isWriteError(err) {
		var se *peer.SendError
		if errors.As(err, &se) {
			return a, &SuspensionRefused{Detail: boundedErr(se.Err)}
		}
		return a, err
	}
	if !wait {
		return g.awaitSuspension(ctx, c, pc, a.ID, r, before)
	}
	return g.awaitSuspension(ctx, c, pc, a.ID, r, before, suspension.StateResuming.String())
}

// adoptAttempt makes sure the attempt has its instance on d (c's driver),
// on the connection's loop. It runs before the resume is queued.
func (g *Gateway) adoptAttempt(c *conn, d *peer.Driver, a store.Suspension, wireEnv string, r *suspRec) (*suspRec, error) {
	if _, ok := d.Lookup(suspKey(a.ID)); ok {
		// The record is read again here, on the loop: a caller's copy is
		// read before its Do, and the connection's own adoptOpen (run on
		// the loop once the connection went live) may have restored the
		// attempt in between; restoring it twice failed the API's resume
		// with "the instance already exists" right after a reconnection.
		c.mu.Lock()
		cur := c.sb[a.ID]
		c.mu.Unlock()
		if cur != nil {
			return cur, nil
		}
		if r != nil {
			return r, nil
		}
	}
	// Where the table takes this state when its connection is lost.
	to, err := lostState(a.State, suspension.EventConnectionLost)
	if err != nil {
		return nil, fmt.Errorf("gateway: suspension attempt %s: %w", a.ID, err)
	}
	// The state's timers run from the move into it, which the store
	// dates: a restored attempt keeps the time its wait has left.
	since := a.UpdatedAt
	if since.IsZero() {
		since = a.CreatedAt
	}
	if to != a.State {
		since = g.cfg.Clock.Now().UTC()
		ctx, cancel := g.storeCtx()
		defer cancel()
		if err := g.cfg.Store.TransitionSuspension(ctx, suspMove(a.ID, a.State, to, since), ""); err != nil {
			return nil, fmt.Errorf("gateway: suspension attempt %s moved meanwhile: %w", a.ID, err)
		}
	}
	saved, err := g.savedAttempt(a.ID, to, since)
	if err != nil {
		return nil, err
	}
	r = &suspRec{wireEnv: wireEnv, persisted: to, code: a.ErrorCode, signal: make(chan struct{}, 1)}
	if err := d.Restore([]peer.Saved{saved}); err != nil {
		return nil, err
	}
	c.addSusp(a.ID, r)
	c.log.Info("gateway: suspension attempt restored", "suspend_id", a.ID, "stored", a.State, "restored", to)
	return r, nil
}

// lostState is the state the table takes a stored attempt to when the
// connection that carried its last request is gone: the given events'
// steps in turn, each where it moves the machine (connection_lost takes
// quiescing, rolling_back and resuming to uncertain).
func lostState(state string, events ...suspension.Event) (string, error) {
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

// savedAttempt is the instance an attempt is restored as: its state, and
// for each of Core's timers the state keeps armed the deadline that
// follows from the move into it at since (peer.Driver.Restore re-arms it
// for the time that remains; a deadline passed fires at once).
func (g *Gateway) savedAttempt(id, state string, since time.Time) (peer.Saved, error) {
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
		if over, ok := g.cfg.Durations[suspension.Name+"."+decl.Name]; ok && over > 0 {
			dur = over
		}
		if s.Deadlines == nil {
			s.Deadlines = map[string]time.Time{}
		}
		s.Deadlines[decl.Name] = since.Add(dur)
	}
	return s, nil
}

// adoptOpen restores onto c, once its connection is live, every unsettled
// attempt of its device that c does not carry yet, so that the attempt's
// answer_wait runs again (for the time it has left) and a lost attempt is
// rolled back on this connection if nobody resumes it first. It runs on
// c's loop.
//
// decision: an attempt still idle (its quiesce not yet written by the
// SuspendEnvironment that created it) is that call's to settle; the idle
// attempts a stopped Core left are taken to uncertain at start
// (reconcileSuspensions).
func (g *Gateway) adoptOpen(c *conn, d *peer.Driver) {
	if !g.owns(c) {
		return
	}
	ctx, cancel := g.storeCtx()
	defer cancel()
	open, err := g.cfg.Store.OpenSuspensions(ctx)
	if err != nil {
		c.log.Warn("gateway: open suspension attempts", "err", err)
		return
	}
	initial := suspension.Table.StateName(suspension.Table.Initial)
	for _, a := range open {
		if a.DeviceID != c.deviceID || a.State == initial {
			continue
		}
		c.mu.Lock()
		r := c.sb[a.ID]
		c.mu.Unlock()
		if _, ok := d.Lookup(suspKey(a.ID)); ok {
			continue
		}
		wireEnv, _, err := g.wireEnvironment(ctx, a.EnvironmentID)
		if err != nil {
			c.log.Warn("gateway: suspension attempt not restored", "suspend_id", a.ID, "err", err)
			continue
		}
		if _, err := g.adoptAttempt(c, d, a, wireEnv, r); err != nil {
			c.log.Warn("gateway: suspension attempt not restored", "suspend_id", a.ID, "err", err)
		}
	}
}

// connMoved is the Saver's part for the connection instance: when the
// connection goes live (its first valid heartbeat), the device's open
// attempts are adopted on its loop.
func (c *conn) connMoved(i *peer.Instance) {
	if connection.State(i.State()) != connection.StateLive {
		return
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if pc == nil {
		return
	}
	c.g.wg.Add(1)
	go func() {
		defer c.g.wg.Done()
		_ = pc.Do(c.g.ctx, func(d *peer.Driver) { c.g.adoptOpen(c, d) })
	}()
}

// reconcileSuspensions runs at start, before any connection: the
// connections of an earlier Core process died with it, so every attempt it
// left with a request in flight is uncertain now, and its answer_wait runs
// from now once the device connects.
//
// decision: an attempt left idle was stored before its quiesce was sent,
// and a Core that stopped then may have written it, so it is taken as a
// failed send (the frame may have left) and then a lost connection: the
// table's send_failed and connection_lost steps. Like reconcile, this
// assumes one Core process per store.
func (g *Gateway) reconcileSuspensions(ctx context.Context) {
	open, err := g.cfg.Store.OpenSuspensions(ctx)
	if err != nil {
		g.cfg.Logger.Error("gateway: reconcile: open suspension attempts", "err", err)
		return
	}
	now := g.cfg.Clock.Now().UTC()
	initial := suspension.Table.StateName(suspension.Table.Initial)
	for _, a := range open {
		lost := []suspension.Event{suspension.EventConnectionLost}
		if a.State == initial {
			lost = []suspension.Event{suspension.EventSendFailed, suspension.EventConnectionLost}
		}
		to, err := lostState(a.State, lost...)
		if err != nil || to == a.State {
			continue
		}
		if err := g.cfg.Store.TransitionSuspension(ctx, suspMove(a.ID, a.State, to, now), ""); err != nil {
			g.cfg.Logger.Warn("gateway: reconcile: suspension attempt", "suspend_id", a.ID, "err", err)
			continue
		}
		g.cfg.Logger.Info("gateway: reconcile: suspension attempt", "suspend_id", a.ID, "stored", a.State, "restored", to)
	}
}

// suspended reports whether an unsettled attempt holds the Environment:
// Core places none of its work (Turns, idle reads and exports, writes,
// initialization) meanwhile. Other Environments are not held, on the same
// device either, and neither is the Environment of an expired attempt (its
// resume or rollback went unanswered: released, though not settled). A
// store error holds it too.
//
// decision: while an attempt is open the Runtime admits no new work of the
// Environment it fences (wire-reference.md §2.12), so work placed there
// could only fail; it stays queued (a Turn) or answers unavailable (a read)
// until the attempt settles, which answer_wait bounds. The fence is the
// Environment's, not the device's: its suspend_id names one Environment
// (daemon-protocol.txt:78), and the attempt goes only to the device hosting
// it (hostConn).
func (g *Gateway) suspended(ctx context.Context, envID string) bool {
	a, err := g.cfg.Store.LatestSuspension(ctx, envID)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	return err != nil || !(a.Settled || a.State == suspension.StateExpired.String())
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// The worker: it takes due queued Turns oldest first, selects a connected
// device whose declaration admits the Turn, checks that declaration again
// just before it claims the Turn (one conditional write), and executes the
// Turn on that device's connection through its driver: execution_prepare,
// ready, execution_start, then the Run machine's hooks record the events
// and the outcome (daemon-protocol.txt:102-110).

// Journal is where Run events go: the Turn's event journal, whose
// subscribers (the SSE streams) are woken by Append and Notify. Append
// writes its events in one atomic store write (store.Commit).
type Journal interface {
	Append(ctx context.Context, events ...store.Event) ([]store.Event, error)
	Notify(turnID string)
}

type nopJournal struct{ st store.Store }

func (j nopJournal) Append(ctx context.Context, events ...store.Event) ([]store.Event, error) {
	res, err := j.st.Commit(ctx, store.Batch{Events: events})
	return res.Events, err
}
func (nopJournal) Notify(string) {}

// Kick wakes the worker (a Turn was submitted, a device declared itself).
func (g *Gateway) Kick() { g.kick() }

func (g *Gateway) kick() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// backoff is the delay before a Turn refused with preparation_capacity is
// due again.
//
// decision: the protocol leaves the retry policy to the Worker
// (daemon-protocol.txt:116); Core doubles from RetryBase up to RetryMax.
func (g *Gateway) backoff(attempts int) time.Duration {
	d := g.cfg.RetryBase
	for i := 1; i < attempts && d < g.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, g.cfg.RetryMax)
}

// schedule runs the worker until the gateway closes.
func (g *Gateway) schedule() {
	defer g.wg.Done()
	timer := g.cfg.Clock.NewTimer(g.cfg.PollInterval)
	defer timer.Stop()
	for {
		g.dispatch()
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(g.cfg.PollInterval)
		select {
		case <-g.ctx.Done():
			return
		case <-g.wake:
		case <-timer.C():
		}
	}
}

// dispatch claims and starts every due Turn it can place now. A Turn no
// connected device admits stays queued.
//
// Capacity comes first: while no connection can take another admission,
// a kick reads nothing (every finished Turn kicks, and a full connection
// used to cost a read of 64 due Turns and their Sessions per kick). The
// Sessions and Environments of the due Turns are read once per kick.
func (g *Gateway) dispatch() {
	if !g.anyCapacity() {
		return
	}
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	due, err := g.cfg.Store.DueTurns(ctx, g.cfg.Clock.Now(), 64)
	if err != nil {
		if g.ctx.Err() == nil {
			g.cfg.Logger.Warn("gateway: due turns", "err", err)
		}
		return
	}
	k := &kick{sessions: map[string]store.Session{}, envs: map[string]store.Environment{}}
	var placed []*placement
	for _, t := range due {
		if !g.anyCapacity() {
			break // the rest waits for the kick of a settled admission
		}
		pl, err := g.place(ctx, k, t)
		if err != nil && g.ctx.Err() == nil {
			g.cfg.Logger.Warn("gateway: place turn", "turn_id", t.ID, "err", err)
		}
		if pl != nil {
			placed = append(placed, pl)
		}
	}
	// One commit claims every Turn the kick placed.
	g.claim(ctx, placed)
}

// anyCapacity reports whether some connection can take another admission.
func (g *Gateway) anyCapacity() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		if c.admissions.Load() < maxAdmissions {
			return true
		}
	}
	return false
}

// kick is what one dispatch read: each Session and Environment once.
type kick struct {
	sessions map[string]store.Session
	envs     map[string]store.Environment
}

func (k *kick) session(ctx context.Context, st store.Store, id string) (store.Session, error) {
	if s, ok := k.sessions[id]; ok {
		return s, nil
	}
	s, err := st.GetSession(ctx, id)
	if err == nil {
		k.sessions[id] = s
	}
	return s, err
}

func (k *kick) environment(ctx context.Context, st store.Store, id string) (store.Environment, error) {
	if e, ok := k.envs[id]; ok {
		return e, nil
	}
	e, err := st.GetEnvironment(ctx, id)
	if err == nil {
		k.envs[id] = e
	}
	return e, err
}

// turnPlan is what executing one Turn needs besides its connection.
type turnPlan struct {
	turn     store.Turn
	session  store.Session
	env      store.Environment
	required wire.CapabilitySet
	admit    wire.AdmissionInput
}

func (g *Gateway) plan(ctx context.Context, k *kick, t store.Turn) (turnPlan, error) {
	p := turnPlan{turn: t}
	var err error
	if p.session, err = k.session(ctx, g.cfg.Store, t.SessionID); err != nil {
		return p, fmt.Errorf("session: %w", err)
	}
	if p.env, err = k.environment(ctx, g.cfg.Store, p.session.EnvironmentID); err != nil {
		return p, fmt.Errorf("environment: %w", err)
	}
	var input wire.MessageInput
	if err := json.Unmarshal(t.Input, &input); err != nil {
		return p, fmt.Errorf("input: %w", err)
	}
	envType, err := wire.ParseEnvironmentType(p.env.Type)
	if err != nil {
		return p, fmt.Errorf("environment type: %w", err)
	}
	// decision: Sessions carry no engine profile or Agent features yet, so
	// the profile declares no control and the Agent none of the optional
	// features (multi_agent disabled, which requires subagent_control);
	// the rows for the Environment, the input and the always row apply in
	// full (daemon-protocol.txt:33-50).
	p.admit = wire.AdmissionInput{Environment: envType, Input: input,
		NativeSessionMissing: p.session.Started && p.session.NativeSessionID == ""}
	p.required, err = wire.RequiredCapabilities(p.admit)
	return p, err
}

// workspace is the registered Environment whose workspace p's work uses,
// or "" when its Environment has none.
func (p turnPlan) workspace() string {
	if p.admit.Environment.Local() {
		return p.env.ID
	}
	return ""
}

// admits reports the capabilities of the Session's agent kind if decl
// admits the plan. Only that kind is considered: Core never falls back to
// another Harness (daemon-protocol.txt:157).
func admits(decl wire.Heartbeat, p turnPlan) (wire.AgentKindCapabilities, bool) {
	for _, k := range decl.SupportedAgentKinds {
		if k.Kind != p.session.AgentKind {
			continue
		}
		available := k.Available != nil && *k.Available
		return k.Capabilities, p.required.Check(k.Capabilities, available) == nil
	}
	return wire.AgentKindCapabilities{}, false
}

// candidates lists the connections whose current declaration admits p,
// by device ID so that placement is deterministic.
func (g *Gateway) candidates(p turnPlan) []*conn {
	g.mu.Lock()
	list := make([]*conn, 0, len(g.conns))
	for _, c := range g.conns {
		list = append(list, c)
	}
	g.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].deviceID < list[j].deviceID })
	out := list[:0]
	for _, c := range list {
		if !hosts(c, p) {
			continue
		}
		if decl, ok := c.snapshot(); ok {
			if _, ok := admits(decl, p); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// hosts reports whether c may carry work of p's Session: its device
// belongs to the Session's project and, for a local Environment, is the
// device that hosts the Environment's workspace (docs/tenancy.md). A
// device no project owns carries nothing.
//
// decision: a valid credential and connection are never authority to
// choose another Session or Environment binding (daemon-protocol.txt:19),
// and Core places a Session's work only where its binding lives.
func hosts(c *conn, p turnPlan) bool {
	project := c.owner()
	if project == "" || project != p.session.Project {
		return false
	}
	if p.admit.Environment.Local() {
		return p.env.DeviceID != "" && c.deviceID == p.env.DeviceID && p.env.Project == project
	}
	return true
}

// decision: a Session's Turns run one after another: the worker places a
// Turn only while no other Turn of its Session is in flight here. The
// admission rule for native Session recovery (daemon-protocol.txt:38) and
// the native Session a Turn resumes both depend on the previous Turn's
// outcome, which a concurrent Turn would not see.
func (g *Gateway) place(ctx context.Context, k *kick, t store.Turn) (*placement, error) {
	g.mu.Lock()
	busy := g.inflight[t.ID] || g.sessions[t.SessionID] != ""
	g.mu.Unlock()
	if busy {
		return nil, nil
	}
	p, err := g.plan(ctx, k, t)
	if err != nil {
		return nil, err
	}
	for _, c := range g.candidates(p) {
		// The final check, against the declaration as it is now and the
		// connection still owning the device (daemon-protocol.txt:33).
		decl, ok := c.snapshot()
		if !ok || !g.owns(c) || c.admissions.Load() >= maxAdmissions || !g.placeable(ctx, c, p) {
			continue
		}
		caps, ok := admits(decl, p)
		if !ok {
			continue
		}
		runID := credential.NewID("run")
		if g.writeBlocksTurns(ctx, t.SessionID) {
			return nil, nil // a workspace write holds the Session's mutation owner (workspace_write.go)
		}
		if !g.holdForTurn(t.SessionID, p.workspace(), t.ID, c, runID) {
			return nil, nil // a read or write holds the Session or its workspace; it kicks when done
		}
		// Reserved until the kick's claims commit: the connection's
		// admission, and the Turn and its Session as in flight.
		c.admissions.Add(1)
		g.mu.Lock()
		g.inflight[t.ID] = true
		g.sessions[t.SessionID] = t.ID
		g.mu.Unlock()
		return &placement{p: p, c: c, caps: caps, claim: store.TurnClaim{TurnID: t.ID,
			Claim: store.Claim{DeviceID: c.deviceID, OwnerEpoch: c.epoch, RunID: runID, At: g.cfg.Clock.Now()}}}, nil
	}
	return nil, nil
}

// placement is a due Turn placed on a connection, its claim not yet
// committed.
type placement struct {
	p     turnPlan
	c     *conn
	caps  wire.AgentKindCapabilities
	claim store.TurnClaim
}

// claim commits the kick's claims in one store write, then executes each
// Turn whose claim applied; the others give their reservations back.
func (g *Gateway) claim(ctx context.Context, placed []*placement) {
	if len(placed) == 0 {
		return
	}
	b := store.Batch{Claims: make([]store.TurnClaim, len(placed))}
	for i, pl := range placed {
		b.Claims[i] = pl.claim
	}
	res, err := g.cfg.Store.Commit(ctx, b)
	for i, pl := range placed {
		cerr := err
		if i < len(res.Claims) {
			cerr = res.Claims[i]
		}
		if cerr != nil {
			if !errors.Is(cerr, store.ErrStale) && g.ctx.Err() == nil {
				// ErrStale: another worker took it, or it is no longer due.
				g.cfg.Logger.Warn("gateway: claim turn", "turn_id", pl.claim.TurnID, "err", cerr)
			}
			g.unplace(pl)
			continue
		}
		g.launch(pl)
	}
}

// unplace gives back what place reserved.
func (g *Gateway) unplace(pl *placement) {
	t := pl.p.turn
	pl.c.admissions.Add(-1)
	g.dropTurnHold(t.SessionID, t.ID)
	g.mu.Lock()
	delete(g.inflight, t.ID)
	delete(g.sessions, t.SessionID)
	g.mu.Unlock()
}

// launch executes a claimed Turn on its connection.
func (g *Gateway) launch(pl *placement) {
	t, c, p := pl.p.turn, pl.c, pl.p
	p.turn.RunID, p.turn.Attempts = pl.claim.RunID, t.Attempts+1
	admitted := sync.OnceFunc(func() {
		c.admissions.Add(-1)
		g.kick() // a kick skipped while the connection was full
	})
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer func() {
			g.dropTurnHold(t.SessionID, t.ID)
			g.mu.Lock()
			delete(g.inflight, t.ID)
			delete(g.sessions, t.SessionID)
			g.mu.Unlock()
			// A dispatch that ran meanwhile skipped this Turn as in
			// flight; if it was requeued (preparation_capacity), it must
			// be looked at again without waiting for the next poll.
			g.kick()
		}()
		g.execute(c, p, pl.caps, admitted)
	}()
}

func (g *Gateway) owns(c *conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conns[c.deviceID] == c
}

// maxAdmissions bounds the preparations one connection has open (claimed,
// and its preparation instance not yet settled).
//
// decision: the Runtime retains at most 64 admission records per
// connection (daemon-protocol.txt:116) and Core's driver holds as many
// preparation instances; the worker leaves a Turn queued rather than send
// an execution_prepare neither side could hold.
const maxAdmissions = 64

// execute runs one claimed Turn on c.
//
// admitted gives the Turn's place among the connection's open admissions
// back; it runs once the preparation instance settles (conn.moved), or
// here when no execution_prepare left.
func (g *Gateway) execute(c *conn, p turnPlan, caps wire.AgentKindCapabilities, admitted func()) {
	t := p.turn
	log := c.log.With("turn_id", t.ID, "run_id", t.RunID)
	prepID := credential.NewID("prep")
	// The recorded native Session is resumed; without one after a started
	// Turn, ApplyOptIns asks for require_existing_native_session
	// (daemon-protocol.txt:38, 60).
	cfg := wire.PromptRequest{AgentKind: p.session.AgentKind, AgentStateKey: wire.AgentStateKey(p.session.ID), AgentSessionID: p.session.NativeSessionID}
	sc := wire.SessionConfig{Environment: p.admit.Environment, Capabilities: caps,
		StartedTurn: p.session.Started, NativeSessionID: p.session.NativeSessionID}
	if p.admit.Environment.Local() && len(p.env.Binding) > 0 {
		var b wire.LocalEnvironment
		if err := json.Unmarshal(p.env.Binding, &b); err == nil {
			sc.Binding = &b
		}
	}
	if err := wire.ApplyOptIns(&cfg, sc); err != nil {
		admitted()
		g.fail(log, t, store.Outcome{Reason: ReasonInvalidConfiguration}, err)
		return
	}
	if !g.initializeTurn(c, p, log) {
		admitted() // no execution_prepare left
		return     // transfer.go: requeued, or failed with its reason
	}
	pr := &prepRec{turnID: t.ID, runID: t.RunID, attempts: t.Attempts, result: make(chan prepResult, 1), admitted: admitted}
	rr := &runRec{turnID: t.ID, sessionID: p.session.ID, runID: t.RunID, finished: make(chan struct{})}
	pr.run = rr
	c.mu.Lock()
	c.preps[prepID], c.runs[t.RunID] = pr, rr
	pc := c.pc
	c.mu.Unlock()
	g.mu.Lock()
	g.preparing[t.ID] = pr
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.preparing, t.ID)
		g.mu.Unlock()
	}()

	// Step 1: the record above is the subscription to the preparation's
	// statuses; then execution_prepare with no Run input.
	err := pc.Send(g.ctx, peer.Outbound{ID: prepID, Payload: wire.ExecutionPrepare{SessionID: p.session.ID, Configuration: cfg}})
	if err != nil {
		var se *peer.SendError
		if errors.As(err, &se) {
			admitted() // refused before an instance took it
			c.dropUnsent(prepID, pr)
		}
		g.unsent(log, t, err)
		return
	}
	var res prepResult
	select {
	case res = <-pr.result:
	case <-g.ctx.Done():
		return
	}
	if res.outcome != fsm.OutcomeNone {
		g.prepEnded(log, t, res, pr.wasCancelled())
		return
	}
	if !pr.decideStart() {
		g.releaseCancelled(log, pc, prepID, t, res)
		return
	}
	// Step 3: the Run's record exists (its subscription); execution_start
	// with the ordered input. The Turn is running once the start left.
	var input wire.MessageInput
	_ = json.Unmarshal(t.Input, &input)
	start := wire.ExecutionStart{ExecutorID: res.executorID, Handle: res.handle, RunID: t.RunID, Input: input}
	sent := make(chan error, 1)
	err = pc.Do(g.ctx, func(d *peer.Driver) {
		d.Send(peer.Outbound{ID: prepID, Payload: start}, func(err error) {
			if err == nil {
				// On the loop, before any later frame of the Run is
				// delivered: the start goes into the loop's batch ahead of
				// the Run's events, so the Turn is running when they are
				// committed (journal.go).
				c.pending.Starts = append(c.pending.Starts, store.Start{TurnID: t.ID, RunID: t.RunID, At: g.cfg.Clock.Now()})
				c.pumpInput(d, rr)
			}
			sent <- err
		})
	})
	if err == nil {
		select {
		case err = <-sent:
		case <-pc.Done():
			select {
			case err = <-sent:
			default:
				err = peer.ErrConnectionLost
			}
		}
	}
	var we *peer.WriteError
	switch {
	case err == nil, errors.As(err, &we):
		// A failed write is possibly delivered: the Run machine recorded
		// delivery_unknown and the lost connection ends the Run.
	default:
		// Refused before anything left, or the connection went first: no
		// Run input was submitted, and the admission (connection-local)
		// goes with the connection or expires (daemon-protocol.txt:116).
		g.fail(log, t, store.Outcome{Reason: ReasonStartFailed}, err)
		return
	}
	select {
	case <-rr.finished:
	case <-g.ctx.Done():
	}
}

// ReasonInvalidConfiguration is the public reason of a Turn whose Session
// configuration could not be built into an execution_prepare.
const ReasonInvalidConfiguration = "invalid_configuration"

// unsent handles an execution_prepare that was not written.
//
// decision: a frame refused before it left, or never written because the
// connection went first, delivered nothing, so the Turn goes back to the
// queue; only a failed write is uncertain, and that authorizes no replay
// (daemon-protocol.txt:116): the Turn fails with delivery_unknown.
func (g *Gateway) unsent(log interface{ Warn(string, ...any) }, t store.Turn, err error) {
	var we *peer.WriteError
	if errors.As(err, &we) {
		g.fail(log, t, store.Outcome{Reason: store.ReasonDeliveryUnknown}, err)
		return
	}
	ctx, cancel := storeCtx()
	defer cancel()
	now := g.cfg.Clock.Now()
	if rerr := g.cfg.Store.RequeueTurn(ctx, t.ID, t.RunID, now.Add(g.backoff(t.Attempts)), now); rerr != nil {
		log.Warn("gateway: requeue turn", "err", rerr)
	}
	log.Warn("gateway: execution_prepare not sent; the Turn is queued again", "err", err)
}

// releaseCancelled abandons the ready admission of a Turn the API
// cancelled before its start.
//
// decision: the Turn is cancelled once execution_release is handed to
// the connection, whatever becomes of the release: preparation submits no
// Run input (daemon-protocol.txt:109, 141) and releasing abandons only the
// admission (daemon-protocol.txt:112, 114), so nothing of the Turn ran;
// the Runtime settles the admission's cleanup.
func (g *Gateway) releaseCancelled(log interface{ Warn(string, ...any) }, pc *peer.Conn, prepID string, t store.Turn, res prepResult) {
	if err := pc.Send(g.ctx, peer.Outbound{ID: prepID, Payload: wire.ExecutionRelease{Handle: res.handle}}); err != nil {
		log.Warn("gateway: execution_release of a cancelled Turn not sent", "err", err)
	}
	ev, _ := json.Marshal(map[string]string{"released_before_start": res.handle})
	ctx, cancel := storeCtx()
	defer cancel()
	if err := g.cfg.Store.FinishTurn(ctx, t.ID, t.RunID, store.TurnCancelled, store.Outcome{Evidence: ev}, g.cfg.Clock.Now()); err != nil && !errors.Is(err, store.ErrStale) {
		log.Warn("gateway: finish cancelled turn", "err", err)
	}
	g.cfg.Journal.Notify(t.ID)
}

// prepEnded handles an admission that ended before it was ready, by the
// outcome its table gives the state it ended in.
func (g *Gateway) prepEnded(log interface{ Warn(string, ...any) }, t store.Turn, res prepResult, cancelled bool) {
	switch res.outcome {
	case fsm.OutcomeFailure:
		if res.rejection.LeavesTurnUnclaimed() {
			// DoLeaveTurnUnclaimed queued it again; a Turn cancelled
			// meanwhile is not retried (this worker still holds it in
			// flight, so no other claimed it).
			if cancelled {
				ctx, cancel := storeCtx()
				defer cancel()
				if err := g.cfg.Store.CancelQueuedTurn(ctx, t.ID, g.cfg.Clock.Now()); err != nil {
					log.Warn("gateway: cancel requeued turn", "err", err)
				}
				g.cfg.Journal.Notify(t.ID)
			}
			return
		}
		ev, _ := json.Marshal(map[string]string{"preparation_state": res.state, "preparation_error": res.rejection.ErrorCode})
		g.fail(log, t, store.Outcome{Reason: ReasonPreparationFailed, Evidence: ev}, nil)
	default:
		// abandoned: the connection went away after execution_prepare was
		// sent; its effect is unknown and nothing is replayed
		// (daemon-protocol.txt:116, 159).
		g.fail(log, t, store.Outcome{Reason: store.ReasonDeliveryUnknown}, nil)
	}
}

// ReasonPreparationFailed is the public reason of a Turn whose
// execution_prepare was refused or failed with a code other than
// preparation_capacity; the code is kept as evidence.
const ReasonPreparationFailed = "preparation_failed"

func (g *Gateway) fail(log interface{ Warn(string, ...any) }, t store.Turn, o store.Outcome, cause error) {
	ctx, cancel := storeCtx()
	defer cancel()
	if err := g.cfg.Store.FinishTurn(ctx, t.ID, t.RunID, store.TurnFailed, o, g.cfg.Clock.Now()); err != nil && !errors.Is(err, store.ErrStale) {
		log.Warn("gateway: finish turn", "err", err)
	}
	g.cfg.Journal.Notify(t.ID)
	if cause != nil {
		log.Warn("gateway: turn failed", "reason", o.Reason, "err", cause)
	}
}

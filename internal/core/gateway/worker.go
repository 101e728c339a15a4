package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// execute runs one claimed Turn on c: execution_prepare, the ready
// admission, execution_start, then the Run until its record is written
// (daemon-protocol.txt:102-110). Every move of the Turn is an event of
// its machine, in (turns.go); the machine decides, for instance, whether a
// cancellation that came first stops the start.
//
// admitted gives the Turn's place among the connection's open admissions
// back; it runs once the preparation instance settles (conn.moved), or
// here when no execution_prepare left.
func (g *Gateway) execute(c *conn, p turnPlan, in *turn.Instance, caps wire.AgentKindCapabilities, admitted func()) {
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
	if p.agent != nil {
		p.agent.Configure(&cfg, &sc)
		if err := g.bearerTokens(p, &cfg); err != nil {
			admitted()
			g.fail(log, in, turn.InvalidConfiguration, detailOutcome(err), err)
			return
		}
	}
	if err := wire.ApplyOptIns(&cfg, sc); err != nil {
		admitted()
		g.fail(log, in, turn.InvalidConfiguration, detailOutcome(err), err)
		return
	}
	if !g.initializeTurn(c, p, in, log) {
		admitted() // no execution_prepare left
		return     // transfer.go: requeued, or failed with its reason
	}
	pr := &prepRec{turnID: t.ID, runID: t.RunID, attempts: t.Attempts, result: make(chan prepResult, 1), admitted: admitted}
	rr := &runRec{turnID: t.ID, sessionID: p.session.ID, runID: t.RunID, turn: in, caps: caps, finished: make(chan struct{})}
	pr.run = rr
	c.mu.Lock()
	c.preps[prepID], c.runs[t.RunID] = pr, rr
	c.inputs.Forget(t.RunID) // a Run ID a retry reuses starts with no inputs sent
	pc := c.pc
	c.mu.Unlock()

	// Step 1: the record above is the subscription to the preparation's
	// statuses; then execution_prepare with no Run input.
	err := pc.Send(g.ctx, peer.Outbound{ID: prepID, Payload: wire.ExecutionPrepare{SessionID: p.session.ID, Configuration: cfg}})
	if err != nil {
		var se *peer.SendError
		if errors.As(err, &se) {
			admitted() // refused before an instance took it
			c.dropUnsent(prepID, pr)
		}
		g.unsent(log, in, t.Attempts, err)
		return
	}
	var res prepResult
	select {
	case res = <-pr.result:
	case <-g.ctx.Done():
		return
	}
	if res.outcome != fsm.OutcomeNone {
		g.prepEnded(log, in, res)
		return
	}
	// Step 2: the Turn starts unless a cancellation came first; then the
	// table has moved it to cancelling and the admission is released.
	starting, err := in.Fire(turn.Start, turn.Args{At: g.cfg.Clock.Now()})
	if err != nil {
		g.releaseCancelled(log, pc, prepID, in, res)
		return
	}
	// Step 3: the Run's record exists (its subscription); execution_start
	// with the ordered input. The Turn's move to starting goes into the
	// loop's batch, which is written before the frame leaves; it runs once
	// the start was written.
	var input wire.MessageInput
	_ = json.Unmarshal(t.Input, &input)
	start := wire.ExecutionStart{ExecutorID: res.executorID, Handle: res.handle, RunID: t.RunID, Input: input}
	sent := make(chan error, 1)
	// Whoever takes the start first, the loop or (when the loop never
	// ran it) this worker, writes its move; a loop that takes it too late
	// sends nothing.
	var taken atomic.Bool
	err = pc.Do(g.ctx, func(d *peer.Driver) {
		if !taken.CompareAndSwap(false, true) {
			return
		}
		c.pending.Moves = append(c.pending.Moves, starting.Move)
		c.after = append(c.after, in.Written)
		d.Send(peer.Outbound{ID: prepID, Payload: start}, func(err error) {
			var we *peer.WriteError
			if err == nil || errors.As(err, &we) {
				// On the loop, before any later frame of the Run is
				// delivered: the move goes into the loop's batch ahead of
				// the Run's events, so the Turn is running when they are
				// committed (journal.go). A failed write is possibly
				// delivered: the Turn runs, the Run machine recorded
				// delivery_unknown and the lost connection ends the Run.
				_, ferr := c.fireTurn(in, turn.StartSent, turn.Args{}, false)
				logMove(log, "turn start sent", ferr)
				c.inputs.Pump(d, rr)
			}
			sent <- err
		})
	})
	if taken.CompareAndSwap(false, true) {
		// The loop never ran the start (the connection went first): its
		// move is written here, before the one that fails the Turn.
		g.writeMove(log, in, starting.Move)
	}
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
	default:
		// Refused before anything left, or the connection went first: no
		// Run input was submitted, and the admission (connection-local)
		// goes with the connection or expires (daemon-protocol.txt:116).
		g.fail(log, in, turn.StartFailed, store.Outcome{}, err)
		return
	}
	select {
	case <-rr.finished:
	case <-g.ctx.Done():
	}
}

// writeMove writes a move the worker fired on in, off the loop.
func (g *Gateway) writeMove(log interface{ Warn(string, ...any) }, in *turn.Instance, m store.TurnMove) {
	defer in.Written()
	ctx, cancel := g.storeCtx()
	defer cancel()
	if err := g.cfg.Store.MoveTurn(ctx, m); err != nil {
		log.Warn("gateway: move turn", "from", m.From, "to", m.To, "err", err)
	}
}

// ReasonInvalidConfiguration is the public reason of a Turn whose Session
// configuration could not be built into an execution_prepare.
const ReasonInvalidConfiguration = store.ReasonInvalidConfiguration

// detailOutcome keeps what was wrong as the Turn's evidence, which its
// public status shows as detail (errors here name fields and secrets,
// never a secret's value).
func detailOutcome(err error) store.Outcome {
	ev, _ := json.Marshal(map[string]string{"detail": boundedErr(err)})
	return store.Outcome{Evidence: ev}
}

// unsent handles an execution_prepare that was not written.
//
// decision: a frame refused before it left, or never written because the
// connection went first, delivered nothing, so the Turn goes back to the
// queue; only a failed write is uncertain, and that authorizes no replay
// (daemon-protocol.txt:116): the Turn fails with delivery_unknown.
func (g *Gateway) unsent(log interface{ Warn(string, ...any) }, in *turn.Instance, attempts int, err error) {
	var we *peer.WriteError
	if errors.As(err, &we) {
		g.fail(log, in, turn.DeliveryUnknown, store.Outcome{}, err)
		return
	}
	// A frame the wire's own validator refused is a configuration Core
	// built that can never be sent: queueing it again would refuse it
	// again for ever, so the Turn fails with what was wrong.
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		g.fail(log, in, turn.InvalidConfiguration, detailOutcome(err), err)
		return
	}
	g.requeue(log, in, attempts)
	log.Warn("gateway: execution_prepare not sent; the Turn is queued again", "err", err)
}

// requeue returns the Turn to the queue with backoff (or, once it was
// cancelled, the table cancels it).
func (g *Gateway) requeue(log interface{ Warn(string, ...any) }, in *turn.Instance, attempts int) {
	ctx, cancel := g.storeCtx()
	defer cancel()
	_, err := g.moveTurn(ctx, in, turn.Requeue, turn.Args{NotBefore: g.cfg.Clock.Now().Add(g.backoff(attempts))})
	logMove(log, "requeue turn", err)
}

// releaseCancelled abandons the ready admission of a Turn the API
// cancelled before its start.
//
// decision: the Turn is cancelled once execution_release is handed to
// the connection, whatever becomes of the release: preparation submits no
// Run input (daemon-protocol.txt:109, 141) and releasing abandons only the
// admission (daemon-protocol.txt:112, 114), so nothing of the Turn ran;
// the Runtime settles the admission's cleanup.
func (g *Gateway) releaseCancelled(log interface{ Warn(string, ...any) }, pc *peer.Conn, prepID string, in *turn.Instance, res prepResult) {
	if err := pc.Send(g.ctx, peer.Outbound{ID: prepID, Payload: wire.ExecutionRelease{Handle: res.handle}}); err != nil {
		log.Warn("gateway: execution_release of a cancelled Turn not sent", "err", err)
	}
	ev, _ := json.Marshal(map[string]string{"released_before_start": res.handle})
	ctx, cancel := g.storeCtx()
	defer cancel()
	_, err := g.moveTurn(ctx, in, turn.Released, turn.Args{Outcome: store.Outcome{Evidence: ev}})
	logMove(log, "finish cancelled turn", err)
}

// prepEnded handles an admission that ended before it was ready, by the
// outcome its table gives the state it ended in (turn.PreparationEnd): a
// preparation_capacity refusal was requeued by the preparation's own
// leave_turn_unclaimed; any other failure fails the Turn with the code as
// evidence; an abandoned admission (the connection went after
// execution_prepare) leaves its delivery unknown and nothing is replayed
// (daemon-protocol.txt:116, 159). A Turn cancelled meanwhile is cancelled
// instead (the table).
func (g *Gateway) prepEnded(log interface{ Warn(string, ...any) }, in *turn.Instance, res prepResult) {
	e, ok := turn.PreparationEnd(res.outcome, res.rejection.LeavesTurnUnclaimed())
	if !ok {
		return
	}
	var o store.Outcome
	if e == turn.PreparationFailed {
		o.Evidence, _ = json.Marshal(map[string]string{"preparation_state": res.state, "preparation_error": res.rejection.ErrorCode})
	}
	g.fail(log, in, e, o, nil)
}

// ReasonPreparationFailed is the public reason of a Turn whose
// execution_prepare was refused or failed with a code other than
// preparation_capacity; the code is kept as evidence.
const ReasonPreparationFailed = "preparation_failed"

// fail fires the event that fails the Turn (its name is the public
// reason); a Turn cancelled before its start is cancelled instead.
func (g *Gateway) fail(log interface{ Warn(string, ...any) }, in *turn.Instance, e turn.Event, o store.Outcome, cause error) {
	ctx, cancel := g.storeCtx()
	defer cancel()
	_, err := g.moveTurn(ctx, in, e, turn.Args{Outcome: o})
	logMove(log, "finish turn", err)
	if cause != nil {
		log.Warn("gateway: turn failed", "reason", e.String(), "err", cause)
	}
}

// bearerTokens opens the Vault secrets the Agent's MCP servers name into
// the configuration, for this Run only: the token is in no record Core
// keeps (its transcript redacts it). A secret that is missing or does not
// open fails the Turn before anything is sent, naming the server and the
// secret, never a value.
func (g *Gateway) bearerTokens(p turnPlan, cfg *wire.PromptRequest) error {
	names := p.agent.BearerSecrets()
	if len(names) == 0 || cfg.MCPHTTPServers == nil {
		return nil
	}
	ctx, cancel := g.storeCtx()
	defer cancel()
	servers := *cfg.MCPHTTPServers
	for i := range servers {
		name := names[servers[i].ServerLabel]
		if name == "" {
			continue
		}
		sec, err := g.cfg.Store.GetSecret(ctx, p.session.Project, name)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("mcp_servers[%d] (%s): the Vault secret %q does not exist", i, servers[i].ServerLabel, name)
		}
		if err != nil {
			return fmt.Errorf("mcp_servers[%d] (%s): reading the Vault secret %q: %w", i, servers[i].ServerLabel, name, err)
		}
		token, err := g.cfg.Sealer.Open(p.session.Project, name, sec.Sealed)
		if err != nil {
			return fmt.Errorf("mcp_servers[%d] (%s): the Vault secret %q does not open with this Core's key", i, servers[i].ServerLabel, name)
		}
		t := string(token)
		servers[i].BearerToken = &t
	}
	return nil
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/agent"
	"github.com/agentwire/agentwire/internal/core/turn"
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
	// Unrecorded tells the Turn's readers that its Run runID failed with
	// o although the store does not hold that yet; Recorded, that the
	// store holds its record now (persistence.go).
	Unrecorded(turnID, runID string, o store.Outcome)
	Recorded(turnID string)
}

type nopJournal struct{ st store.Store }

func (j nopJournal) Append(ctx context.Context, events ...store.Event) ([]store.Event, error) {
	res, err := j.st.Commit(ctx, store.Batch{Events: events})
	return res.Events, err
}
func (nopJournal) Notify(string)                            {}
func (nopJournal) Unrecorded(string, string, store.Outcome) {}
func (nopJournal) Recorded(string)                          {}

// Kick wakes the worker (a Turn was submitted, a device declared itself).
func (g *Gateway) Kick() { g.kick() }

// Settled waits until the scheduler has run a whole pass that began after
// the call: what it does for the Turns, declarations and releases seen so
// far (a placement, a waiting reason) is done. Tests and scenario
// transcripts use it to observe the scheduler without sleeping.
func (g *Gateway) Settled(ctx context.Context) error {
	want, done := g.passes.next()
	g.kick()
	for {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if want, done = g.passes.reached(want); done == nil {
			return nil
		}
	}
}

// passes counts the scheduler's passes for Settled.
type passes struct {
	mu       sync.Mutex
	started  uint64
	finished uint64
	done     chan struct{} // closed when the pass in progress (or the next) ends
}

func (p *passes) begin() {
	p.mu.Lock()
	p.started++
	p.mu.Unlock()
}

func (p *passes) end() {
	p.mu.Lock()
	p.finished = p.started
	if p.done != nil {
		close(p.done)
		p.done = nil
	}
	p.mu.Unlock()
}

// next is the pass Settled waits for (the first to begin after now) and a
// channel closed when a pass ends.
func (p *passes) next() (uint64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = make(chan struct{})
	}
	return p.started + 1, p.done
}

// reached returns nil when pass want has finished, or a channel to wait on.
func (p *passes) reached(want uint64) (uint64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished >= want {
		return want, nil
	}
	if p.done == nil {
		p.done = make(chan struct{})
	}
	return want, p.done
}

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
		g.passes.begin()
		g.recordUnwritten() // persistence.go
		g.dispatch()
		g.passes.end()
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
//
// The candidates are each Session's oldest queued Turn (store.DueTurns),
// read a page at a time, oldest first, until capacity runs out or every
// head was seen: Turns nothing can run never hide the ones behind them
// (issue 23 found 64 such Turns keeping another project's Turn queued on
// an idle device). A pass reads at most duePages pages; the next one goes
// on where it stopped, so every head is considered within a bounded
// number of passes however long the queue.
//
// decision: devices belong to one project (docs/tenancy.md), so no
// project's Turns can take another's capacity; what projects share is the
// worker's pass, and paging shares it: a project's backlog costs reads,
// never another project's placement (daemon-protocol.txt:156 leaves
// scheduling to Core).
func (g *Gateway) dispatch() {
	// With no capacity anywhere nothing is read: every finished Turn
	// kicks, and a full connection must not cost a store read per kick.
	// With no connection at all the due Turns are read to say why they
	// wait (no device), which the kicks of new connections refresh.
	if !g.anyCapacity() && g.connected() > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	now, gen := g.cfg.Clock.Now(), g.placeGen.Load()
	k := &kick{sessions: map[string]store.Session{}, envs: map[string]store.Environment{}}
	var placed []*placement
	after := g.dueCursor
	fromStart := after == ""
	var seen []store.Turn
	full := false
	g.dueCursor = ""
pages:
	for page := 0; ; page++ {
		if page == duePages {
			g.dueCursor = after // the next pass goes on from here
			break
		}
		due, err := g.cfg.Store.DueTurns(ctx, now, after, dueBatch)
		if err != nil {
			if g.ctx.Err() == nil {
				g.cfg.Logger.Warn("gateway: due turns", "err", err)
			}
			break
		}
		seen = append(seen, due...)
		for _, t := range due {
			if !g.anyCapacity() && g.connected() > 0 {
				full = true // the rest waits for the kick of a settled admission
				break pages
			}
			if w, ok := g.skipUnmet(t.ID, gen, now); ok {
				g.noteWaiting(ctx, t, w)
				continue
			}
			pl, wait, err := g.place(ctx, k, t)
			if err != nil && g.ctx.Err() == nil {
				g.cfg.Logger.Warn("gateway: place turn", "turn_id", t.ID, "err", err)
			}
			if pl != nil {
				placed = append(placed, pl)
			} else if wait.Reason != "" {
				wait.gen, wait.checked = gen, now
				g.noteWaiting(ctx, t, wait)
			}
		}
		if len(due) < dueBatch {
			if fromStart && !full {
				g.pruneWaiting(seen) // the list is whole: a Turn not in it left the queue
			}
			break
		}
		after = due[len(due)-1].ID
	}
	// One commit claims every Turn the kick placed.
	g.claim(ctx, placed)
}

// dueBatch is how many due Turns one page holds, and duePages how many
// pages one pass reads at most.
const (
	dueBatch = 64
	duePages = 16
)

// unmetRecheck is how long a Turn found unmet is skipped without a change
// of placeGen: a bound on what a missed change could cost, not the way
// changes are seen.
const unmetRecheck = 30 * time.Second

// skipUnmet returns the reason a Turn was last found unmet when nothing
// that could meet it changed since (placeGen) and it was checked recently:
// the pass skips planning it (its Session, Environment and Agent reads).
func (g *Gateway) skipUnmet(turnID string, gen uint64, now time.Time) (Waiting, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := g.waiting[turnID]
	if !ok || !unmet(w.Reason) || w.gen != gen || now.Sub(w.checked) >= unmetRecheck {
		return Waiting{}, false
	}
	return w, true
}

// placementChanged says that a connection, a declaration or a device's
// owner changed: every Turn found unmet is planned again.
func (g *Gateway) placementChanged() { g.placeGen.Add(1) }

// connected is the number of live connections.
func (g *Gateway) connected() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
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

// kick is what one dispatch read: each Session, Environment and Agent
// version once.
type kick struct {
	sessions map[string]store.Session
	envs     map[string]store.Environment
	agents   map[string]*agent.Definition
}

func (k *kick) agent(ctx context.Context, st store.Store, id string, version int) (*agent.Definition, error) {
	key := id + "@" + strconv.Itoa(version)
	if d, ok := k.agents[key]; ok {
		return d, nil
	}
	a, err := st.GetAgent(ctx, id, version)
	if err != nil {
		return nil, err
	}
	var d agent.Definition
	if err := json.Unmarshal(a.Definition, &d); err != nil {
		return nil, err
	}
	if k.agents == nil {
		k.agents = map[string]*agent.Definition{}
	}
	k.agents[key] = &d
	return &d, nil
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
	turn    store.Turn
	session store.Session
	env     store.Environment
	agent   *agent.Definition // the Agent version the Session runs; nil for a bare kind
	// unqualified says which Agent feature the kind's engine profile
	// does not qualify; "" when it qualifies them all.
	unqualified string
	required    wire.CapabilitySet
	admit       wire.AdmissionInput
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
	if p.session.AgentID != "" {
		if p.agent, err = k.agent(ctx, g.cfg.Store, p.session.AgentID, p.session.AgentVersion); err != nil {
			return p, fmt.Errorf("agent: %w", err)
		}
	}
	// decision: a Session of a bare kind has no Agent, so none of the
	// optional features applies (multi_agent disabled, which requires
	// subagent_control); a Session of an Agent adds the rows its features
	// trigger (core/agent). No engine profile declares a control yet, so
	// the profile rows apply to none (daemon-protocol.txt:31-50).
	// The profile of the Session's kind declares the controls every Run
	// of it carries and qualifies the Agent's features
	// (daemon-protocol.txt:31, 39); an Agent written before its profile
	// changed waits, and fails unplaceable, rather than run unqualified.
	prof := g.cfg.Profiles.Lookup(p.session.AgentKind)
	p.admit = wire.AdmissionInput{Environment: envType, Input: input, Profile: prof.Wire(),
		NativeSessionMissing: p.session.Started && p.session.NativeSessionID == ""}
	if p.agent != nil {
		p.admit.Agent = p.agent.Features()
		if err := prof.Qualify(*p.agent); err != nil {
			p.unqualified = err.Error()
		}
	}
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
		if !hosts(c, p) || !g.leaseHeld(c) {
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
func (g *Gateway) place(ctx context.Context, k *kick, t store.Turn) (*placement, Waiting, error) {
	g.mu.Lock()
	busy := g.turns[t.ID] != nil || g.sessions[t.SessionID] != ""
	g.mu.Unlock()
	if busy {
		return nil, Waiting{Reason: WaitSessionBusy, Detail: "an earlier Turn of the Session is in flight"}, nil
	}
	p, err := g.plan(ctx, k, t)
	if err != nil {
		return nil, Waiting{}, err
	}
	if p.unqualified != "" {
		return nil, Waiting{Reason: WaitNotQualified, Detail: p.unqualified}, nil
	}
	cands := g.candidates(p)
	if len(cands) == 0 {
		return nil, g.why(p), nil
	}
	wait := Waiting{Reason: WaitDeviceBusy, Detail: "every device that admits the Turn is at its admission bound or busy"}
	if cands = g.order(p, cands); len(cands) == 0 {
		return nil, Waiting{Reason: WaitDeviceBusy, Detail: "the placement policy chose none of the devices that admit the Turn"}, nil
	}
	for _, c := range cands {
		// The final check, against the declaration as it is now and the
		// connection still owning the device (daemon-protocol.txt:33).
		decl, ok := c.snapshot()
		if !ok || !g.owns(c) || c.admissions.Load() >= maxAdmissions {
			continue
		}
		if !g.placeable(ctx, c, p) {
			if g.suspended(ctx, p.env.ID) {
				wait = Waiting{Reason: WaitEnvironmentSuspended, Detail: "a suspension attempt holds the Session's Environment"}
			}
			continue
		}
		caps, ok := admits(decl, p)
		if !ok {
			continue
		}
		runID := credential.NewID("run")
		if g.writeBlocksTurns(ctx, t.SessionID) {
			// a workspace write holds the Session's mutation owner (workspace_write.go)
			return nil, Waiting{Reason: WaitSessionBusy, Detail: "a workspace write of the Session holds its mutation owner"}, nil
		}
		if !g.holdForTurn(t.SessionID, p.workspace(), t.ID, c, runID) {
			// a read or write holds the Session or its workspace; it kicks when done
			return nil, Waiting{Reason: WaitSessionBusy, Detail: "a read or write of the Session's workspace is in flight"}, nil
		}
		// Reserved until the kick's claims commit: the connection's
		// admission, and the Turn (its machine) and its Session as in
		// flight.
		in := turn.NewInstance(turn.RefOf(t))
		now := g.cfg.Clock.Now()
		st, err := in.Fire(turn.Claim, turn.Args{Claim: store.Claim{DeviceID: c.deviceID, OwnerEpoch: c.epoch, RunID: runID, At: now}, At: now})
		if err != nil {
			return nil, Waiting{}, err
		}
		c.admissions.Add(1)
		g.mu.Lock()
		g.turns[t.ID] = in
		g.sessions[t.SessionID] = t.ID
		g.mu.Unlock()
		return &placement{p: p, c: c, caps: caps, in: in, claim: st.Move}, Waiting{}, nil
	}
	return nil, wait, nil
}

// placement is a due Turn placed on a connection, its claim not yet
// committed.
type placement struct {
	p     turnPlan
	c     *conn
	caps  wire.AgentKindCapabilities
	in    *turn.Instance
	claim store.TurnMove // the claim's move, written by claim
}

// claim commits the kick's claims in one store write, then executes each
// Turn whose claim applied; the others give their reservations back.
func (g *Gateway) claim(ctx context.Context, placed []*placement) {
	if len(placed) == 0 {
		return
	}
	b := store.Batch{Moves: make([]store.TurnMove, len(placed))}
	for i, pl := range placed {
		b.Moves[i] = pl.claim
	}
	res, err := g.cfg.Store.Commit(ctx, b)
	for i, pl := range placed {
		pl.in.Written()
		cerr := err
		if i < len(res.Moves) {
			cerr = res.Moves[i]
		}
		if cerr != nil {
			if !errors.Is(cerr, store.ErrStale) && g.ctx.Err() == nil {
				// ErrStale: another worker took it, or it is no longer due.
				g.cfg.Logger.Warn("gateway: claim turn", "turn_id", pl.claim.TurnID, "err", cerr)
			}
			g.unplace(pl)
			continue
		}
		g.forgetWaiting(pl.claim.TurnID)
		g.launch(pl)
	}
}

// unplace gives back what place reserved.
func (g *Gateway) unplace(pl *placement) {
	t := pl.p.turn
	pl.c.admissions.Add(-1)
	g.dropTurnHold(t.SessionID, t.ID)
	g.mu.Lock()
	delete(g.turns, t.ID)
	delete(g.sessions, t.SessionID)
	g.mu.Unlock()
}

// launch executes a claimed Turn on its connection.
func (g *Gateway) launch(pl *placement) {
	t, c, p := pl.p.turn, pl.c, pl.p
	p.turn.RunID, p.turn.Attempts = pl.claim.Claim.RunID, t.Attempts+1
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
			delete(g.turns, t.ID)
			delete(g.sessions, t.SessionID)
			g.mu.Unlock()
			// A dispatch that ran meanwhile skipped this Turn as in
			// flight; if it was requeued (preparation_capacity), it must
			// be looked at again without waiting for the next poll.
			g.kick()
		}()
		g.execute(c, p, pl.in, pl.caps, admitted)
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

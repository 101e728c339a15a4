package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// turnRun is what Steer, Decide and the connection's reader reach of the
// running Turn. Its maps are guarded by executor.mu.
type turnRun struct {
	runID     string
	notify    harness.Notify
	caps      wire.AgentKindCapabilities // the Turn's declaration snapshot
	turnID    string                     // set before turnKnown closes
	turnKnown chan struct{}              // closed once turn/start answered
	ended     bool
	endedCh   chan struct{}
	asked     map[string]*question // by interaction ID
	byRPC     map[string]*question // by the raw JSON-RPC request ID
	steers    map[string]*steer    // by input ID
}

// question is one server request Codex waits on that the Turn forwarded
// to Core: an approval (a permission request) or a dynamic tool call (a
// function call).
type question struct {
	interactionID string // the permission request_id, or the function call_id
	function      bool   // a dynamic tool call (else an approval)
	order         uint64 // the approval's rank among the turn's asks
	method        string
	rpcID         json.RawMessage
	answered      bool // Decide wrote the answer
	once          sync.Once
	resolved      chan struct{} // closed on serverRequest/resolved
}

func (q *question) resolve() { q.once.Do(func() { close(q.resolved) }) }

func (q *question) isResolved() bool {
	select {
	case <-q.resolved:
		return true
	default:
		return false
	}
}

// steer is one active input after its write: its native fate is reported
// once, accepted when Codex's user message echoes the input ID.
type steer struct {
	inputID string
	notify  harness.Notify

	mu       sync.Mutex
	ok       bool // turn/steer answered success
	ended    bool // the turn ended
	notified bool
}

func (s *steer) report(n harness.InputNotice) {
	s.mu.Lock()
	if s.notified {
		s.mu.Unlock()
		return
	}
	s.notified = true
	s.mu.Unlock()
	if s.notify != nil {
		n.InputID = s.inputID
		s.notify(n)
	}
}

// accept: item/started userMessage with clientId == input ID.
func (s *steer) accept() { s.report(harness.InputNotice{Accepted: true}) }

// answered is turn/steer's answer: a JSON-RPC refusal is a native
// rejection; a lost connection leaves the outcome unknown.
func (s *steer) answered(err error) {
	var re *RPCError
	switch {
	case errors.As(err, &re):
		// decision: every JSON-RPC refusal of turn/steer ("no active turn to
		// steer", an expectedTurnId that no longer matches,
		// activeTurnNotSteerable) is the Harness refusing the input natively:
		// rejected, with Codex's text (its prose is never parsed).
		s.report(harness.InputNotice{Code: wire.SteerCodeRejected, Error: boundText(re.Message)})
	case err != nil:
		s.report(harness.InputNotice{Code: wire.SteerCodeOutcomeUnknown, Error: boundText(err.Error())})
	default:
		s.mu.Lock()
		s.ok = true
		ended := s.ended
		s.mu.Unlock()
		if ended {
			s.unconsumed()
		}
	}
}

// turnEnded: an input Codex took but never echoed before the turn ended.
func (s *steer) turnEnded() {
	s.mu.Lock()
	s.ended = true
	ok := s.ok
	s.mu.Unlock()
	if ok {
		s.unconsumed()
	}
}

func (s *steer) unconsumed() {
	// decision: Codex answered turn/steer but the turn ended without the
	// user message that proves the input entered the thread: whether the
	// model saw it is unknown (daemon-protocol.txt:147).
	s.report(harness.InputNotice{Code: wire.SteerCodeOutcomeUnknown, Error: "the turn ended before Codex consumed the input"})
}

// errCancelUnconfirmed: Codex never confirmed the interruption.
var errCancelUnconfirmed = fmt.Errorf("codex adapter: Codex did not confirm the interruption (turn/completed interrupted); the app-server was killed: %w", harness.ErrCancelUnsettled)

// Run executes one turn: turn/start with the ordered input, then the
// turn's notifications until turn/completed.
func (e *executor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	bg := context.WithoutCancel(ctx)
	if !e.proc.Alive() || e.conn.Err() != nil {
		return wire.Done{}, fmt.Errorf("codex adapter: the app-server is gone (%s)", e.proc.ExitText())
	}
	if err := harness.CheckInput(turn.Declaration.Capabilities, turn.Input); err != nil || turn.Input.HasImage() {
		// A text-only transport rejects image content, never drops it
		// (daemon-protocol.txt:98); nothing reaches Codex.
		if err == nil {
			err = &harness.UnsupportedError{Capability: "message_images", What: "input"}
		}
		_ = emit(bg, wire.ErrorFrame{Error: boundText("codex adapter: " + err.Error())})
		return wire.Done{Metadata: e.metadata()}, nil
	}
	t := &turnRun{runID: turn.RunID, notify: turn.Notify, caps: turn.Declaration.Capabilities, turnKnown: make(chan struct{}), endedCh: make(chan struct{}),
		asked: map[string]*question{}, byRPC: map[string]*question{}, steers: map[string]*steer{}}
	e.mu.Lock()
	e.cur = t
	total := e.total
	e.mu.Unlock()
	defer e.endTurn(t)

	l := &turnLoop{e: e, t: t, turn: turn, emit: emit, ctx: ctx, bg: bg,
		meter: newUsageMeter(total, e.model, e.cfg.Provider), caps: turn.Declaration.Capabilities}
	l.permissions = l.caps.Permissions.Supports()

	// turn/start is written under the Run's context; once written, Codex
	// starts the turn whatever happens next, so its answer is awaited
	// under the start bound even if the Run is cancelled meanwhile (the
	// turn must be known to be interrupted).
	k, err := e.conn.Start(ctx, mTurnStart, turnStartParams{ThreadID: e.threadID, Input: textInput(turn.Input), OutputSchema: e.outputSchema})
	if err != nil {
		if ctx.Err() != nil {
			return wire.Done{Metadata: e.metadata()}, nil // nothing was started
		}
		return wire.Done{}, err
	}
	wctx, cancel := context.WithTimeout(bg, e.cfg.StartTimeout)
	raw, err := k.Wait(wctx)
	cancel()
	var res turnResult
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err == nil && res.Turn.ID == "" {
		err = errors.New("turn/start answered no turn ID")
	}
	if err != nil {
		var re *RPCError
		if errors.As(err, &re) {
			_ = emit(bg, wire.NewEngineError(boundText("codex refused the turn: "+re.Message), "", 0))
			return wire.Done{Metadata: e.metadata()}, nil
		}
		return wire.Done{}, err
	}
	e.mu.Lock()
	t.turnID = res.Turn.ID
	e.mu.Unlock()
	close(t.turnKnown)
	return l.run()
}

// endTurn detaches the Turn: later answers find it inactive, open
// approvals are gone with it, and inputs that were never echoed settle.
func (e *executor) endTurn(t *turnRun) {
	e.mu.Lock()
	t.ended = true
	close(t.endedCh)
	steers := make([]*steer, 0, len(t.steers))
	for _, s := range t.steers {
		steers = append(steers, s)
	}
	if e.cur == t {
		e.cur = nil
	}
	e.mu.Unlock()
	for _, s := range steers {
		s.turnEnded()
	}
}

func (e *executor) metadata() *wire.DoneMetadata {
	if e.threadID == "" {
		return nil
	}
	return &wire.DoneMetadata{AgentSessionID: e.threadID}
}

// turnLoop is one Run's event loop.
type turnLoop struct {
	e     *executor
	t     *turnRun
	turn  harness.Turn
	emit  harness.Emit
	ctx   context.Context // the Run's: its end asks for cancellation
	bg    context.Context // the Run's values without its cancellation, for frames until settlement
	meter *usageMeter
	caps  wire.AgentKindCapabilities

	permissions bool
	asks        uint64 // approvals forwarded so far
	content     strings.Builder
	seq         uint64
	thinkSeq    uint64
	usage       wire.Usage
	errorSent   bool
	emitGone    bool            // an emit failed: the connection is gone
	deltaItems  map[string]bool // message items that streamed deltas
	fileChanges map[string][]fileChange

	interrupting bool
	cancelled    bool
	connTimer    *time.Timer
	connStatus   int
	interruptT   *time.Timer
}

// run consumes the turn's notifications until turn/completed.
func (l *turnLoop) run() (wire.Done, error) {
	e := l.e
	ctxDone := l.ctx.Done()
	defer func() {
		if l.connTimer != nil {
			l.connTimer.Stop()
		}
		if l.interruptT != nil {
			l.interruptT.Stop()
		}
	}()
	for {
		for {
			m, ok := e.conn.Pop()
			if !ok {
				break
			}
			if done, final := l.handle(m); final {
				return done, nil
			}
		}
		var connC, intC <-chan time.Time
		if l.connTimer != nil {
			connC = l.connTimer.C
		}
		if l.interruptT != nil {
			intC = l.interruptT.C
		}
		select {
		case <-e.conn.Ready():
		case <-e.conn.Done():
			// What was read before the end still counts.
			for m, ok := e.conn.Pop(); ok; m, ok = e.conn.Pop() {
				if done, final := l.handle(m); final {
					return done, nil
				}
			}
			err := fmt.Errorf("codex adapter: the app-server ended during the turn (%v; %s)", e.conn.Err(), e.proc.ExitText())
			e.log.Warn("codex app-server ended during a turn", "stderr", e.proc.Stderr.String())
			if l.cancelled {
				return l.done(), fmt.Errorf("%w: %v", errCancelUnconfirmed, err)
			}
			return l.done(), err
		case <-ctxDone:
			ctxDone = nil
			l.cancelled = true
			l.interrupt()
		case <-connC:
			l.connTimer = nil
			// decision: Codex retries a refused or dropped provider
			// connection forever, even with retries set to 0; the adapter's
			// own deadline ends the Run: connection_failed (with the status
			// Codex last saw, if any), then the interruption, then done
			// (issue 17 §3).
			l.sendError(wire.NewEngineError(fmt.Sprintf("codex adapter: the model provider could not be reached for %s", e.cfg.ConnectDeadline), wire.EngineConnectionFailed, l.connStatus))
			l.interrupt()
		case <-intC:
			// decision: an interruption Codex never confirms is not a
			// settled cancellation; the app-server's group (with every
			// command it ran) gets SIGTERM, then SIGKILL after the close
			// grace, and the Run ends unsettled rather than claiming a
			// confirmed stop (daemon-protocol.txt:146-147).
			e.proc.Terminate(peer.SystemClock(), e.cfg.CloseGrace, e.log.With("run_id", l.turn.RunID))
			return l.done(), errCancelUnconfirmed
		}
	}
}

// interrupt asks Codex to stop the turn, once; the proof is turn/completed
// with status interrupted, awaited under InterruptWait.
func (l *turnLoop) interrupt() {
	if l.interrupting {
		return
	}
	l.interrupting = true
	l.interruptT = time.NewTimer(l.e.cfg.InterruptWait)
	e := l.e
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.InterruptWait)
		defer cancel()
		if err := e.conn.Call(ctx, mTurnInterrupt, turnInterruptParams{ThreadID: e.threadID, TurnID: l.t.turnID}, nil); err != nil {
			e.log.Info("codex adapter: turn/interrupt", "err", err)
		}
	}()
}

// send emits one frame while the connection lasts; a failed emit stops the
// turn natively (the Run must settle, harness.Emit).
func (l *turnLoop) send(p wire.Payload) bool {
	if l.emitGone {
		return false
	}
	if err := l.emit(l.bg, p); err != nil {
		l.emitGone = true
		l.interrupt()
		return false
	}
	return true
}

func (l *turnLoop) sendError(f wire.ErrorFrame) {
	l.errorSent = true
	l.send(f)
}

// done is the final snapshot so far.
func (l *turnLoop) done() wire.Done {
	return wire.Done{Content: l.content.String(), Usage: l.usage, Metadata: l.e.metadata()}
}

// handle maps one message; final is true at the turn's end.
func (l *turnLoop) handle(m *message) (wire.Done, bool) {
	if m.isRequest() {
		l.request(m)
		return wire.Done{}, false
	}
	switch m.Method {
	case nAgentDelta:
		var p deltaParams
		if !l.mine(m, &p, &p.scope) || p.Delta == "" {
			return wire.Done{}, false
		}
		l.progress()
		if l.deltaItems == nil {
			l.deltaItems = map[string]bool{}
		}
		l.deltaItems[p.ItemID] = true
		l.delta(p.ItemID, p.Delta)
	case nReasoningSumm, nReasoningText:
		var p deltaParams
		if !l.mine(m, &p, &p.scope) || p.Delta == "" {
			return wire.Done{}, false
		}
		l.progress()
		l.thinkSeq++
		l.send(wire.Thinking{Text: p.Delta, Sequence: l.thinkSeq})
	case nItemStarted, nItemCompleted:
		var p itemParams
		var it item
		if !l.mine(m, &p, &p.scope) || json.Unmarshal(p.Item, &it) != nil {
			return wire.Done{}, false
		}
		l.progress()
		l.item(it, m.Method == nItemCompleted)
	case nTokenUsage:
		var p tokenUsageParams
		if json.Unmarshal(m.Params, &p) != nil || p.ThreadID != l.e.threadID {
			return wire.Done{}, false
		}
		l.e.mu.Lock()
		total := p.TokenUsage.Total
		l.e.total = &total
		l.e.mu.Unlock()
		if p.TurnID != l.t.turnID {
			return wire.Done{}, false
		}
		l.progress()
		if u, ok := l.meter.snapshot(p.TokenUsage); ok {
			l.usage = u
			l.send(u)
		}
	case nError:
		var p errorParams
		if !l.mine(m, &p, &p.scope) {
			return wire.Done{}, false
		}
		if p.WillRetry {
			// Progress of Codex's own retries, not an error frame; it starts
			// the adapter's connection deadline.
			if st := connectionStatus(p.Error.CodexErrorInfo); st != 0 {
				l.connStatus = st
			}
			if l.connTimer == nil && !l.interrupting {
				l.connTimer = time.NewTimer(l.e.cfg.ConnectDeadline)
			}
			return wire.Done{}, false
		}
		l.sendError(engineError(p.Error.Message, p.Error.CodexErrorInfo))
	case nRequestResolved:
		var p resolvedParams
		if json.Unmarshal(m.Params, &p) != nil {
			return wire.Done{}, false
		}
		l.resolved(p)
	case nTurnCompleted:
		var p turnCompletedParams
		if json.Unmarshal(m.Params, &p) != nil || p.ThreadID != l.e.threadID || p.Turn.ID != l.t.turnID {
			return wire.Done{}, false
		}
		return l.completed(p.Turn), true
	}
	return wire.Done{}, false
}

// mine decodes a turn notification and reports whether it is this turn's.
func (l *turnLoop) mine(m *message, v any, s *scope) bool {
	return json.Unmarshal(m.Params, v) == nil && s.ThreadID == l.e.threadID && s.TurnID == l.t.turnID
}

// progress: the model answered, so a connection deadline in force ends.
func (l *turnLoop) progress() {
	if l.connTimer != nil {
		l.connTimer.Stop()
		l.connTimer = nil
	}
}

// completed is the turn's end: done, after the error a failed turn
// carries (if no error notification reported it already).
func (l *turnLoop) completed(t turnInfo) wire.Done {
	l.e.mu.Lock()
	l.e.lastStatus = t.Status
	l.e.mu.Unlock()
	l.withdrawOpen()
	if t.Status == turnFailed && !l.errorSent {
		msg, info := "codex adapter: the turn failed", json.RawMessage(nil)
		if t.Error != nil {
			msg, info = t.Error.Message, t.Error.CodexErrorInfo
		}
		l.sendError(engineError(msg, info))
	}
	if t.Status == turnInterrupted && !l.interrupting {
		// Codex stopped the turn on its own (an approval answered cancel
		// elsewhere, say): the Run still ends with what it produced.
		l.e.log.Info("codex adapter: the turn was interrupted natively")
	}
	return l.done()
}

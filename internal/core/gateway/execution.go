package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	inputfsm "github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/fsm/preparation"
	"github.com/agentwire/agentwire/fsm/run"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// This file binds the preparation and run machines' Core hooks for one
// connection. The machines decide every transition; the hooks keep Core's
// records (the highest revision per handle, the cancellation's delivery
// IDs), append the Run's frames to the Turn's journal and record the
// Turn's terminal state when the Run machine reaches one.

// prepRec is Core's record of one execution_prepare it sent.
type prepRec struct {
	turnID, runID string
	attempts      int

	// Written on the loop (Stepped and hooks) and read there; the worker
	// reads them only after result delivered them.
	revision   uint64
	executorID string
	handle     string
	rejection  wire.PreparationStatus

	result chan prepResult // buffered; the first outcome only
	sent   bool

	// readOnly marks a read-only preparation (workspace_read.go), whose
	// worker also watches every move of the handle to its close.
	readOnly bool
	watch    func(*peer.Instance)

	// run is the Run record made with it (nil for a read), which goes
	// with the preparation when the Run never started (forget.go).
	run *runRec

	// admitted gives the connection's admission slot back, once.
	admitted func()
}

// prepResult is what the worker waits for after execution_prepare: ready
// with the reservation, or the terminal state the admission ended in.
type prepResult struct {
	state      string      // the preparation machine's state name
	outcome    fsm.Outcome // the table's outcome of state; none while ready
	executorID string
	handle     string
	rejection  wire.PreparationStatus
}

func (p *prepRec) deliver(r prepResult) {
	if p.sent {
		return
	}
	p.sent = true
	p.result <- r
}

// runRec is Core's record of one Run it started on this connection.
type runRec struct {
	turnID, runID string
	sessionID     string
	turn          *turn.Instance // the Turn's machine (turns.go)
	// caps are the capabilities the Run's Harness was admitted with.
	caps wire.AgentKindCapabilities

	mu         sync.Mutex
	deliveries map[string]bool // delivery IDs of the prompt_cancel frames sent

	engineCode string
	engineHTTP int
	// overflowed is set (on the loop) once the Run's subscription closed
	// because the journal fell behind (journal.go, backlog).
	overflowed bool
	// journaled counts the bytes of the Run's frames journaled, and
	// limited is set once the next would have passed the Turn's journal
	// limit (journal_limit.go).
	journaled int64
	limited   bool
	// stalled is set once Core cancels the Run for silence (stall.go);
	// its cancellation's outcome then names stalled as the cause.
	stalled  bool
	finished chan struct{}
	once     sync.Once
}

func (r *runRec) done() { r.once.Do(func() { close(r.finished) }) }

// TurnID and RunID name the Run for the interaction module.
func (r *runRec) TurnID() string { return r.turnID }
func (r *runRec) RunID() string  { return r.runID }

// Finished is closed once the Run's outcome is recorded (the input module).
func (r *runRec) Finished() <-chan struct{} { return r.finished }

// Admits says why the Run's Harness cannot take in as active input: it
// declared no steering, or the input carries an image and it declared no
// message_images (daemon-protocol.txt:27, 46); nil when it can.
func (r *runRec) Admits(in wire.MessageInput) error { return inputAdmitted(r.caps, in) }

// inputAdmitted is the admission check of one active input against the
// capabilities a Run was admitted with.
func inputAdmitted(c wire.AgentKindCapabilities, in wire.MessageInput) error {
	switch {
	case !c.Steering.Supports():
		return errors.New("the Turn's Harness declares no steering, so it takes no active input")
	case in.HasImage() && !c.MessageImages.Supports():
		return errors.New("the input carries an image and the Turn's Harness declares no message_images")
	}
	return nil
}

func (r *runRec) addDelivery(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deliveries == nil {
		r.deliveries = map[string]bool{}
	}
	r.deliveries[id] = true
}

func (r *runRec) matches(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return id != "" && r.deliveries[id]
}

// execHooks implements both machines' Core hooks for one connection.
type execHooks struct{ c *conn }

var (
	_ preparation.CoreHooks[*peer.Event] = execHooks{}
	_ run.CoreHooks[*peer.Event]         = execHooks{}
)

func (c *conn) prep(id string) *prepRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.preps[id]
}

func (c *conn) run(id string) *runRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

func statusOf(f *fsm.Firing[*peer.Event]) (wire.PreparationStatus, bool) {
	if f.Arg == nil || f.Arg.Msg == nil {
		return wire.PreparationStatus{}, false
	}
	s, ok := f.Arg.Msg.Payload.(wire.PreparationStatus)
	return s, ok
}

// Stepped implements peer.Observer: an applied status with a newer
// revision becomes the handle's record, which GuardNewerRevision reads
// (daemon-protocol.txt:110: older or repeated revisions are ignored).
func (c *conn) Stepped(ev *peer.Event, s fsm.Step) {
	c.journalFrame(ev, s)
	c.questionSettled(ev, s)
	if ev.Key.Machine != preparation.Name || ev.Msg == nil || ev.Sent || s.Disposition() == fsm.Rejected {
		return
	}
	st, ok := ev.Msg.Payload.(wire.PreparationStatus)
	p := c.prep(ev.Key.ID)
	if !ok || p == nil || st.State == wire.PreparationRejected || st.Revision <= p.revision {
		return
	}
	p.revision = st.Revision
	if st.ExecutorID != "" {
		p.executorID = st.ExecutorID
	}
	if st.Handle != "" {
		p.handle = st.Handle
	}
}

// journalFrame puts the active-input and answer frames, both ways, in
// the Turn's journal, so the event stream shows each delivery and its
// receipts. The questions themselves are journaled by DoSurfaceRequest,
// with the ID the API answers them by.
func (c *conn) journalFrame(ev *peer.Event, s fsm.Step) {
	if ev.Msg == nil || s.Disposition() == fsm.Rejected {
		return
	}
	var r *runRec
	switch ev.Key.Machine {
	case inputfsm.Name:
		runID, _, _ := peer.SplitCompositeID(ev.Key.ID)
		r = c.run(runID)
	case interaction.Name:
		if ev.Msg.Type == wire.TypePermissionRequest || ev.Msg.Type == wire.TypePromptForUserChoice {
			return
		}
		if run, ok := c.questions.RunOf(ev.Key.ID); ok {
			r = run.(*runRec)
		}
	}
	if r != nil {
		if err := (execHooks{c}).journal(r, ev.Msg.Type, validated(ev.Msg)); err != nil {
			c.log.Warn("gateway: journal frame", "type", ev.Msg.Type, "trace_id", ev.Trace().TraceIDString(), "err", err)
		}
	}
}

// prepMoved tells the worker waiting on an admission once that admission
// is ready or has ended (the Saver's part for preparations).
func (c *conn) prepMoved(i *peer.Instance) {
	p := c.prep(i.Key.ID)
	if p == nil {
		return
	}
	if p.watch != nil {
		p.watch(i)
	}
	state := preparation.State(i.State())
	if state == preparation.StateReady || i.Terminal() {
		p.deliver(prepResult{state: i.StateName(), outcome: i.Outcome(), executorID: p.executorID, handle: p.handle, rejection: p.rejection})
	}
	if i.Terminal() && p.admitted != nil {
		p.admitted()
	}
}

// execBook is a connection's records of its Turns' execution: the
// preparations it sent, the Runs it started and their open questions.
type execBook struct {
	preps map[string]*prepRec // by preparation request ID
	runs  map[string]*runRec  // by Run ID
}

func newExecBook() execBook {
	return execBook{preps: map[string]*prepRec{}, runs: map[string]*runRec{}}
}

// abandonExec wakes the workers of admissions that never reached an
// outcome before the loop ended (every instance saw connection_lost; this
// covers the ones the driver never created). The loop has returned, so
// nothing else touches the records.
func (c *conn) abandonExec() {
	c.mu.Lock()
	preps := make([]*prepRec, 0, len(c.preps))
	for _, p := range c.preps {
		preps = append(preps, p)
	}
	runs := make([]*runRec, 0, len(c.runs))
	for _, r := range c.runs {
		runs = append(runs, r)
	}
	c.mu.Unlock()
	for _, p := range preps {
		p.deliver(prepResult{state: preparation.StateAbandoned.String(), outcome: fsm.OutcomeUnknown})
		if p.admitted != nil {
			p.admitted()
		}
	}
	for _, r := range runs {
		r.done()
		// A Run whose outcome was recorded before the loss
		// (cancel_unconfirmed after 15 s) reaches its terminal state
		// with no step to close it; its inputs and questions close here.
		c.closeRun(r)
	}
}

func (h execHooks) GuardNewerRevision(f *fsm.Firing[*peer.Event]) bool {
	p := h.c.prep(f.Arg.Key.ID)
	return p != nil && guard.NewerRevision(f.Arg.Payload(), p.revision)
}

// decision: Core never repeats an execution_prepare (a request ID is used
// once, daemon-protocol.txt:163), so a repeated one never has the same
// fingerprint.
func (h execHooks) GuardSameFingerprint(*fsm.Firing[*peer.Event]) bool { return false }

func (h execHooks) GuardCapacityRefusal(f *fsm.Firing[*peer.Event]) bool {
	return guard.CapacityRefusal(f.Arg.Payload())
}

func (h execHooks) GuardRejectsPrepare(f *fsm.Firing[*peer.Event]) bool {
	return guard.RejectsPrepare(f.Arg.Payload())
}

func (h execHooks) GuardRejectsStart(f *fsm.Firing[*peer.Event]) bool {
	return guard.RejectsStart(f.Arg.Payload())
}

// GuardReadOnlyProfile: a handle Core prepared for a workspace read.
func (h execHooks) GuardReadOnlyProfile(f *fsm.Firing[*peer.Event]) bool {
	p := h.c.prep(f.Arg.Key.ID)
	return p != nil && p.readOnly
}

func (h execHooks) DoRecordRejection(f *fsm.Firing[*peer.Event]) error {
	if s, ok := statusOf(f); ok {
		if p := h.c.prep(f.Arg.Key.ID); p != nil {
			p.rejection = s
		}
	}
	return nil
}

// DoLeaveTurnUnclaimed returns the claimed Turn to the queue with backoff:
// the one refusal that authorizes a retry (daemon-protocol.txt:116). It
// fires requeue on the Turn's machine, whose move goes into the loop's
// batch; a Turn cancelled meanwhile is cancelled instead (the table).
func (h execHooks) DoLeaveTurnUnclaimed(f *fsm.Firing[*peer.Event]) error {
	p := h.c.prep(f.Arg.Key.ID)
	if p == nil || p.readOnly || p.run == nil {
		return nil // a read has no Turn; its worker reports the refusal
	}
	_, err := h.c.fireTurn(p.run.turn, turn.Requeue, turn.Args{NotBefore: h.c.g.cfg.Clock.Now().Add(h.c.g.backoff(p.attempts))}, false)
	h.c.after = append(h.c.after, h.c.g.kick)
	return err
}

// storeCtx bounds one store operation of the gateway's (g.stores: the
// terminal record of a Run lost at shutdown is still written).
func (g *Gateway) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(g.stores, 3*time.Second)
}

func (h execHooks) GuardMatchesCancelDelivery(f *fsm.Firing[*peer.Event]) bool {
	r := h.c.run(f.Arg.Key.ID)
	return r != nil && guard.MatchesCancelDelivery(f.Arg.Payload(), r.matches)
}

// GuardUnsettledCancel: the receipt of this Run's cancellation says the
// Runtime ended the native work without settling it (its Harness was
// killed).
func (h execHooks) GuardUnsettledCancel(f *fsm.Firing[*peer.Event]) bool {
	r := h.c.run(f.Arg.Key.ID)
	return r != nil && guard.UnsettledCancel(f.Arg.Payload(), r.matches)
}

// journal adds the frame (or a Core observation) to the connection's
// journal batch, which the loop commits before anything it queued leaves
// (journal.go). Hooks run on the loop, and only the loop touches the batch.
func (h execHooks) journal(r *runRec, typ string, payload any) error {
	e, err := h.c.event(r, typ, payload)
	if err != nil {
		return err
	}
	h.c.backlog.Add(int64(len(e.Payload)))
	h.c.pending.Events = append(h.c.pending.Events, e)
	return nil
}

func (h execHooks) frame(f *fsm.Firing[*peer.Event]) (*runRec, error) {
	r := h.c.run(f.Arg.Key.ID)
	if r == nil {
		return nil, errors.New("gateway: no record of run " + f.Arg.Key.String())
	}
	if f.Arg.Msg == nil {
		return r, nil
	}
	payload := validated(f.Arg.Msg)
	if raw, ok := payload.(json.RawMessage); ok && (h.c.overLimit(r, int64(len(raw))) || h.c.overflows(r, int64(len(raw)))) {
		return r, nil
	}
	return r, h.journal(r, f.Arg.Msg.Type, payload)
}

// finish records the Turn's terminal state and wakes its worker and its
// event streams. A Turn already terminal (a late receipt after
// cancel_unconfirmed) keeps its first record. When the step settles the
// Run machine, the Run's open inputs and questions are told (closeRun).
//
// The record goes into the loop's batch with the Run's last events (one
// commit); the worker and the event streams are woken once it committed.
func (h execHooks) finish(f *fsm.Firing[*peer.Event], r *runRec, action string, o store.Outcome) error {
	var err error
	if e, ok := turn.RunEnd(action, settled(f)); ok {
		_, err = h.c.fireTurn(r.turn, e, turn.Args{Outcome: o}, true)
		h.c.after = append(h.c.after, r.done)
	}
	if settled(f) != fsm.OutcomeNone {
		h.c.closeRun(r)
	}
	return err
}

// closeRun fires run_settled on every input of the Run still waiting for
// a receipt and run_closed on every question of the Run still open: once
// the Run is settled (or its observation lost) no receipt can follow, so
// an input in flight becomes unknown, an answered question orphaned and an
// unanswered one unanswered, each by its own table. It runs on the loop;
// the driver defers the events until the current step is done.
func (c *conn) closeRun(r *runRec) {
	for _, k := range c.inputs.Sent(r.runID) {
		c.localIfOpen(k, fsm.EventID(inputfsm.EventRunSettled))
	}
	for _, k := range c.questions.OfRun(r.runID) {
		c.localIfOpen(peer.Key{Machine: interaction.Table.Name, ID: k}, fsm.EventID(interaction.EventRunClosed))
	}
}

func (c *conn) localIfOpen(k peer.Key, e fsm.EventID) {
	if i, ok := c.d.Lookup(k); ok && !i.Terminal() {
		_ = c.d.Local(k, e, nil)
	}
}

// recordNative keeps the native Session identity a Run ended with (done's
// or the cancellation receipt's metadata), which the Session's next Turn
// resumes (daemon-protocol.txt:38, 60).
//
// decision: the first identity recorded for a Session stays; a Run that
// reports another one is journaled as native_session_conflict evidence and
// changes nothing, since resuming is an explicit operation with verified
// identity (daemon-protocol.txt:165).
func (h execHooks) recordNative(r *runRec, m *wire.DoneMetadata) error {
	if m == nil || m.AgentSessionID == "" {
		return nil
	}
	ctx, cancel := h.c.storeCtx()
	defer cancel()
	err := h.c.g.cfg.Store.RecordNativeSession(ctx, r.sessionID, m.AgentSessionID)
	if errors.Is(err, store.ErrStale) {
		return h.journal(r, "observation", map[string]string{"native_session_conflict": m.AgentSessionID})
	}
	return err
}

func (h execHooks) DoRecordOutput(f *fsm.Firing[*peer.Event]) error {
	_, err := h.frame(f)
	return err
}

func (h execHooks) DoReplaceUsage(f *fsm.Firing[*peer.Event]) error {
	_, err := h.frame(f)
	return err
}

// DoRecordError keeps an error frame's neutral classification (never its
// prose, wire-reference.md §5) or ends a Run whose prepared start failed.
func (h execHooks) DoRecordError(f *fsm.Firing[*peer.Event]) error {
	r, err := h.frame(f)
	if r == nil || f.Arg.Msg == nil {
		return err
	}
	switch p := f.Arg.Msg.Payload.(type) {
	case wire.ErrorFrame:
		if code, status, ok := wire.ClassifyEngineFailure(p); ok {
			r.engineCode, r.engineHTTP = string(code), status
		}
	case wire.PreparationStatus:
		// decision: a confirmed start failure keeps its finite category
		// as evidence (daemon-protocol.txt:156); the public reason says
		// the Run never started.
		ev, _ := json.Marshal(map[string]string{"preparation_error": p.ErrorCode})
		return errors.Join(err, h.finish(f, r, "record_error", store.Outcome{Evidence: ev}))
	}
	return err
}

// ReasonStartFailed is the public reason of a Turn whose prepared start
// the Runtime refused or failed: no Run input was consumed.
const ReasonStartFailed = "start_failed"

// ReasonCancelRefused is the public reason of a Turn whose cancellation
// receipt reported applied false.
const ReasonCancelRefused = "cancel_refused"

// settled is the outcome the table gives the step's target state
// (fsm.OutcomeNone while the lifecycle goes on): hooks that record a public
// outcome read it from the table rather than naming states.
func settled(f *fsm.Firing[*peer.Event]) fsm.Outcome { return f.Table.State(f.To).Outcome }

func (h execHooks) DoCloseStream(f *fsm.Firing[*peer.Event]) error {
	r, err := h.frame(f)
	if r == nil {
		return err
	}
	if done, ok := f.Arg.Msg.Payload.(wire.Done); ok {
		err = errors.Join(err, h.recordNative(r, done.Metadata))
	}
	// The table's outcome of the target decides (turn.RunEnd).
	return errors.Join(err, h.finish(f, r, "close_stream", store.Outcome{EngineErrorCode: r.engineCode, EngineHTTPStatus: r.engineHTTP}))
}

func (h execHooks) DoApplyCancelReceipt(f *fsm.Firing[*peer.Event]) error {
	r, err := h.frame(f)
	if r == nil {
		return err
	}
	ack, _ := f.Arg.Msg.Payload.(wire.InteractionDecisionAck)
	if settled(f) == fsm.OutcomeSuccess { // applied: cancelled
		var ev json.RawMessage
		if ack.Outcome != nil {
			ev, _ = json.Marshal(ack.Outcome)
			err = errors.Join(err, h.recordNative(r, ack.Outcome.Metadata))
		}
		return errors.Join(err, h.finish(f, r, "apply_cancel_receipt", store.Outcome{Evidence: r.withCause(ev)}))
	}
	// decision: a refused cancellation (run_inactive, ...) is a failed
	// Turn with its own reason; the code is native evidence, kept apart
	// (daemon-protocol.txt:153).
	ev, _ := json.Marshal(map[string]string{"cancel_error": ack.ErrorCode})
	return errors.Join(err, h.finish(f, r, "apply_cancel_receipt", store.Outcome{Evidence: r.withCause(ev)}))
}

// DoMarkEventStreamIncomplete: observation was lost; nothing is invented
// (daemon-protocol.txt:149, 153).
func (h execHooks) DoMarkEventStreamIncomplete(f *fsm.Firing[*peer.Event]) error {
	r := h.c.run(f.Arg.Key.ID)
	if r == nil {
		return nil
	}
	if r.limited {
		return h.finish(f, r, actionJournalLimit, store.Outcome{})
	}
	if f.Event == fsm.EventID(run.EventSubscriptionOverflow) {
		// The stream's last event says why it ends here while the
		// connection stays up; nothing else is invented.
		if err := h.journal(r, "observation", map[string]string{"reason": "subscription_overflow"}); err != nil {
			return err
		}
	}
	return h.finish(f, r, "mark_event_stream_incomplete", store.Outcome{})
}

// DoMarkDeliveryUnknown: a failed write of the start closes the transport,
// so connection_lost follows and event_stream_incomplete replaces this
// reason (daemon-protocol.txt:153); only the journal keeps it.
func (h execHooks) DoMarkDeliveryUnknown(f *fsm.Firing[*peer.Event]) error {
	r := h.c.run(f.Arg.Key.ID)
	if r == nil {
		return nil
	}
	return h.journal(r, "observation", map[string]string{"reason": store.ReasonDeliveryUnknown})
}

// DoMarkCancelUnconfirmed: no receipt within 15 s, a lost connection, or
// a receipt saying the Runtime could not settle the cancellation natively
// (its Harness was killed, spec/run.yaml unsettled_cancel). That receipt
// is journaled and its code kept as evidence.
func (h execHooks) DoMarkCancelUnconfirmed(f *fsm.Firing[*peer.Event]) error {
	r, err := h.frame(f)
	if r == nil {
		return err
	}
	var ev json.RawMessage
	if ack, ok := f.Arg.Payload().(wire.InteractionDecisionAck); ok {
		ev, _ = json.Marshal(map[string]string{"cancel_error": ack.ErrorCode})
	}
	return errors.Join(err, h.finish(f, r, "mark_cancel_unconfirmed", store.Outcome{Evidence: r.withCause(ev)}))
}

// DoSettleLate keeps a late receipt beside the cancel_unconfirmed already
// recorded, which stays the Turn's outcome.
func (h execHooks) DoSettleLate(f *fsm.Firing[*peer.Event]) error {
	r := h.c.run(f.Arg.Key.ID)
	if r == nil {
		return nil
	}
	return h.journal(r, "late_cancel_receipt", validated(f.Arg.Msg))
}

package gateway

import (
	"encoding/json"
	"errors"
	"maps"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/fsm/run"
	"github.com/agentwire/agentwire/internal/peer"
)

// Stall detection (spec/run.yaml, stall_wait). The Run machine arms the
// timer while the Run is requested, streaming or errored and restarts it
// on every Run frame; heartbeats are the connection's and prove liveness
// only (daemon-protocol.txt:15), so they never reach it. When it expires
// the gateway cancels the Turn exactly as a user's cancellation does
// (CancelTurn), and remembers that the cancellation was a stall so the
// Turn's outcome names stalled as its cause. The outcome itself stays the
// cancellation's: cancelled on an applied receipt, cancel_unconfirmed
// without one.

// DefaultStallTimeout is how long a Run may send no Run frame before Core
// cancels it.
//
// decision: ten minutes, local policy (spec/run.yaml, stall_wait): the
// protocol bounds no silence of a Run. A Harness reports each tool call
// before it runs, so ten minutes of silence is a model or a tool that has
// hung, and the Session and device it holds are better given back.
const DefaultStallTimeout = 10 * time.Minute

// JournalStalled is the journal event of a Run Core is about to cancel
// because it was silent for the stall timeout: {"silent_for": "10m0s"}.
const JournalStalled = "stalled"

// CauseStalled is the cause a Turn's status shows when Core cancelled its
// Run for silence.
const CauseStalled = "stalled"

// stallKey is the policy key of the stall timer in peer.Config.Durations.
var stallKey = run.Name + "." + run.TimerStallWait.String()

// stallDisabledPeriod is how often a disabled stall timer fires for
// nothing: it stays in the table, so it is armed, but never cancels.
const stallDisabledPeriod = 24 * time.Hour

// stallDurations returns the Durations the connections run with: the
// configured ones plus the stall timeout (unless a test set it directly).
// A negative timeout disables stall detection.
func stallDurations(cfg Config) map[string]time.Duration {
	out := maps.Clone(cfg.Durations)
	if out == nil {
		out = map[string]time.Duration{}
	}
	if _, set := out[stallKey]; set {
		return out
	}
	switch {
	case cfg.StallTimeout < 0:
		out[stallKey] = stallDisabledPeriod
	case cfg.StallTimeout > 0:
		out[stallKey] = cfg.StallTimeout
	default:
		out[stallKey] = DefaultStallTimeout
	}
	return out
}

// GuardAwaitingAnswer: a question of the Run is still pending (no answer
// sent), which makes its silence expected.
func (h execHooks) GuardAwaitingAnswer(f *fsm.Firing[*peer.Event]) bool {
	for _, id := range h.c.questions.OfRun(f.Arg.Key.ID) {
		i, ok := h.c.d.Lookup(peer.Key{Machine: interaction.Name, ID: id})
		if ok && interaction.State(i.State()) == interaction.StatePending {
			return true
		}
	}
	return false
}

// DoCancelStalled journals the stall and cancels the Turn off the loop:
// CancelTurn sends prompt_cancel through the driver, which this hook is
// running on. It cancels again on a later expiry, should the first
// cancellation have found the Turn between two steps.
func (h execHooks) DoCancelStalled(f *fsm.Firing[*peer.Event]) error {
	r := h.c.run(f.Arg.Key.ID)
	if r == nil {
		return nil
	}
	g := h.c.g
	if g.cfg.StallTimeout < 0 {
		return nil // disabled: the timer only keeps itself armed
	}
	silent := g.cfg.Durations[stallKey]
	if r.markStalled() {
		// The first expiry is the stall; a later one (the cancellation
		// could not be sent) only tries again.
		if err := h.journal(r, JournalStalled, map[string]string{"silent_for": silent.String()}); err != nil {
			return err
		}
	}
	h.c.log.Warn("gateway: run stalled, cancelling", "turn_id", r.turnID, "run_id", r.runID, "silent_for", silent)
	// The cancellation starts once the batch holding the stalled event
	// is committed, so the journal shows the cause before the
	// cancellation's record (which CancelTurn writes at once).
	h.c.after = append(h.c.after, func() { h.cancelStalled(r) })
	return nil
}

// cancelStalled runs CancelTurn for r on a goroutine of the gateway's.
func (h execHooks) cancelStalled(r *runRec) {
	g := h.c.g
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		delivery, err := g.CancelTurn(g.ctx, r.turnID)
		switch {
		case err == nil:
			h.c.log.Info("gateway: stalled run cancelled", "turn_id", r.turnID, "run_id", r.runID, "delivery_id", delivery)
		case errors.Is(err, ErrTurnFinished), errors.Is(err, ErrNotRunning), g.ctx.Err() != nil:
			// The Run ended meanwhile, or its connection did: that
			// outcome stands.
		default:
			h.c.log.Warn("gateway: cancel stalled run", "turn_id", r.turnID, "run_id", r.runID, "err", err)
		}
	}()
}

// markStalled records that Core cancels r for silence; false when it was
// recorded already.
func (r *runRec) markStalled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stalled {
		return false
	}
	r.stalled = true
	return true
}

func (r *runRec) wasStalled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stalled
}

// withCause adds the stall as the cause to a cancellation's evidence (an
// object, or none), which the Turn's status shows (store.Turn.Status).
func (r *runRec) withCause(ev json.RawMessage) json.RawMessage {
	if !r.wasStalled() {
		return ev
	}
	m := map[string]json.RawMessage{}
	if len(ev) > 0 && json.Unmarshal(ev, &m) != nil {
		return ev // not an object: left as it is
	}
	m["cause"], _ = json.Marshal(CauseStalled)
	out, err := json.Marshal(m)
	if err != nil {
		return ev
	}
	return out
}

// questionSettled restarts the stall timer of the question's Run once the
// question stops waiting for Core's answer (spec/run.yaml, answered).
func (c *conn) questionSettled(ev *peer.Event, s fsm.Step) {
	if ev.Key.Machine != interaction.Name || s.Disposition() == fsm.Rejected {
		return
	}
	if interaction.State(s.From()) != interaction.StatePending || interaction.State(s.To()) == interaction.StatePending {
		return
	}
	r, ok := c.questions.RunOf(ev.Key.ID)
	if !ok {
		return
	}
	c.localIfOpen(peer.Key{Machine: run.Name, ID: r.RunID()}, fsm.EventID(run.EventAnswered))
}

package execution

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/internal/runtime/bounded"
	inputmod "github.com/agentwire/agentwire/internal/runtime/execution/internal/input"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// runState is one Run's native side.
type runState struct {
	id             string
	cancel         context.CancelFunc
	cancelDelivery string // the delivery ID of the latest prompt_cancel (guards read it)
	cancelled      bool
	unsettled      string // why the native work ended only by a kill (harness.ErrCancelUnsettled): no settlement to confirm
	stopped        bool   // the Runtime's own shutdown cancelled it; Core never asked (Session.Shutdown)
	settled        bool
	forgotten      bool       // the driver forgot the Run's instance (forget.go)
	failure        string     // why a frame of the Run was refused (emit.go); published as an error before done
	outcome        *wire.Done // what the native work settled with

	turn    harness.Turn
	exe     harness.Executor // set once the Executor exists (for active input and answers)
	holding bool             // done is held back for inputs in flight
	em      *emitter         // the Run's frames, in order (emit.go)
	env     *string          // the Environment ID of the handle it took over; nil for prompt_request (no read target)
	envID   string           // the Environment it runs in (its local_environment); "" for none
	from    *admission       // the admission it took over (its Executor may go idle); nil for prompt_request
}

type runHooks struct{ s *Session }

func (h runHooks) GuardMatchesCancelDelivery(f *fsm.Firing[*peer.Event]) bool {
	r := h.s.runs[f.Arg.Key.ID]
	return r != nil && guard.MatchesCancelDelivery(f.Arg.Payload(), func(d string) bool { return d == r.cancelDelivery })
}

// DoStartNative starts the Run: from a ready admission (execution_start,
// whose handle and Executor must be the ones this request was granted, so
// an old handle never consumes a replacement's admission) or directly
// (prompt_request, which prepares its own Executor).
func (h runHooks) DoStartNative(f *fsm.Firing[*peer.Event]) error {
	s, ev := h.s, f.Arg
	d := ev.Driver()
	runID := ev.Key.ID
	switch p := ev.Msg.Payload.(type) {
	case wire.ExecutionStart:
		a := s.admissions[ev.Msg.ID]
		code := ""
		switch {
		case a == nil:
			code = wire.PrepCodeUnknownPreparation
		case a.handle != p.Handle:
			code = wire.PrepCodeInvalidStart
		case a.executorID != p.ExecutorID:
			code = wire.PrepCodeUnknownExecutor
		case s.runs[runID] != nil:
			code = wire.PrepCodeRunConflict
		case a.exe == nil:
			code = wire.PrepCodeExecutorUnavailable
		case s.fence.Held(a.env):
			// decision: a ready admission survives a quiesce of its
			// Environment, but it cannot start a Run until the resume
			// (daemon-protocol.txt:96).
			code = wire.PrepCodeResourceUnavailable
		case s.workspaceHeld(a.env):
			// A write or export took the Environment's workspace after the
			// preparation was granted: execution there waits for it
			// (daemon-protocol.txt:185).
			code = wire.PrepCodeResourceUnavailable
		case harness.CheckInput(a.decl.Capabilities, p.Input) != nil:
			// decision: content the admitted declaration cannot carry (an
			// image on a text-only Harness) is rejected explicitly before
			// the Run starts, never dropped (daemon-protocol.txt:98); the
			// start is refused unsupported_configuration, and the ready
			// admission stays Core's to release.
			code = wire.PrepCodeUnsupportedConfiguration
		}
		if code != "" {
			s.reject(d, ev.Msg.ID, wire.PreparationOpStart, code, p)
			return nil
		}
		a.transferred = true
		exe := a.exe
		a.exe = nil
		s.publish(d, a, wire.PreparationStatus{State: wire.PreparationStarting})
		s.publish(d, a, wire.PreparationStatus{State: wire.PreparationStarted, RunID: runID})
		s.startRun(runID, a.env, harness.Turn{RunID: runID, Input: p.Input, Declaration: a.decl}, exe, nil)
		env := a.env
		s.runs[runID].env = &env
		s.runs[runID].from = a
	case wire.PromptRequest:
		env := envOf(p)
		adapter, decl, ok := s.cfg.Registry.Lookup(p.AgentKind)
		if p.LocalEnvironment != nil && !s.cfg.Environments.Has(env) {
			// decision: a prompt_request bound to an Environment this
			// Runtime is not configured with fails before any native work,
			// as an execution_prepare is refused session_binding_conflict
			// (daemon-protocol.txt:19, :155); prompt_request has no
			// rejection receipt, so the Run ends with an error and done.
			send(d, runID, wire.ErrorFrame{Error: "the Runtime is not bound to this Environment (session_binding_conflict)"})
			send(d, runID, wire.Done{})
			return nil
		}
		if !ok || !decl.Available || s.runs[runID] != nil || s.busy() || s.shutting || s.fence.Held(env) || s.workspaceHeld(env) {
			// prompt_request has no rejection receipt: the Run fails with an
			// error and done (daemon-protocol.txt:124).
			send(d, runID, wire.ErrorFrame{Error: "the Runtime cannot start this Run now"})
			send(d, runID, wire.Done{})
			return nil
		}
		if err := harness.CheckConfiguration(decl.Capabilities, p); err != nil {
			// An operation or content the declaration does not support is
			// refused before any native call (daemon-protocol.txt:27, :98,
			// :157); prompt_request has no rejection receipt.
			send(d, runID, wire.ErrorFrame{Error: boundedError(err)})
			send(d, runID, wire.Done{})
			return nil
		}
		s.active++
		cfg := harness.ExecutorConfig{Configuration: p, Declaration: decl, WorkspaceDir: s.cfg.Environments.Dir(env)}
		s.startRun(runID, env, harness.Turn{RunID: runID, Input: p.Input, Declaration: decl}, nil, func(ctx context.Context) (harness.Executor, error) {
			return adapter.NewExecutor(ctx, cfg)
		})
	}
	return nil
}

// startRun runs the Turn of the Environment env ("" for none) on its own
// goroutine, on exe (the Executor a start took over) or on one newExecutor
// prepares there (prompt_request). Frames go out through the connection in
// order; when the native work settles, done is published, and a
// cancellation receipt follows when prompt_cancel asked for one.
func (s *Session) startRun(runID, env string, turn harness.Turn, exe harness.Executor, newExecutor func(context.Context) (harness.Executor, error)) {
	ctx, cancel := context.WithCancel(s.ctx)
	turn.Notify = s.inputs.Notify(runID)
	// A known Executor is recorded here, on the loop, rather than posted
	// from the Turn's goroutine: one hand-off less while a start is answered.
	r := &runState{id: runID, envID: env, cancel: cancel, turn: turn, exe: exe}
	r.em = s.newEmitter(runID)
	s.runs[runID] = r
	s.goNative(func() {
		defer cancel()
		emit := r.em.emit
		var done wire.Done
		var err error
		if exe == nil {
			if exe, err = newExecutor(ctx); err == nil {
				s.post(func(*peer.Driver) { r.exe = exe })
			}
		}
		if err == nil {
			done, err = exe.Run(ctx, turn, emit)
		}
		unsettled := ""
		if errors.Is(err, harness.ErrCancelUnsettled) {
			unsettled = boundedError(err)
		}
		if err != nil && !errors.Is(err, context.Canceled) && unsettled == "" {
			_ = emit(s.ctx, wire.ErrorFrame{Error: boundedError(err)})
		}
		retained := false
		r.em.waitHeld(context.Background())
		_ = s.post(func(d *peer.Driver) {
			r.settled, r.outcome, r.unsettled = true, &done, unsettled
			// decision: only a Run that settled normally leaves a healthy
			// Executor, and only one taken over from an admission has a
			// configuration (the prepared Session's) a later admission can
			// match; a prompt_request carries its input in its
			// configuration, a cancelled or failed Turn may leave native
			// state behind, and an input still in flight may still use the
			// Executor. Those are closed (daemon-protocol.txt:72, :118).
			if exe != nil && err == nil && ctx.Err() == nil && r.from != nil && len(s.inputs.InFlight(runID)) == 0 && !s.shutting &&
				s.cfg.Pool.Put(r.from.continuationKey(done), r.from.executorID, r.from.env, exe, r.from.decl) {
				retained = true
				s.freeSlot()
			}
			// The "done held back" rule (daemon-protocol.txt:131): an
			// active input still in flight gets up to the drain budget
			// (the input machine's drain_wait, write + send budgets) to
			// settle before done closes the stream; the input module publishes
			// done when the last one settles or its drain ends.
			for _, id := range s.inputs.InFlight(runID) {
				_ = d.Local(inputmod.Key(runID, id), fsm.EventID(input.EventRunCompleting), nil)
			}
			// An input written and not accepted settles at run_completing
			// (no acceptance can come once the Turn settled), so what is in
			// flight is read again after it.
			if len(s.inputs.InFlight(runID)) == 0 {
				s.publishDone(d, r)
				return
			}
			r.holding = true
		})
		switch {
		case retained:
		case exe != nil:
			id := runID
			if r.from != nil {
				id = r.from.executorID
			}
			s.closeExecutor(id, env, exe, nil)
		default:
			s.post(func(*peer.Driver) { s.freeSlot() })
		}
	})
}

// publishDone closes the Run's stream, answers a pending cancellation and
// closes the Run's open interactions.
func (s *Session) publishDone(d *peer.Driver, r *runState) {
	r.holding = false
	if r.failure != "" {
		send(d, r.id, wire.ErrorFrame{Error: r.failure})
	} else if r.unsettled != "" && !r.cancelled {
		// Killed with no cancellation asked (the adapter's own deadline
		// interrupted the Turn): the Run failed, as any error of Run's.
		send(d, r.id, wire.ErrorFrame{Error: r.unsettled})
	}
	if r.stopped && !r.cancelled {
		// decision: a Turn the Runtime's own shutdown stopped did not end by
		// its own course, so done alone would report a completed Turn with
		// truncated content. Core asked for no cancellation, so there is no
		// receipt to give (daemon-protocol.txt:133, :138); an error frame
		// before done makes the stream one that ended in failure
		// (daemon-protocol.txt:106, 156), and done still carries what the
		// native work settled with, its native Session identity among it,
		// so the Session's next Turn continues it. A prompt_cancel that
		// arrives meanwhile gets its receipt instead.
		send(d, r.id, wire.ErrorFrame{Error: ErrStoppedByShutdown.Error()})
	}
	send(d, r.id, *r.outcome)
	if r.cancelled {
		s.ackCancel(d, r)
	}
	s.asks.CloseRun(d, r.id)
	s.dropRun(r)
}

// ackCancel answers the Run's cancellation once its native work ended:
// applied with the settled outcome, or, when the Harness had to be killed,
// not applied, with the adapter's account of it as the error text. A kill
// is not native settlement (daemon-protocol.txt:147).
//
// decision: the unapplied receipt carries runtime_error, the closed list's
// code for a native call that failed (wire.InteractionAckCodes); Core
// reads it on a cancellation as settlement it cannot confirm and records
// cancel_unconfirmed (spec/run.yaml, unsettled_cancel), never cancelled.
func (s *Session) ackCancel(d *peer.Driver, r *runState) {
	if r.unsettled != "" {
		applied := false
		send(d, r.id, wire.InteractionDecisionAck{DeliveryID: r.cancelDelivery, Applied: &applied,
			ErrorCode: wire.InteractionCodeRuntimeError, Error: r.unsettled})
		return
	}
	applied := true
	send(d, r.id, wire.InteractionDecisionAck{DeliveryID: r.cancelDelivery, Applied: &applied, Outcome: r.outcome})
}

// GuardUnsettledCancel: the receipt sent for this Run's cancellation says
// its native work ended without settlement (ackCancel).
func (h runHooks) GuardUnsettledCancel(f *fsm.Firing[*peer.Event]) bool {
	r := h.s.runs[f.Arg.Key.ID]
	return r != nil && guard.UnsettledCancel(f.Arg.Payload(), func(d string) bool { return d == r.cancelDelivery })
}

// DoCancelNative cancels the native work; the receipt follows its
// settlement, never the request (daemon-protocol.txt:138). A repeat after
// settlement is answered at once.
func (h runHooks) DoCancelNative(f *fsm.Firing[*peer.Event]) error {
	s, ev := h.s, f.Arg
	r := s.runs[ev.Key.ID]
	if r == nil {
		return nil
	}
	if p, ok := ev.Msg.Payload.(wire.PromptCancel); ok {
		r.cancelDelivery = p.DeliveryID
	}
	r.cancelled = true
	if r.holding {
		return nil // publishDone answers it after done
	}
	if r.settled {
		s.ackCancel(ev.Driver(), r)
		return nil
	}
	r.cancel()
	return nil
}

// ErrStoppedByShutdown is the error frame of a Run the Runtime's shutdown
// cancelled before it ended by itself.
var ErrStoppedByShutdown = errors.New("runtime shutdown: the daemon stopped this Turn before it ended, and its native work was cancelled; the Turn did not complete")

// boundedError is err's text cut to 512 bytes on a rune boundary, for a
// frame's error member.
func boundedError(err error) string { return bounded.Text(err.Error(), 512) }

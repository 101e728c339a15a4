package execution

import (
	"context"
	"crypto/sha256"
	"reflect"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	asks "github.com/agentwire/agentwire/internal/runtime/execution/internal/interaction"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// admission is the record of one preparation request: its handle, the
// revisions it published, the Executor it owns until a start transfers it,
// and the declaration it was admitted with.
type admission struct {
	requestID   string
	handle      string
	executorID  string
	fingerprint [32]byte
	poolKey     [32]byte // what an idle Executor of this configuration is retained under (idleKey)
	env         string   // the Environment it is bound to (local_environment); "" for none
	readOnly    bool
	decl        harness.Declaration
	cfg         harness.ExecutorConfig

	applied uint64 // the highest revision the machine applied (guards read it)
	rev     uint64 // the highest revision this Runtime minted
	last    *wire.PreparationStatus

	exe         harness.Executor
	reused      bool          // exe came from the Pool's idle Executors
	prepDone    chan struct{} // closed when native preparation returned
	transferred bool          // a start took the Executor
	releasing   bool          // release, expiry, failure or loss: no ready may follow
	settling    bool          // its cleanup began (it runs once)
	returned    bool          // native preparation returned, seen on the loop
	expiresAt   int64
}

func fingerprint(p wire.Payload) [32]byte { return guard.Fingerprint(p) }

// idleKey is what an idle Executor is retained under and taken back by:
// the admission's fingerprint (the Session and its whole configuration,
// local_environment's ID included) and the workspace directory that
// Environment is bound to.
//
// decision: an Executor runs in its Environment's workspace (its
// ExecutorConfig.WorkspaceDir), so it is reused only for the identical
// configuration in the very same Environment and directory
// (daemon-protocol.txt:72: retained across Turns with identical
// configuration); the directory is part of the key so that reuse never
// depends on the ID alone naming one directory.
func idleKey(fp [32]byte, dir string) [32]byte {
	h := sha256.New()
	h.Write(fp[:])
	h.Write([]byte{0})
	h.Write([]byte(dir))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// continuationKey is what the Executor of a's Run is retained under once
// that Run settled normally and reported done.
//
// decision: an Executor is retained across Turns with identical
// configuration (daemon-protocol.txt:72), and the configuration Core sends
// for a Session's next Turn is this one with the native Session the Run
// reported in done (agent_session_id, and no
// require_existing_native_session once an ID is recorded,
// daemon-protocol.txt:38, :60). The idle Executor is that native Session,
// still open, so it is retained under that next configuration. Retained
// under the first one, no later Turn would take it, and a native Session
// that admits one writer (a Codex thread) would refuse the next Turn's
// fresh Executor while the idle one held it.
func (a *admission) continuationKey(done wire.Done) [32]byte {
	if done.Metadata == nil || done.Metadata.AgentSessionID == "" {
		return a.poolKey
	}
	next := a.cfg.Configuration
	next.AgentSessionID, next.RequireExistingNativeSession = done.Metadata.AgentSessionID, false
	return idleKey(fingerprint(wire.ExecutionPrepare{SessionID: a.cfg.SessionID, Configuration: next}), a.cfg.WorkspaceDir)
}

// record returns the admission an instance carries, if any.
func record(i *peer.Instance) *admission {
	if i == nil {
		return nil
	}
	a, _ := i.Data.(*admission)
	return a
}

type prepHooks struct{ s *Session }

func status(ev *peer.Event) (wire.PreparationStatus, bool) {
	if ev.Msg == nil {
		return wire.PreparationStatus{}, false
	}
	st, ok := ev.Msg.Payload.(wire.PreparationStatus)
	return st, ok
}

func (h prepHooks) GuardNewerRevision(f *fsm.Firing[*peer.Event]) bool {
	a := record(f.Arg.Inst)
	return a != nil && guard.NewerRevision(f.Arg.Payload(), a.applied)
}

func (h prepHooks) GuardSameFingerprint(f *fsm.Firing[*peer.Event]) bool {
	a := record(f.Arg.Inst)
	return a != nil && guard.SameFingerprint(f.Arg.Payload(), a.fingerprint)
}

func (h prepHooks) GuardCapacityRefusal(f *fsm.Firing[*peer.Event]) bool {
	return guard.CapacityRefusal(f.Arg.Payload())
}

func (h prepHooks) GuardRejectsPrepare(f *fsm.Firing[*peer.Event]) bool {
	return guard.RejectsPrepare(f.Arg.Payload())
}

func (h prepHooks) GuardRejectsStart(f *fsm.Firing[*peer.Event]) bool {
	return guard.RejectsStart(f.Arg.Payload())
}

func (h prepHooks) GuardReadOnlyProfile(f *fsm.Firing[*peer.Event]) bool {
	a := record(f.Arg.Inst)
	return a != nil && a.readOnly
}

// SendPreparationStatus answers whatever asked for a status: a first
// execution_prepare is admitted (or rejected), a repeated one republishes
// the last status, a start of a read-only handle is rejected, a repeated
// release republishes, and the expiry publishes expired.
func (h prepHooks) SendPreparationStatus(f *fsm.Firing[*peer.Event]) error {
	s, ev := h.s, f.Arg
	d := ev.Driver()
	a := record(ev.Inst)
	if ev.Msg == nil { // the admission_expiry timer
		if a != nil {
			a.releasing = true
			s.publish(d, a, wire.PreparationStatus{State: wire.PreparationExpired})
		}
		return nil
	}
	switch p := ev.Msg.Payload.(type) {
	case wire.ExecutionPrepare:
		if a == nil {
			s.admit(d, ev.Inst, p)
			return nil
		}
		if a.last != nil {
			send(d, a.requestID, *a.last)
		}
	case wire.ExecutionStart:
		send(d, ev.Key.ID, wire.PreparationStatus{
			State: wire.PreparationRejected, Operation: wire.PreparationOpStart,
			ErrorCode: wire.PrepCodeReadOnlyPreparation, Handle: p.Handle, RunID: p.RunID,
		})
	case wire.ExecutionRelease:
		if a != nil && a.last != nil {
			send(d, a.requestID, *a.last)
		}
	}
	return nil
}

// publish mints the next revision of a's handle and sends it.
func (s *Session) publish(d *peer.Driver, a *admission, st wire.PreparationStatus) {
	a.rev++
	st.Revision, st.Handle = a.rev, a.handle
	if a.executorID != "" && !a.readOnly {
		st.ExecutorID = a.executorID
	}
	a.last = &st
	send(d, a.requestID, st)
}

func (s *Session) reject(d *peer.Driver, id, op, code string, p wire.Payload) {
	send(d, id, rejection(op, code, p))
}

// rejection is the preparation_status that rejects one control operation.
func rejection(op, code string, p wire.Payload) wire.PreparationStatus {
	st := wire.PreparationStatus{State: wire.PreparationRejected, Operation: op, ErrorCode: code}
	if start, ok := p.(wire.ExecutionStart); ok {
		st.Handle, st.RunID = start.Handle, start.RunID
	}
	return st
}

// admit checks a fresh execution_prepare against the registry and the
// capacity, grants a handle and starts native preparation off the loop.
func (s *Session) admit(d *peer.Driver, inst *peer.Instance, p wire.ExecutionPrepare) {
	cfg := p.Configuration
	env := envOf(cfg)
	adapter, decl, ok := s.cfg.Registry.Lookup(cfg.AgentKind)
	code := ""
	switch {
	case cfg.LocalEnvironment != nil && !s.cfg.Environments.Has(env):
		// decision: a configuration bound to an Environment this Runtime
		// is not configured with is refused before anything is reserved,
		// with the binding conflict code, for the executor and the
		// read-only profile alike: the Runtime checks the request against
		// its own binding and never picks another workspace
		// (daemon-protocol.txt:19, :59, :155, :177). The refusal is
		// definite and is not preparation_capacity, so the Turn is not
		// retried here (daemon-protocol.txt:116).
		code = wire.PrepCodeSessionBindingConflict
	case !ok || !decl.Available:
		code = wire.PrepCodeResourceUnavailable
	case !decl.Capabilities.Preparation.Supports():
		code = wire.PrepCodeUnsupportedPreparation
	case cfg.WorkspaceReadOnly && !decl.Capabilities.WorkspaceReadPreparation.Supports():
		code = wire.PrepCodeUnsupportedReadPreparation
	case !cfg.WorkspaceReadOnly && harness.CheckConfiguration(decl.Capabilities, cfg) != nil:
		// An operation the declaration does not support is refused before
		// any native call (daemon-protocol.txt:27, :157), definitely.
		code = wire.PrepCodeUnsupportedConfiguration
	case s.fence.Held(env):
		// decision: a quiescing or suspended Environment admits no new
		// execution (daemon-protocol.txt:96); the refusal is definite and
		// Core may prepare again after the resume. Only that Environment
		// is fenced: another one, or a configuration of Environment none,
		// is admitted as usual.
		code = wire.PrepCodeResourceUnavailable
	case !cfg.WorkspaceReadOnly && s.workspaceHeld(env):
		// decision: a workspace write or export excludes execution of its
		// own Environment (daemon-protocol.txt:185); the read-only profile
		// runs nothing, and another Environment's workspace is not held.
		code = wire.PrepCodeResourceUnavailable
	case s.busy() || s.shutting:
		// decision: capacity is checked before a handle is minted, so a
		// refused Turn stays unclaimed and retryable (daemon-protocol.txt:116).
		// A Runtime that shuts down answers the same: its slots are held
		// by cleanup, and the Worker may retry elsewhere or later.
		code = wire.PrepCodePreparationCapacity
	}
	if code != "" {
		s.reject(d, inst.Key.ID, wire.PreparationOpPrepare, code, p)
		return
	}
	dir := s.cfg.Environments.Dir(env)
	fp := fingerprint(p)
	a := &admission{
		requestID: inst.Key.ID, handle: s.cfg.NewID("handle-"), executorID: s.cfg.NewID("executor-"),
		fingerprint: fp, poolKey: idleKey(fp, dir), env: env, readOnly: cfg.WorkspaceReadOnly, decl: decl,
		cfg:      harness.ExecutorConfig{SessionID: p.SessionID, Configuration: cfg, Declaration: decl, WorkspaceDir: dir},
		prepDone: make(chan struct{}),
	}
	inst.Data = a
	s.admissions[a.requestID] = a
	s.active++
	if !a.readOnly {
		if idle, ok := s.cfg.Pool.Take(a.poolKey); ok {
			// A reused healthy Executor is ready without native preparation
			// (daemon-protocol.txt:114): revision 1 is ready, marked reused,
			// and it keeps the declaration it was first admitted with
			// (daemon-protocol.txt:27).
			a.executorID, a.exe, a.decl, a.cfg.Declaration, a.reused = idle.ID, idle.Exe, idle.Decl, idle.Decl, true
			close(a.prepDone)
			s.grant(d, a)
			return
		}
	}
	s.publish(d, a, wire.PreparationStatus{State: wire.PreparationPreparing})
	if a.readOnly {
		// The read-only profile is served from the bound directory without
		// starting a Harness process (daemon-protocol.txt:175).
		close(a.prepDone)
		s.grant(d, a)
		return
	}
	s.goNative(func() {
		exe, err := adapter.NewExecutor(s.ctx, a.cfg)
		exe = orNil(exe)
		// prepDone closes after the post, whether or not it ran, so a
		// settle_cleanup waiting for preparation never waits forever.
		defer close(a.prepDone)
		posted := s.post(func(d *peer.Driver) {
			a.returned = true
			switch {
			case a.releasing:
				// Released or lost meanwhile: the settle_cleanup that
				// followed closes it.
				a.exe = exe
			case err != nil:
				s.cfg.Logger.Info("preparation failed", "request_id", a.requestID, "err", err)
				// A factory may fail and still return what it created: the
				// admission keeps both, and the failure's settle_cleanup
				// closes it (daemon-protocol.txt:177).
				a.exe = exe
				a.releasing = true
				s.publish(d, a, wire.PreparationStatus{State: wire.PreparationFailed, ErrorCode: wire.PrepCodePreparationFailed})
			default:
				a.exe = exe
				s.grant(d, a)
			}
		})
		if !posted && exe != nil {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			if cerr := exe.Close(ctx); cerr != nil {
				s.cfg.Logger.Warn("executor close after connection loss failed; it stays owned", "executor_id", a.executorID, "err", cerr)
				s.cfg.Pool.Retain(a.executorID, a.env, exe, cerr)
			}
			cancel()
		}
	})
}

// orNil turns an Executor interface holding a nil pointer (an adapter that
// returned its own nil *T with an error) into nil, so that the failure's
// cleanup does not call Close on it.
func orNil(exe harness.Executor) harness.Executor {
	if exe == nil {
		return nil
	}
	if v := reflect.ValueOf(exe); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return exe
}

// grant publishes ready with the expiry, fixed here once: a repeated
// execution_prepare republishes it unchanged.
func (s *Session) grant(d *peer.Driver, a *admission) {
	a.expiresAt = s.cfg.Clock.Now().Add(AdmissionTTL).UnixMilli()
	s.publish(d, a, wire.PreparationStatus{State: wire.PreparationReady, ExpiresAt: a.expiresAt, Reused: a.reused})
}

func (h prepHooks) DoRecordRejection(f *fsm.Firing[*peer.Event]) error { return nil }

// DoSettleCleanup closes what the admission still owns: after a release it
// publishes released once the close succeeded, or cleanup_unconfirmed.
//
// decision: a released admission's Executor is closed, a reused one too:
// released is published only after a close (preparation.yaml,
// status_released), and a release acts on nothing but what its own
// admission holds (daemon-protocol.txt:114). Only an Executor whose Run
// settled normally goes back to the idle Executors.
func (h prepHooks) DoSettleCleanup(f *fsm.Firing[*peer.Event]) error {
	s, ev := h.s, f.Arg
	a := record(ev.Inst)
	if a == nil || a.transferred {
		return nil
	}
	if a.readOnly {
		s.exp.CloseOf(ev.Driver(), a.handle)
	}
	release := false
	if ev.Msg != nil {
		_, release = ev.Msg.Payload.(wire.ExecutionRelease)
	}
	var then func(d *peer.Driver, err error)
	if release {
		then = func(d *peer.Driver, err error) {
			if err != nil {
				s.publish(d, a, wire.PreparationStatus{State: wire.PreparationFailed, ErrorCode: wire.PrepCodeCleanupUnconfirmed})
				return
			}
			s.publish(d, a, wire.PreparationStatus{State: wire.PreparationReleased})
		}
	}
	s.settle(a, then)
	return nil
}

// settle closes what a still owns, once: the machine's settle_cleanup and
// a shutdown may both ask. It waits for native preparation to return (the
// Session's context ends it when the connection goes), so an Executor
// prepared for a released, expired or lost admission is closed too.
func (s *Session) settle(a *admission, then func(d *peer.Driver, err error)) {
	if a.settling {
		return
	}
	a.settling, a.releasing = true, true
	if a.returned && a.exe == nil && then == nil {
		// Native preparation returned and left nothing to close: the slot
		// is free before the loop reads the next frame, so a Core that
		// prepares again right after `failed` is not refused
		// preparation_capacity for a close with nothing to do
		// (daemon-protocol.txt:116).
		s.freeSlot()
		return
	}
	wait := a.prepDone
	s.goNative(func() {
		<-wait
		var exe harness.Executor
		if !s.post(func(*peer.Driver) { exe, a.exe = a.exe, nil }) {
			// The loop is gone, so nothing else touches a any more.
			exe, a.exe = a.exe, nil
		}
		s.closeExecutor(a.executorID, a.env, exe, then)
	})
}

// Stepped keeps the revision the machine applied, for newer_revision.
// Every settlement is followed by a frame this Runtime sends, so it is also
// where a quiesce learns that its drain is over.
func (s *Session) Stepped(ev *peer.Event, st fsm.Step) {
	s.susp.CheckDrain(ev.Driver())
	if st.Disposition() != fsm.Rejected {
		switch ev.Key.Machine {
		case input.Table.Name:
			s.inputs.Stepped(ev, st)
			return
		case interaction.Table.Name:
			s.asks.Stepped(ev)
			return
		}
	}
	if ev.Msg == nil || st.Disposition() == fsm.Rejected {
		return
	}
	switch p := ev.Msg.Payload.(type) {
	case wire.PreparationStatus:
		if a := record(ev.Inst); a != nil && ev.Key.Machine == "preparation" && p.Revision > a.applied {
			a.applied = p.Revision
		}
	case wire.PromptCancel:
		if r := s.runs[ev.Key.ID]; r != nil && ev.Key.Machine == "run" {
			r.cancelDelivery = p.DeliveryID
		}
	}
}

// Refused answers the frames whose family defines a reply: a refused
// admission operation gets a rejected preparation_status naming the
// operation and the code the table's reason starts with.
func (s *Session) Refused(r *peer.Refusal) {
	if r.Msg == nil || s.conn == nil {
		return
	}
	d := s.conn.Driver()
	// These answer frames that failed to decode (no payload), too: a
	// malformed runtime_prepare or workspace_write still ends the pending
	// transfer or write it addresses.
	switch msgType := r.Msg.Type; {
	case r.Msg.Entry == nil:
	case msgType == wire.TypeRuntimePrepare:
		s.xfer.Refuse(d, r)
		return
	case msgType == wire.TypeWorkspaceWrite:
		s.wr.Refuse(d, r)
		return
	case msgType == wire.TypeWorkspaceExport:
		s.exp.Refuse(d, r)
		return
	}
	if r.Msg.Payload == nil {
		if r.Kind == peer.RefusedDecode {
			s.refuseMalformed(d, r)
		}
		return
	}
	op, fallback := "", ""
	switch p := r.Msg.Payload.(type) {
	case wire.PromptCancel:
		// decision: a cancellation for a Run this connection does not run (or
		// no longer runs) is answered run_inactive, as the reference does;
		// the receipt proves nothing was cancelled (daemon-protocol.txt:163).
		applied := false
		d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: wire.InteractionDecisionAck{
			DeliveryID: p.DeliveryID, Applied: &applied, ErrorCode: "run_inactive"}}, nil)
		return
	case wire.PromptSteer:
		// decision: a second input while one is in flight is answered busy
		// (retryable, daemon-protocol.txt:124); an input ID already used is
		// input_conflict. Neither reaches the adapter.
		code := "input_conflict"
		if s.inputs.Busy(d, r.Msg.ID, p.InputID) {
			code = "busy"
		}
		no := false
		d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: wire.PromptSteerAck{InputID: p.InputID, Accepted: &no, ErrorCode: code}}, nil)
		return
	case wire.PermissionDecision, wire.PromptForUserChoiceDecision, wire.FunctionResult:
		delivery := asks.DeliveryOf(r.Msg)
		no := false
		// decision: the interaction table names the code in its rejection
		// reason (decision_conflict for a different answer to a settled
		// interaction, daemon-protocol.txt:161); a frame no table instance
		// takes is not_pending.
		d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: wire.InteractionDecisionAck{
			DeliveryID: delivery, Applied: &no, ErrorCode: peer.ReasonCode(r.Err, wire.InteractionCodeNotPending, wire.InteractionAckCodes())}}, nil)
		return
	case wire.WorkspaceRead:
		s.reads.Refuse(d, r, p)
		return
	case wire.EnvironmentQuiesce, wire.EnvironmentResume:
		s.susp.Refuse(d, r)
		return
	case wire.ExecutionPrepare:
		op, fallback = wire.PreparationOpPrepare, wire.PrepCodeInvalidRequest
		if r.Kind == peer.RefusedRoute {
			// The 64 admission records are all live (daemon-protocol.txt:116).
			fallback = wire.PrepCodePreparationCapacity
		}
		if cfg := p.Configuration; cfg.LocalEnvironment != nil && !s.cfg.Environments.Has(cfg.LocalEnvironment.ID) {
			// Bound to an Environment this Runtime does not serve: the
			// binding conflict whatever else refused it, as admit answers
			// it (a capacity refusal would invite a retry that can never
			// succeed here).
			d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: rejection(op, wire.PrepCodeSessionBindingConflict, p)}, nil)
			return
		}
	case wire.ExecutionStart:
		op, fallback = wire.PreparationOpStart, wire.PrepCodeInvalidStart
	case wire.ExecutionRelease:
		op, fallback = wire.PreparationOpRelease, wire.PrepCodeInvalidRelease
	default:
		return
	}
	// The machine refused the frame, so the answer is a refusal reply: it
	// steps no lifecycle (a refused duplicate start must not move the handle
	// whose start is in flight, daemon-protocol.txt:114).
	d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: rejection(op, reasonCode(r.Err, fallback), r.Msg.Payload)}, nil)
}

// reasonCode takes the finite code a table's rejection reason starts with
// ("start_conflict: …"), or fallback.
func reasonCode(err error, fallback string) string {
	return peer.ReasonCode(err, fallback, wire.PreparationCodes())
}

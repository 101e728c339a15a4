package execution

import (
	"sync"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/suspension"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// Fence is the Runtime's suspension state. Unlike everything else a
// connection owns it outlives the connection: a suspension attempt is
// persisted fencing (daemon-protocol.txt:78), and its resume may come on a
// later connection. The daemon shares one Fence between its Sessions and
// restores the saved attempts into each new driver (Saved, Save).
//
// Releasing an admission or closing an Executor never touches the fence:
// neither suspends nor resumes anything (daemon-protocol.txt:7).
//
// decision: the reference Runtime serves one bound workspace, so it fences
// one Environment at a time: while an attempt holds the fence, a quiesce
// under another suspend_id is refused resource_busy (wire-reference §2.12
// names that code for unsettled work).
type Fence struct {
	mu      sync.Mutex
	env     string // the Environment and attempt holding the fence; "" when open
	suspend string
	saved   map[string]peer.Saved // suspension instances to restore, by suspend_id
}

// NewFence returns an open fence.
func NewFence() *Fence { return &Fence{saved: map[string]peer.Saved{}} }

func (f *Fence) held() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.suspend != ""
}

// hold fences admission for the attempt; false when another attempt holds it.
func (f *Fence) hold(env, suspend string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.suspend != "" && f.suspend != suspend {
		return false
	}
	f.env, f.suspend = env, suspend
	return true
}

func (f *Fence) owner() (env, suspend string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.env, f.suspend
}

// release reopens admission if suspend holds the fence.
func (f *Fence) release(suspend string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.suspend == suspend {
		f.env, f.suspend = "", ""
		delete(f.saved, suspend)
	}
}

// Save records a suspension instance after it moved. An attempt that is
// still open is kept for the next connection; a settled one is forgotten,
// unless it still holds the fence: then its last open state is kept, so
// that its resume on a later connection can still release it. (A resume
// for another Environment no longer settles the attempt: the table refuses
// it, resume_matches_quiesce.)
func (f *Fence) Save(s peer.Saved, terminal bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !terminal:
		f.saved[s.ID] = s
	case f.suspend != s.ID:
		delete(f.saved, s.ID)
	}
}

// Saved lists the attempts to restore into a new connection's driver.
func (f *Fence) Saved() []peer.Saved {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]peer.Saved, 0, len(f.saved))
	for _, s := range f.saved {
		out = append(out, s)
	}
	return out
}

// attempt is what a suspension instance of this connection knows: the
// identity it fences and the request IDs its replies echo.
type attempt struct {
	env, suspend string
	quiesceReq   string // Envelope.id of the quiesce (the quiesced reply's id)
}

type suspHooks struct{ s *Session }

// attemptOf returns the instance's attempt, creating it for an instance
// restored from an earlier connection.
func (s *Session) attemptOf(f *fsm.Firing[*peer.Event]) *attempt {
	inst := f.Arg.Inst
	if a, ok := inst.Data.(*attempt); ok {
		return a
	}
	a := &attempt{suspend: inst.Key.ID}
	if env, suspend := s.fence.owner(); suspend == inst.Key.ID {
		a.env = env
	}
	inst.Data = a
	return a
}

// GuardOwnSuspension holds for a reply of this Runtime that echoes the
// identity of the request it answers, with no error code when accepted.
func (h suspHooks) GuardOwnSuspension(f *fsm.Firing[*peer.Event]) bool {
	a := h.s.attemptOf(f)
	env, suspend, accepted, code := "", "", false, ""
	switch r := f.Arg.Msg.Payload.(type) {
	case wire.EnvironmentQuiesced:
		env, suspend, accepted, code = r.EnvironmentID, r.SuspendID, r.Accepted != nil && *r.Accepted, r.ErrorCode
	case wire.EnvironmentResumed:
		env, suspend, accepted, code = r.EnvironmentID, r.SuspendID, r.Accepted != nil && *r.Accepted, r.ErrorCode
	default:
		return false
	}
	return suspend == a.suspend && env == a.env && !(accepted && code != "")
}

// GuardResumeMatchesQuiesce holds for a resume (or rollback) that names the
// Environment the quiesce of this suspend_id fenced; the table refuses any
// other invalid_request and leaves the attempt, and the fence, as they were.
func (h suspHooks) GuardResumeMatchesQuiesce(f *fsm.Firing[*peer.Event]) bool {
	p, ok := f.Arg.Msg.Payload.(wire.EnvironmentResume)
	a := h.s.attemptOf(f)
	return ok && a.env != "" && p.EnvironmentID == a.env
}

// DoFenceAdmission stops admitting new work and waits for the active work
// to settle: the drain ends with drain_settled, or with the table's 5 s
// quiesce_drain refusal.
//
// decision: quiescing cancels nothing: it waits for active Runs, reads,
// preparations and the transfer to settle (daemon-protocol.txt:151: the
// Runtime keeps ownership until native work settled). Ready admissions and
// idle Executors are not active work; they stay, but no start, prepare,
// prompt_request or transfer is admitted until the resume.
func (h suspHooks) DoFenceAdmission(f *fsm.Firing[*peer.Event]) error {
	s, d := h.s, f.Arg.Driver()
	p, _ := f.Arg.Msg.Payload.(wire.EnvironmentQuiesce)
	a := &attempt{env: p.EnvironmentID, suspend: p.SuspendID, quiesceReq: f.Arg.Msg.ID}
	f.Arg.Inst.Data = a
	if !s.fence.hold(a.env, a.suspend) {
		no := false
		send(d, a.quiesceReq, wire.EnvironmentQuiesced{EnvironmentID: a.env, SuspendID: a.suspend, Accepted: &no, ErrorCode: "resource_busy"})
		return nil
	}
	k := f.Arg.Key
	s.draining = &k
	s.checkDrain(d)
	return nil
}

// drainSettled marks the local drain_settled event this Session fires.
type drainSettled struct{}

// checkDrain fires drain_settled once nothing active is left.
func (s *Session) checkDrain(d *peer.Driver) {
	if s.draining == nil || s.busyDraining() {
		return
	}
	k := *s.draining
	s.draining = nil
	_ = d.Local(k, fsm.EventID(suspension.EventDrainSettled), drainSettled{})
}

// busyDraining reports whether native work of this connection is active:
// a Run, a read, the transfer, a workspace write or export, or a
// preparation not yet granted.
func (s *Session) busyDraining() bool {
	if s.Active() > 0 || s.readsInFlight > 0 || s.xfer != nil || s.write != nil || s.export != nil {
		return true
	}
	for _, a := range s.admissions {
		if !a.releasing && !a.transferred && a.expiresAt == 0 {
			return true
		}
	}
	return false
}

// SendEnvironmentQuiesced answers the quiesce: accepted once drained, or
// resource_busy when the drain missed its deadline.
func (h suspHooks) SendEnvironmentQuiesced(f *fsm.Firing[*peer.Event]) error {
	a := h.s.attemptOf(f)
	ok := f.Event == fsm.EventID(suspension.EventDrainSettled)
	r := wire.EnvironmentQuiesced{EnvironmentID: a.env, SuspendID: a.suspend, Accepted: &ok}
	if !ok {
		r.ErrorCode = "resource_busy"
	}
	send(f.Arg.Driver(), a.quiesceReq, r)
	return nil
}

// DoReopenAdmission releases the fence: after a refused drain, a rollback
// or the resume of this attempt (the table admits only a resume that names
// the quiesced Environment, resume_matches_quiesce).
func (h suspHooks) DoReopenAdmission(f *fsm.Firing[*peer.Event]) error {
	s := h.s
	a := s.attemptOf(f)
	if s.draining != nil && *s.draining == f.Arg.Key {
		s.draining = nil
	}
	s.fence.release(a.suspend)
	return nil
}

// SendEnvironmentResumed answers the resume (or rollback) it received.
func (h suspHooks) SendEnvironmentResumed(f *fsm.Firing[*peer.Event]) error {
	p, _ := f.Arg.Msg.Payload.(wire.EnvironmentResume)
	yes := true
	send(f.Arg.Driver(), f.Arg.Msg.ID, wire.EnvironmentResumed{EnvironmentID: p.EnvironmentID, SuspendID: p.SuspendID, Accepted: &yes})
	return nil
}

// refuseSuspension answers a quiesce or resume the suspension table
// refused, echoing its identity, accepted false. A resume for an attempt
// this Runtime does not hold (a stale or foreign suspend_id) is
// not_suspended and changes nothing: it never resumes another attempt.
func (s *Session) refuseSuspension(d *peer.Driver, r *peer.Refusal) {
	no := false
	var out wire.Payload
	switch p := r.Msg.Payload.(type) {
	case wire.EnvironmentQuiesce:
		out = wire.EnvironmentQuiesced{EnvironmentID: p.EnvironmentID, SuspendID: p.SuspendID, Accepted: &no,
			ErrorCode: reasonCodeOf(r.Err, "invalid_request", []string{"invalid_request", "resource_busy"})}
	case wire.EnvironmentResume:
		out = wire.EnvironmentResumed{EnvironmentID: p.EnvironmentID, SuspendID: p.SuspendID, Accepted: &no,
			ErrorCode: reasonCodeOf(r.Err, "not_suspended", []string{"invalid_request", "resource_busy", "not_suspended"})}
	default:
		return
	}
	d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: out}, nil)
}

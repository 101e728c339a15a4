// Package suspend is the suspension lifecycle on the Runtime's side of
// one connection (daemon-protocol.txt:78, 96): the Fence the daemon's
// connections share, the quiesces of this connection waiting for their
// Environment's active work to drain, the machine's Runtime hooks and the
// refusals. What the drain waits for (the connection's active work in an
// Environment) comes through Host.
package suspend

import (
	"sort"
	"sync"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/suspension"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// Host is what the suspension lifecycle needs of its connection.
type Host interface {
	// Bound reports whether this Runtime serves env.
	Bound(env string) bool
	// Busy reports whether native work of env on this connection is
	// active: a Run, a read, the transfer, a workspace write or export, or
	// a preparation not yet granted.
	Busy(env string) bool
}

// Quiesce is the suspension lifecycle of one connection; touched on the
// connection's loop only.
type Quiesce struct {
	host     Host
	fence    *Fence
	draining map[peer.Key]string // suspension instances waiting for their Environment's active work to settle, and that Environment
}

// New returns the suspension lifecycle of one connection over the
// daemon's fence.
func New(h Host, fence *Fence) *Quiesce {
	return &Quiesce{host: h, fence: fence, draining: map[peer.Key]string{}}
}

// Fence is the Runtime's suspension state. Unlike everything else a
// connection owns it outlives the connection: a suspension attempt is
// persisted fencing (daemon-protocol.txt:78), and its resume may come on a
// later connection. The daemon shares one Fence between its Sessions and
// restores the saved attempts into each new driver (Saved, Save).
//
// Releasing an admission or closing an Executor never touches the fence:
// neither suspends nor resumes anything (daemon-protocol.txt:7).
//
// decision: the fence is per Environment: a quiesce fences the
// Environment it names and nothing else, so work of another Environment,
// or of Environment none, is neither refused nor waited for
// (daemon-protocol.txt:96 fences the Environment; the Runtime serves one
// workspace per Environment binding). While an attempt holds an
// Environment's fence, a quiesce of the same Environment under another
// suspend_id is refused resource_busy (wire-reference §2.12 names that
// code for unsettled work).
type Fence struct {
	mu    sync.Mutex
	byEnv map[string]string     // Environment ID → the suspend_id holding its fence
	saved map[string]peer.Saved // suspension instances to restore, by suspend_id
}

// NewFence returns an open fence.
func NewFence() *Fence { return &Fence{byEnv: map[string]string{}, saved: map[string]peer.Saved{}} }

// Held reports whether env is fenced; Environment none ("") never is.
func (f *Fence) Held(env string) bool {
	if env == "" {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byEnv[env] != ""
}

// hold fences admission in env for the attempt; false when another
// attempt holds env, or the attempt already holds another Environment.
func (f *Fence) hold(env, suspend string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.byEnv[env]; ok && cur != suspend {
		return false
	}
	if other := f.envOfLocked(suspend); other != "" && other != env {
		return false
	}
	f.byEnv[env] = suspend
	return true
}

// owner is the Environment the attempt suspend fences, or "".
func (f *Fence) owner(suspend string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.envOfLocked(suspend)
}

func (f *Fence) envOfLocked(suspend string) string {
	for env, s := range f.byEnv {
		if s == suspend {
			return env
		}
	}
	return ""
}

// release reopens admission in the Environment suspend fences, if any.
func (f *Fence) release(suspend string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if env := f.envOfLocked(suspend); env != "" {
		delete(f.byEnv, env)
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
	case f.envOfLocked(s.ID) == "":
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

// Hooks returns the suspension machine's Runtime hooks over q.
func (q *Quiesce) Hooks() suspension.RuntimeHooks[*peer.Event] { return hooks{q} }

type hooks struct{ q *Quiesce }

// attemptOf returns the instance's attempt, creating it for an instance
// restored from an earlier connection.
func (q *Quiesce) attemptOf(f *fsm.Firing[*peer.Event]) *attempt {
	inst := f.Arg.Inst
	if a, ok := inst.Data.(*attempt); ok {
		return a
	}
	a := &attempt{suspend: inst.Key.ID, env: q.fence.owner(inst.Key.ID)}
	inst.Data = a
	return a
}

// GuardOwnSuspension holds for a reply of this Runtime that echoes the
// identity of the request it answers, with no error code when accepted.
func (h hooks) GuardOwnSuspension(f *fsm.Firing[*peer.Event]) bool {
	a := h.q.attemptOf(f)
	return guard.OwnSuspension(f.Arg.Payload(), a.suspend, a.env)
}

// GuardResumeMatchesQuiesce holds for a resume (or rollback) that names the
// Environment the quiesce of this suspend_id fenced; the table refuses any
// other invalid_request and leaves the attempt, and the fence, as they were.
func (h hooks) GuardResumeMatchesQuiesce(f *fsm.Firing[*peer.Event]) bool {
	return guard.ResumeMatchesQuiesce(f.Arg.Payload(), h.q.attemptOf(f).env)
}

// DoFenceAdmission stops admitting new work in the quiesced Environment
// and waits for its active work to settle: the drain ends with
// drain_settled, or with the table's 5 s quiesce_drain refusal.
//
// decision: quiescing cancels nothing: it waits for the Environment's
// active Runs, reads, preparations, writes, exports and transfer to settle
// (daemon-protocol.txt:151: the Runtime keeps ownership until native work
// settled). Ready admissions and idle Executors are not active work; they
// stay, but no start, prepare, prompt_request, write, export or transfer
// of the Environment is admitted until the resume. Work of other
// Environments neither delays the drain nor is refused.
//
// decision: a quiesce naming an Environment this Runtime is not configured
// with is answered accepted false, invalid_request, and fences nothing
// (daemon-protocol.txt:19: no binding is chosen by the request).
func (h hooks) DoFenceAdmission(f *fsm.Firing[*peer.Event]) error {
	q, d := h.q, f.Arg.Driver()
	p, _ := f.Arg.Msg.Payload.(wire.EnvironmentQuiesce)
	a := &attempt{env: p.EnvironmentID, suspend: p.SuspendID, quiesceReq: f.Arg.Msg.ID}
	f.Arg.Inst.Data = a
	no := false
	if !q.host.Bound(a.env) {
		send(d, a.quiesceReq, wire.EnvironmentQuiesced{EnvironmentID: a.env, SuspendID: a.suspend, Accepted: &no, ErrorCode: "invalid_request"})
		return nil
	}
	if !q.fence.hold(a.env, a.suspend) {
		send(d, a.quiesceReq, wire.EnvironmentQuiesced{EnvironmentID: a.env, SuspendID: a.suspend, Accepted: &no, ErrorCode: "resource_busy"})
		return nil
	}
	q.draining[f.Arg.Key] = a.env
	q.CheckDrain(d)
	return nil
}

// drainSettled marks the local drain_settled event this lifecycle fires.
type drainSettled struct{}

// CheckDrain fires drain_settled for each quiesce whose Environment has
// no active work left, in suspend_id order.
func (q *Quiesce) CheckDrain(d *peer.Driver) {
	if len(q.draining) == 0 {
		return
	}
	var due []peer.Key
	for k, env := range q.draining {
		if !q.host.Busy(env) {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].ID < due[j].ID })
	for _, k := range due {
		delete(q.draining, k)
		_ = d.Local(k, fsm.EventID(suspension.EventDrainSettled), drainSettled{})
	}
}

// SendEnvironmentQuiesced answers the quiesce: accepted once drained, or
// resource_busy when the drain missed its deadline.
func (h hooks) SendEnvironmentQuiesced(f *fsm.Firing[*peer.Event]) error {
	a := h.q.attemptOf(f)
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
func (h hooks) DoReopenAdmission(f *fsm.Firing[*peer.Event]) error {
	q := h.q
	a := q.attemptOf(f)
	delete(q.draining, f.Arg.Key)
	q.fence.release(a.suspend)
	return nil
}

// SendEnvironmentResumed answers the resume (or rollback) it received.
func (h hooks) SendEnvironmentResumed(f *fsm.Firing[*peer.Event]) error {
	p, _ := f.Arg.Msg.Payload.(wire.EnvironmentResume)
	yes := true
	send(f.Arg.Driver(), f.Arg.Msg.ID, wire.EnvironmentResumed{EnvironmentID: p.EnvironmentID, SuspendID: p.SuspendID, Accepted: &yes})
	return nil
}

// Refuse answers a quiesce or resume the suspension table
// refused, echoing its identity, accepted false. A resume for an attempt
// this Runtime does not hold (a stale or foreign suspend_id) is
// not_suspended and changes nothing: it never resumes another attempt.
func (q *Quiesce) Refuse(d *peer.Driver, r *peer.Refusal) {
	no := false
	var out wire.Payload
	switch p := r.Msg.Payload.(type) {
	case wire.EnvironmentQuiesce:
		code := peer.ReasonCode(r.Err, "invalid_request", []string{"invalid_request", "resource_busy"})
		if !q.host.Bound(p.EnvironmentID) {
			code = "invalid_request"
		}
		out = wire.EnvironmentQuiesced{EnvironmentID: p.EnvironmentID, SuspendID: p.SuspendID, Accepted: &no, ErrorCode: code}
	case wire.EnvironmentResume:
		code := peer.ReasonCode(r.Err, "not_suspended", []string{"invalid_request", "resource_busy", "not_suspended"})
		if !q.host.Bound(p.EnvironmentID) {
			// decision: a resume naming an Environment this Runtime is not
			// configured with is invalid_request, not not_suspended: no
			// attempt of this Runtime can fence it (daemon-protocol.txt:19).
			code = "invalid_request"
		}
		out = wire.EnvironmentResumed{EnvironmentID: p.EnvironmentID, SuspendID: p.SuspendID, Accepted: &no, ErrorCode: code}
	default:
		return
	}
	d.Send(peer.Outbound{ID: r.Msg.ID, Refusal: true, Payload: out}, nil)
}

// send queues a frame from a hook; failures are the machine's (failed-send
// events) and are logged by the driver.
func send(d *peer.Driver, id string, p wire.Payload) {
	d.Send(peer.Outbound{ID: id, Payload: p}, nil)
}

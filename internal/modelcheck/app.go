package modelcheck

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// record is what one side keeps next to one instance: the material its
// guards read (the same readings peer/scenario's Recorder makes, so that a
// counterexample replays there with the same guard outcomes), plus what the
// invariants need (resources held, native work started, a retry queued).
type record struct {
	applied   uint64   // highest preparation_status revision applied
	fp        [32]byte // fingerprint of the first execution_prepare
	prepared  bool
	readOnly  bool
	cancel    string      // delivery ID of the prompt_cancel this peer saw
	runID     string      // preparation: the Run its execution_start named
	held      uint32      // resources held, by index in the machine's declaration
	nativeRun bool        // runtime: start_native was performed
	retry     bool        // core: keep_for_retry queued the input again
	owes      bool        // a step asked this peer to send a frame it has not sent yet
	owed      string      // the wire type of that frame
	owedFrom  fsm.StateID // the state the step that asked for it left
	// interaction: the request's kind and Run, the first answer's content,
	// the latest delivery ID and how many answers were sent
	kind     string
	decision string
	delivery string
	attempts int
	quiesced string // suspension: the environment_id of the quiesce
}

func (r *record) clone() *record { c := *r; return &c }

// guardHolds answers the named guards of every machine in the composition
// from the frame and the record, with the predicates the peers' hooks run
// (package peer/guard) wherever a guard reads the frame. A guard no frame
// can settle is false, like the Recorder's.
func guardHolds(name string, ev *peer.Event, r *record) bool {
	var p wire.Payload
	if ev.Msg != nil {
		p = ev.Msg.Payload
	}
	switch name {
	case "newer_revision":
		return guard.NewerRevision(p, r.applied)
	case "same_fingerprint":
		return guard.SameFingerprint(p, r.fp)
	case "rejects_prepare":
		return guard.RejectsPrepare(p)
	case "rejects_start":
		return guard.RejectsStart(p)
	case "capacity_refusal":
		return guard.CapacityRefusal(p)
	case "read_only_profile":
		return r.readOnly
	case "valid_declaration":
		return guard.ValidDeclaration(p)
	case "matches_cancel_delivery":
		return guard.MatchesCancelDelivery(p, func(d string) bool { return d == r.cancel })
	case "unsettled_cancel":
		return guard.UnsettledCancel(p, func(d string) bool { return d == r.cancel })
	case "owner_readable":
		// The composition has one owner and no earlier read fencing it.
		_, ok := p.(wire.WorkspaceRead)
		return ok
	case "close_acknowledged":
		return guard.CloseAcknowledged(p)
	case "chunk_in_bounds", "offset_matches", "digest_matches":
		// One well-formed body: the Runtime's refusals are its rejected
		// results, which it may always send.
		return true
	case "matches_request_kind":
		_, ok := p.(wire.PermissionDecision)
		return ok && r.kind == "permission"
	case "identical_decision":
		d, ok := p.(wire.PermissionDecision)
		return ok && r.decision != "" && r.decision == approval(d)
	case "current_delivery":
		return guard.CurrentDelivery(p, r.delivery)
	case "retry_later":
		return guard.RetryLater(p, r.delivery)
	case "permission_kind":
		return r.kind == "permission"
	case "retryable_code":
		return guard.RetryableCode(p)
	case "unknown_code":
		return guard.UnknownCode(p)
	case "own_suspension":
		return guard.OwnSuspension(p, ev.Key.ID, r.quiesced)
	case "resume_matches_quiesce":
		return guard.ResumeMatchesQuiesce(p, r.quiesced)
	}
	return false
}

func fingerprint(p wire.Payload) [32]byte { return guard.Fingerprint(p) }

// observe keeps the records the guards read after an applied step.
func observe(ev *peer.Event, s fsm.Step, r *record) {
	if ev.Msg == nil || s.Disposition() == fsm.Rejected {
		return
	}
	switch p := ev.Msg.Payload.(type) {
	case wire.PreparationStatus:
		if ev.Key.Machine == "preparation" && p.Revision > r.applied {
			r.applied = p.Revision
		}
	case wire.ExecutionPrepare:
		if !r.prepared {
			r.prepared, r.fp, r.readOnly = true, fingerprint(p), p.Configuration.WorkspaceReadOnly
		}
	case wire.ExecutionStart:
		if ev.Key.Machine == "preparation" {
			r.runID = p.RunID
		}
	case wire.PromptCancel:
		r.cancel = p.DeliveryID
	case wire.PermissionRequest:
		r.kind, r.runID = "permission", ev.Msg.ID
	case wire.PermissionDecision:
		if r.decision == "" {
			r.decision = approval(p)
		}
		r.delivery = p.DeliveryID
		r.attempts++
	case wire.EnvironmentQuiesce:
		if r.quiesced == "" {
			r.quiesced = p.EnvironmentID
		}
	}
}

func approval(d wire.PermissionDecision) string {
	b, _ := json.Marshal(d.Approved)
	return string(b)
}

// app is one side's peer.App inside one explored world. It performs no
// native work: what native work would decide is a choice the explorer
// makes (a local event, a frame the Runtime sends), so each outcome is a
// branch of the search.
type app struct {
	w *world
	s *side
}

func (a *app) Binding(string) fsm.Binding[*peer.Event] { return (*binding)(a) }

func (a *app) Refused(r *peer.Refusal) {
	a.w.log(a.s.role, refusalLine(r))
	if a.s.role != fsm.RoleRuntime || r.Msg == nil || r.Msg.Payload == nil {
		return
	}
	// The Runtime answers where the family defines a reply, as
	// runtime/execution does; the reply steps no lifecycle of its own.
	reply := func(typ, payload string) {
		for _, p := range a.s.replies {
			if p.Type == typ && p.ID == r.Msg.ID && p.Payload == payload {
				return // the same answer is already owed; one is enough to model
			}
		}
		a.s.replies = append(a.s.replies, Action{Kind: ActSend, Role: fsm.RoleRuntime, Type: typ, ID: r.Msg.ID, Payload: payload, Refusal: true})
	}
	rejected := func(op, code string) {
		reply("preparation_status", `{"revision":0,"state":"rejected","operation":"`+op+`","error_code":"`+code+`"}`)
	}
	switch p := r.Msg.Payload.(type) {
	case wire.ExecutionPrepare:
		rejected("execution_prepare", "request_conflict")
	case wire.ExecutionStart:
		rejected("execution_start", "invalid_start")
	case wire.ExecutionRelease:
		rejected("execution_release", "invalid_release")
	case wire.PromptSteer:
		reply("prompt_steer_ack", `{"input_id":"`+p.InputID+`","accepted":false,"error_code":"busy","error":"x"}`)
	case wire.PromptCancel:
		reply("interaction_decision_ack", `{"delivery_id":"`+p.DeliveryID+`","applied":false,"error_code":"run_inactive","error":"x"}`)
	case wire.EnvironmentQuiesce:
		reply("environment_quiesced", `{"environment_id":"`+p.EnvironmentID+`","suspend_id":"`+p.SuspendID+`","accepted":false,"error_code":"invalid_request"}`)
	case wire.EnvironmentResume:
		// runtime/execution answers a resume it holds no attempt for
		// not_suspended, and changes nothing.
		reply("environment_resumed", `{"environment_id":"`+p.EnvironmentID+`","suspend_id":"`+p.SuspendID+`","accepted":false,"error_code":"not_suspended"}`)
	}
}

func refusalLine(r *peer.Refusal) string {
	if r.Key.Machine != "" {
		return fmt.Sprintf("refused by %s: %v", r.Key, r.Err)
	}
	return fmt.Sprintf("refused (%s): %v", r.Kind, r.Err)
}

func (a *app) Stepped(ev *peer.Event, s fsm.Step) {
	a.w.logStep(a.s.role, ev, s)
	observe(ev, s, a.s.rec(ev.Key))
	if ev.Sent {
		r := a.s.rec(ev.Key)
		t := ev.Inst.Table()
		// A debt is paid by the frame that reports the state the debtor is
		// in (expired after the expiry timer moved it there).
		pays := r.owes && strings.HasSuffix(t.EventName(s.Event()), "_"+t.StateName(s.From()))
		if t.Name == "suspension" && r.owes && s.Disposition() == fsm.Ignored && ev.Msg != nil && ev.Msg.Type == r.owed {
			// The Runtime's answer to its own drain (drain_settled, the 5 s
			// quiesce_drain): the step moved its copy first, so the frame
			// it owes is one its copy then ignores (runtime/execution sends
			// it from the step's effect). It pays only with the answer that
			// leads where the step went (accepted into suspended, refused
			// into quiesce_refused).
			for _, c := range t.Cells[t.CellIndex(r.owedFrom, s.Event())].Cands {
				if c.Disp == fsm.Moved && c.To == s.From() {
					pays = true
				}
			}
		}
		if pays || s.Disposition() == fsm.Moved || s.Disposition() == fsm.Stayed {
			a.w.effective = true
		}
		if s.Disposition() != fsm.Rejected {
			r.owes = false
		}
	}
	a.w.checkStep(a.s, ev, s)
	a.w.turnStepped(a.s, ev, s)
	if ev.Key.Machine == "run" && s.Disposition() == fsm.Moved && ev.Inst.Table().State(s.To()).Outcome != fsm.OutcomeNone {
		if a.s.role == fsm.RoleCore {
			a.runSettled(ev)
		}
		a.w.closeInteractions(a.s, ev.Driver(), ev.Key.ID)
	}
	if ev.Key.Machine == "interaction" && s.Disposition() == fsm.Moved && s.From() == ev.Inst.Table().Initial {
		// A request for a Run this peer already saw settle: the Run's
		// end came first, so run_closed is owed at once.
		run := a.s.rec(ev.Key).runID
		if ri, ok := ev.Driver().Lookup(peer.Key{Machine: "run", ID: run}); !ok || ri.Terminal() {
			a.w.closeInteractions(a.s, ev.Driver(), run)
		}
	}
}

// runSettled is Core's duty the input table states for run_settled: once
// it observes a Run's terminal outcome, it tells every input of that Run
// still in flight (the driver runs the events after the current step).
func (a *app) runSettled(ev *peer.Event) {
	t, ok := a.w.m.byName["input"]
	if !ok {
		return
	}
	e, err := t.ParseEvent("run_settled")
	if err != nil {
		return
	}
	d := ev.Driver()
	prefix := peer.CompositeID(ev.Key.ID, "")
	for _, i := range d.Instances() {
		if i.Key.Machine == "input" && strings.HasPrefix(i.Key.ID, prefix) && !i.Terminal() {
			_ = d.Local(i.Key, e, nil)
		}
	}
}

type binding app

func (b *binding) Guard(g fsm.GuardID, f *fsm.Firing[*peer.Event]) bool {
	name := f.Table.GuardName(g)
	if name == "owner_free" {
		// Core's durable reservation: no write of the Session, on this
		// connection or an earlier one, still holds the owner. The Runtime
		// cannot know it and takes Core's word.
		return b.s.role == fsm.RoleRuntime || !b.w.holds(fsm.RoleCore, f.Table.Name, "mutation_owner", f.Arg.Key)
	}
	return guardHolds(name, f.Arg, b.s.rec(f.Arg.Key))
}

func (b *binding) Perform(ef *fsm.Effect, f *fsm.Firing[*peer.Event]) error {
	if ef.Kind == fsm.EffectSend {
		// Sends are the explorer's choices (the Runtime may answer or not);
		// the record notes the debt, which keeps the instance from counting
		// as quiescent until a frame of it goes out.
		r := b.s.rec(f.Arg.Key)
		r.owes, r.owed, r.owedFrom = true, f.Table.MessageName(ef.Message), f.From
		return nil
	}
	if ef.Kind != fsm.EffectDo {
		return nil
	}
	w, s := b.w, b.s
	action := f.Table.ActionName(ef.Action)
	r := s.rec(f.Arg.Key)
	if ra, ok := w.m.resources[f.Table.Name][action]; ok {
		if ra.acquire {
			w.checkExclusive(s, f.Table.Name, ra.index, f.Arg.Key)
			r.held |= 1 << ra.index
		} else {
			r.held &^= 1 << ra.index
		}
	}
	switch action {
	case "start_native":
		r.nativeRun = true
	case "keep_for_retry":
		r.retry = true
		if s.role == fsm.RoleCore {
			if f.Arg.Msg != nil && !f.Arg.Sent {
				// A receipt proved the input never reached the native side
				// (not_ready, busy): it is queued again, not in flight, so
				// sending it later is a delivery, not a replay.
				delete(w.dispatched, f.Arg.Key)
				w.retry[f.Arg.Key] = true
			} else {
				// Queued again without proof: a later send is a replay
				// unless it stays on this connection.
				w.dispatched[f.Arg.Key] = -w.conn
			}
		}
	}
	w.checkEffect(s, f, action)
	w.turnPerformed(s, f, action)
	return nil
}

// replayApp is app for the scenario runner: the same guards, with the
// records kept on the instances, so that a counterexample written as a
// scenario file replays with the guard outcomes the checker saw.
type replayApp struct{}

// ReplayApp returns the app a counterexample scenario is replayed with
// (transcript.Options.NewApp).
func ReplayApp(fsm.Role) peer.App { return replayApp{} }

func replayRec(i *peer.Instance) *record {
	if r, ok := i.Data.(*record); ok {
		return r
	}
	r := &record{}
	i.Data = r
	return r
}

func (replayApp) Binding(string) fsm.Binding[*peer.Event] { return replayBinding{} }
func (replayApp) Refused(*peer.Refusal)                   {}
func (replayApp) Stepped(ev *peer.Event, s fsm.Step)      { observe(ev, s, replayRec(ev.Inst)) }

type replayBinding struct{}

func (replayBinding) Guard(g fsm.GuardID, f *fsm.Firing[*peer.Event]) bool {
	return guardHolds(f.Table.GuardName(g), f.Arg, replayRec(f.Arg.Inst))
}

func (replayBinding) Perform(*fsm.Effect, *fsm.Firing[*peer.Event]) error { return nil }

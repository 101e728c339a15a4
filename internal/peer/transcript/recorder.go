package transcript

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Recorder is the app the driver scenarios run: it performs no native work
// and sends nothing of its own (every frame is in the scenario), and it
// evaluates the guards of the admission and Run machines from the frames the
// instance accepted: the highest revision applied, the fingerprint of the
// first execution_prepare, the delivery ID of prompt_cancel, the
// Environment a suspension's quiesce named.
type Recorder struct{}

type record struct {
	applied     uint64
	fingerprint [32]byte
	prepared    bool
	readOnly    bool
	cancel      string
	quiesced    string // suspension: the environment_id of the quiesce
}

func rec(i *peer.Instance) *record {
	if i.Data == nil {
		i.Data = &record{}
	}
	r, ok := i.Data.(*record)
	if !ok {
		r = &record{}
		i.Data = r
	}
	return r
}

func fingerprint(p wire.Payload) [32]byte {
	b, _ := json.Marshal(p)
	return sha256.Sum256(b)
}

// Binding evaluates guards from the records; effects are only logged (by
// the tee around it).
func (Recorder) Binding(string) fsm.Binding[*peer.Event] { return recorderBinding{} }

// Refused needs no reply in the driver scenarios.
func (Recorder) Refused(*peer.Refusal) {}

// Stepped keeps the records the guards read.
func (Recorder) Stepped(ev *peer.Event, s fsm.Step) {
	if ev.Msg == nil || s.Disposition() == fsm.Rejected {
		return
	}
	r := rec(ev.Inst)
	switch p := ev.Msg.Payload.(type) {
	case wire.PreparationStatus:
		if ev.Key.Machine == "preparation" && p.Revision > r.applied {
			r.applied = p.Revision
		}
	case wire.ExecutionPrepare:
		if !r.prepared {
			r.prepared, r.fingerprint, r.readOnly = true, fingerprint(p), p.Configuration.WorkspaceReadOnly
		}
	case wire.PromptCancel:
		r.cancel = p.DeliveryID
	case wire.EnvironmentQuiesce:
		if r.quiesced == "" {
			r.quiesced = p.EnvironmentID
		}
	}
}

type recorderBinding struct{}

func (recorderBinding) Guard(g fsm.GuardID, f *fsm.Firing[*peer.Event]) bool {
	ev := f.Arg
	r := rec(ev.Inst)
	switch f.Table.GuardName(g) {
	case "newer_revision":
		st, ok := ev.Msg.Payload.(wire.PreparationStatus)
		return ok && st.Revision > r.applied
	case "same_fingerprint":
		p, ok := ev.Msg.Payload.(wire.ExecutionPrepare)
		return ok && fingerprint(p) == r.fingerprint
	case "rejects_prepare":
		st, ok := ev.Msg.Payload.(wire.PreparationStatus)
		return ok && st.Operation == "execution_prepare"
	case "rejects_start":
		st, ok := ev.Msg.Payload.(wire.PreparationStatus)
		return ok && st.Operation == "execution_start"
	case "capacity_refusal":
		st, ok := ev.Msg.Payload.(wire.PreparationStatus)
		return ok && st.Operation == "execution_prepare" && st.ErrorCode == "preparation_capacity"
	case "read_only_profile":
		return r.readOnly
	case "valid_declaration":
		hb, ok := ev.Msg.Payload.(wire.Heartbeat)
		return ok && hb.Validate() == nil
	case "matches_cancel_delivery":
		ack, ok := ev.Msg.Payload.(wire.InteractionDecisionAck)
		return ok && ack.DeliveryID != "" && ack.DeliveryID == r.cancel
	case "own_suspension":
		env, id, accepted, code, ok := wire.SuspensionAnswer(ev.Msg.Payload)
		return ok && r.quiesced != "" && env == r.quiesced && id == ev.Key.ID && !(accepted && code != "")
	case "resume_matches_quiesce":
		p, ok := ev.Msg.Payload.(wire.EnvironmentResume)
		return ok && r.quiesced != "" && p.EnvironmentID == r.quiesced
	}
	return false
}

func (recorderBinding) Perform(*fsm.Effect, *fsm.Firing[*peer.Event]) error { return nil }

// teeApp logs every step, effect and refusal of one side and passes
// everything on to the side's app.
type teeApp struct {
	inner peer.App
	rec   *log
	mu    sync.Mutex
}

func (a *teeApp) Binding(machine string) fsm.Binding[*peer.Event] {
	return teeBinding{inner: a.inner.Binding(machine), rec: a.rec}
}

func (a *teeApp) Refused(r *peer.Refusal) {
	if r.Key.Machine != "" {
		a.rec.add("refused by %s: %v", r.Key, r.Err)
	} else {
		a.rec.add("refused (%s): %v", r.Kind, r.Err)
	}
	a.inner.Refused(r)
}

func (a *teeApp) Stepped(ev *peer.Event, s fsm.Step) {
	t := ev.Inst.Table()
	if s.Disposition() == fsm.Rejected {
		a.rec.add("%s %s: rejected in %s: %s", ev.Key, t.EventName(s.Event()), t.StateName(s.From()), s.Reason())
	} else {
		a.rec.add("%s %s: %s -> %s (%s)", ev.Key, t.EventName(s.Event()), t.StateName(s.From()), t.StateName(s.To()), s.Disposition())
	}
	for n := range s.Effects() {
		ef := &s.Effects()[n]
		if a.rec.role.Performs(ef.Role) {
			a.rec.add("  %s", t.EffectString(ef))
		}
	}
	if o, ok := a.inner.(peer.Observer); ok {
		o.Stepped(ev, s)
	}
}

type teeBinding struct {
	inner fsm.Binding[*peer.Event]
	rec   *log
}

func (b teeBinding) Guard(g fsm.GuardID, f *fsm.Firing[*peer.Event]) bool {
	return b.inner.Guard(g, f)
}

func (b teeBinding) Perform(ef *fsm.Effect, f *fsm.Firing[*peer.Event]) error {
	return b.inner.Perform(ef, f)
}

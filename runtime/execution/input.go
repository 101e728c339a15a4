package execution

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/peer/guard"
	"github.com/agentwire/agentwire/runtime/execution/internal/interaction"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// NativeWriteBound bounds an adapter's native write of one active input
// (daemon-protocol.txt:127); the input machine's native_write timer says
// the same and answers outcome_unknown when it fires first.
const NativeWriteBound = interaction.NativeWriteBound

// inputVerdict is the argument of input_refused and native_accepted.
type inputVerdict struct {
	code, msg string
}

type inputHooks struct{ s *Session }

func inputKey(runID, inputID string) peer.Key {
	return peer.Key{Machine: input.Table.Name, ID: peer.CompositeID(runID, inputID)}
}

func runOfInput(f *fsm.Firing[*peer.Event]) (runID, inputID string) {
	if m := f.Arg.Msg; m != nil {
		if p, ok := m.Payload.(wire.PromptSteer); ok {
			return m.ID, p.InputID
		}
		if p, ok := m.Payload.(wire.PromptSteerAck); ok {
			return m.ID, p.InputID
		}
	}
	id := f.Arg.Key.ID
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return id[:i], id[i+1:]
		}
	}
	return id, ""
}

// GuardInputSlotFree: one input in flight per Run (daemon-protocol.txt:124);
// a second one is refused and answered busy (Session.Refused).
func (h inputHooks) GuardInputSlotFree(f *fsm.Firing[*peer.Event]) bool {
	runID, inputID := runOfInput(f)
	r := h.s.runs[runID]
	if r == nil {
		return true // DoWriteNative answers run_inactive
	}
	for id := range r.inputs {
		if id != inputID {
			return false
		}
	}
	return true
}

func (h inputHooks) GuardRetryableCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.RetryableCode(f.Arg.Payload())
}

func (h inputHooks) GuardUnknownCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.UnknownCode(f.Arg.Payload())
}

// DoWriteNative hands the input to the adapter outside the loop. A Run
// that is not running here, an adapter without active input or a Turn
// admitted without steering refuses it before any native call
// (daemon-protocol.txt:27).
func (h inputHooks) DoWriteNative(f *fsm.Firing[*peer.Event]) error {
	s, d := h.s, f.Arg.Driver()
	runID, inputID := runOfInput(f)
	key := inputKey(runID, inputID)
	p, _ := f.Arg.Msg.Payload.(wire.PromptSteer)
	refuse := func(code, msg string) {
		_ = d.Local(key, fsm.EventID(input.EventInputRefused), inputVerdict{code, msg})
	}
	r := s.runs[runID]
	if r == nil || r.settled || r.exe == nil {
		refuse("run_inactive", "the Run is not active on this connection")
		return nil
	}
	steerer, ok := r.exe.(harness.Steerer)
	if !ok {
		refuse("unsupported", "the Harness does not take active input")
		return nil
	}
	if err := harness.CheckSteer(r.turn.Declaration.Capabilities, p.Input); err != nil {
		refuse("unsupported", boundedError(err))
		return nil
	}
	r.inputs[inputID] = true
	r.writing[inputID] = true
	s.goNative(func() {
		ctx, cancel := context.WithTimeout(s.ctx, NativeWriteBound)
		err := steerer.Steer(ctx, runID, inputID, p.Input)
		cancel()
		s.post(func(d *peer.Driver) {
			delete(r.writing, inputID)
			switch {
			case err == nil:
				_ = d.Local(key, fsm.EventID(input.EventNativeWriteDone), nil)
				if n, ok := r.early[inputID]; ok {
					delete(r.early, inputID)
					s.applyNotice(d, key, n)
				}
			case errors.Is(err, harness.ErrRunInactive):
				_ = d.Local(key, fsm.EventID(input.EventInputRefused), inputVerdict{"run_inactive", "the Run is not active"})
			case errors.Is(harness.Classify(true, err), harness.ErrContractViolation):
				_ = d.Local(key, fsm.EventID(input.EventInputRefused), inputVerdict{"contract_violation", boundedError(err)})
			default:
				// decision: a write that failed part-way may have delivered
				// the input, so its outcome is unknown, never resent
				// (daemon-protocol.txt:133).
				_ = d.Local(key, fsm.EventID(input.EventInputRefused), inputVerdict{"outcome_unknown", boundedError(err)})
			}
		})
	})
	return nil
}

// SendPromptSteerAck builds the receipt the step asks for from the event
// that caused it.
func (h inputHooks) SendPromptSteerAck(f *fsm.Firing[*peer.Event]) error {
	runID, inputID := runOfInput(f)
	no, yes := false, true
	ack := wire.PromptSteerAck{InputID: inputID, Accepted: &no}
	switch input.Event(f.Event) {
	case input.EventNativeWriteDone:
		ack.Written = true
	case input.EventNativeAccepted:
		ack.Accepted = &yes
	case input.EventNativeWrite:
		ack.ErrorCode, ack.Error = "outcome_unknown", "the native write did not complete within its bound"
	case input.EventInputRefused:
		v, _ := f.Arg.Local.(inputVerdict)
		ack.ErrorCode, ack.Error = v.code, v.msg
		if ack.ErrorCode == "" {
			ack.ErrorCode = "rejected"
		}
	default:
		return nil
	}
	send(f.Arg.Driver(), runID, ack)
	return nil
}

// DoPublishDone: the drain budget ended; Session.inputStepped sees the
// input settle and publishes the held done.
func (h inputHooks) DoPublishDone(*fsm.Firing[*peer.Event]) error { return nil }

// notify turns an adapter's InputNotice into the machine's local event.
func (s *Session) notify(runID string) harness.Notify {
	return func(n harness.InputNotice) {
		s.post(func(d *peer.Driver) {
			key := inputKey(runID, n.InputID)
			_, ok := d.Lookup(key)
			if !ok {
				return
			}
			if r := s.runs[runID]; r != nil && r.writing[n.InputID] {
				// decision: the agent may answer before the adapter's write
				// call has returned to us; its verdict waits for the write's
				// completion, so written always precedes accepted on the
				// wire (daemon-protocol.txt:143-144). This holds in every
				// state, draining included: a Turn that settled before its
				// write returned must not report accepted before written.
				r.early[n.InputID] = n
				return
			}
			s.applyNotice(d, key, n)
		})
	}
}

func (s *Session) applyNotice(d *peer.Driver, key peer.Key, n harness.InputNotice) {
	if n.Accepted {
		_ = d.Local(key, fsm.EventID(input.EventNativeAccepted), nil)
		return
	}
	_ = d.Local(key, fsm.EventID(input.EventInputRefused), inputVerdict{n.Code, n.Error})
}

// inputStepped keeps the Run's set of inputs in flight and publishes a
// held done once the last one settles.
func (s *Session) inputStepped(ev *peer.Event, st fsm.Step) {
	runID, inputID := splitComposite(ev.Key.ID)
	r := s.runs[runID]
	if r == nil {
		return
	}
	// In flight is what the table says: sent and not settled, i.e. out of
	// its initial state (queued at Core) and not in a terminal one.
	t := ev.Inst.Table()
	if to := st.To(); to == t.Initial || t.State(to).Outcome != fsm.OutcomeNone {
		delete(r.inputs, inputID)
	} else {
		r.inputs[inputID] = true
	}
	if r.holding && len(r.inputs) == 0 {
		s.publishDone(ev.Driver(), r)
	}
}

// inputBusy reports whether a refused prompt_steer for inputID was refused
// only because another input of the Run is in flight: its own input has not
// been sent before (no instance, or one still pending) while the Run holds
// a different one (daemon-protocol.txt:124). The route refusal of a fresh
// input ID counts too: the driver drops the pristine instance the guard
// refused.
func (s *Session) inputBusy(d *peer.Driver, runID, inputID string) bool {
	if inst, ok := d.Lookup(inputKey(runID, inputID)); ok && inst.State() != fsm.StateID(input.StatePending) {
		return false
	}
	r := s.runs[runID]
	if r == nil {
		return false
	}
	for id := range r.inputs {
		if id != inputID {
			return true
		}
	}
	return false
}

func splitComposite(id string) (string, string) {
	runID, member, _ := peer.SplitCompositeID(id)
	return runID, member
}

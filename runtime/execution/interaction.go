package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/peer/guard"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// asked is one question a Run put to Core (a permission request, a user
// choice or a function call) and the answer it got.
type asked struct {
	runID    string
	id       string // request ID, ask ID or call ID
	answer   string // the message type that answers it
	delivery string // the delivery ID of the latest answer
	content  []byte // the latest answer without its delivery ID
}

type interactionHooks struct{ s *Session }

func (h interactionHooks) lookup(f *fsm.Firing[*peer.Event]) *asked {
	return h.s.asked[f.Arg.Key.ID]
}

// answerOf returns the answer payload of a frame with its content (the
// delivery ID left out) for replay comparison.
func answerOf(m *wire.Message) (delivery string, content []byte, a harness.Answer, ok bool) {
	if m == nil {
		return "", nil, a, false
	}
	var v any
	switch p := m.Payload.(type) {
	case wire.PermissionDecision:
		delivery, a.Permission = p.DeliveryID, &p
		p.DeliveryID = ""
		v = p
	case wire.PromptForUserChoiceDecision:
		delivery, a.Choice = p.DeliveryID, &p
		p.DeliveryID = ""
		v = p
	case wire.FunctionResult:
		delivery, a.Result = p.DeliveryID, &p
		a.InteractionID = p.CallID
		p.DeliveryID = ""
		v = p
	default:
		return "", nil, a, false
	}
	content, err := json.Marshal(v)
	return delivery, content, a, err == nil
}

func (h interactionHooks) GuardMatchesRequestKind(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && f.Arg.Msg != nil && f.Arg.Msg.Type == q.answer
}

// GuardIdenticalDecision: a replay must repeat the applied answer exactly
// (daemon-protocol.txt:161).
func (h interactionHooks) GuardIdenticalDecision(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	_, content, _, ok := answerOf(f.Arg.Msg)
	return q != nil && ok && f.Arg.Msg.Type == q.answer && bytes.Equal(content, q.content)
}

func (h interactionHooks) GuardCurrentDelivery(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && guard.CurrentDelivery(f.Arg.Payload(), q.delivery)
}

func (h interactionHooks) GuardRetryLater(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && guard.RetryLater(f.Arg.Payload(), q.delivery)
}

func (h interactionHooks) GuardPermissionKind(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && q.answer == wire.TypePermissionDecision
}

// ackID is the receipt's envelope ID: a decision's receipt carries the
// interaction ID, a function result's the Run ID (daemon-protocol.txt:80).
func ackID(m *wire.Message, q *asked) string {
	if m.Type == wire.TypeFunctionResult {
		return q.runID
	}
	return m.ID
}

// DoApplyDecision submits the answer natively outside the loop; the
// receipt follows the native outcome, never the request
// (daemon-protocol.txt:145).
func (h interactionHooks) DoApplyDecision(f *fsm.Firing[*peer.Event]) error {
	s, msg := h.s, f.Arg.Msg
	q := h.lookup(f)
	delivery, content, answer, ok := answerOf(msg)
	if q == nil || !ok {
		return nil
	}
	q.delivery, q.content = delivery, content
	answer.InteractionID = q.id
	id := ackID(msg, q)
	refuse := func(d *peer.Driver, code, text string) {
		no := false
		send(d, id, wire.InteractionDecisionAck{DeliveryID: delivery, Applied: &no, ErrorCode: code, Error: text})
	}
	r := s.runs[q.runID]
	if r == nil || r.exe == nil || r.settled {
		refuse(f.Arg.Driver(), "not_pending", "the Run no longer waits for this answer")
		return nil
	}
	caps := r.turn.Declaration.Capabilities
	declared := caps.Permissions == wire.Supported
	if answer.Result != nil {
		declared = caps.FunctionTools == wire.Supported
	}
	decider, ok := r.exe.(harness.Decider)
	if !declared || !ok {
		refuse(f.Arg.Driver(), "unsupported", "the Harness does not take this answer")
		return nil
	}
	if err := harness.CheckAnswer(caps, answer); err != nil {
		// An image in a function result without function_result_images.
		refuse(f.Arg.Driver(), "unsupported", boundedError(err))
		return nil
	}
	r.em.hold()
	s.goNative(func() {
		defer r.em.release()
		ctx, cancel := context.WithTimeout(s.ctx, NativeWriteBound)
		err := decider.Decide(ctx, q.runID, answer)
		cancel()
		s.post(func(d *peer.Driver) {
			switch {
			case err == nil:
				yes := true
				send(d, id, wire.InteractionDecisionAck{DeliveryID: delivery, Applied: &yes})
			case errors.Is(err, harness.ErrRunInactive):
				refuse(d, "not_pending", "the Run no longer waits for this answer")
			case errors.Is(harness.Classify(declared, err), harness.ErrContractViolation):
				refuse(d, "contract_violation", boundedError(err))
			default:
				refuse(d, "runtime_error", boundedError(err))
			}
		})
	})
	return nil
}

// SendInteractionDecisionAck answers an identical replay of an applied
// answer with its own delivery ID.
func (h interactionHooks) SendInteractionDecisionAck(f *fsm.Firing[*peer.Event]) error {
	q := h.lookup(f)
	delivery, _, _, ok := answerOf(f.Arg.Msg)
	if q == nil || !ok {
		return nil
	}
	q.delivery = delivery
	yes := true
	send(f.Arg.Driver(), ackID(f.Arg.Msg, q), wire.InteractionDecisionAck{DeliveryID: delivery, Applied: &yes})
	return nil
}

// interactionStepped records the questions a Run sends.
func (s *Session) interactionStepped(ev *peer.Event) {
	if ev.Msg == nil || !ev.Sent {
		return
	}
	q := &asked{runID: ev.Msg.ID}
	switch p := ev.Msg.Payload.(type) {
	case wire.PermissionRequest:
		q.id, q.answer = p.RequestID, wire.TypePermissionDecision
	case wire.PromptForUserChoice:
		q.id, q.answer = p.AskID, wire.TypePromptForUserChoiceDecision
	case wire.FunctionCall:
		q.id, q.answer = p.CallID, wire.TypeFunctionResult
	default:
		return
	}
	if _, dup := s.asked[ev.Key.ID]; dup {
		return
	}
	s.asked[ev.Key.ID] = q
	if r := s.runs[q.runID]; r != nil {
		r.asked[ev.Key.ID] = q
	}
}

// closeInteractions ends the Run's questions with it (run_closed).
func (s *Session) closeInteractions(d *peer.Driver, r *runState) {
	for key := range r.asked {
		_ = d.Local(peer.Key{Machine: interaction.Table.Name, ID: key}, fsm.EventID(interaction.EventRunClosed), nil)
		delete(s.asked, key)
	}
}

// Package interaction is the interaction lifecycle on the Runtime's side
// of one connection (daemon-protocol.txt:76–80, 145, 161): the questions
// the connection's Runs put to Core (permission requests, user choices,
// function calls), the answers Core sends back, applied natively off the
// loop and receipted by the native outcome, and identical replays of an
// applied answer. Which Run an answer goes to, and whether it still waits
// for one, come through Host.
package interaction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentwire/agentwire/internal/runtime/execution/internal/conn"

	"github.com/agentwire/agentwire/fsm"
	interactionfsm "github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/internal/runtime/bounded"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// NativeWriteBound bounds an adapter's native write of one answer or
// active input (daemon-protocol.txt:127).
const NativeWriteBound = 10 * time.Second

// Target is the Run an answer is applied to.
type Target struct {
	// Decider is the Run's Executor as it takes answers; nil when its
	// Harness takes none.
	Decider harness.Decider
	// Caps are what the Run's Harness declared when it was admitted.
	Caps wire.AgentKindCapabilities
	// Hold keeps the Run's later frames behind the answer's receipt until
	// the returned func runs.
	Hold func() (release func())
}

// Host is what the interaction lifecycle needs of its connection.
type Host interface {
	conn.Loop
	// Target finds the Run runID while it still waits for answers (it
	// lives here, has its Executor and has not settled).
	Target(runID string) (Target, bool)
}

// Book is the questions of one connection's Runs, by the interaction
// instance ID; touched on the connection's loop only.
type Book struct {
	host  Host
	asked map[string]*asked
	byRun map[string]map[string]bool // Run ID → its questions' instance IDs
}

// New returns the interaction lifecycle of one connection.
func New(h Host) *Book {
	return &Book{host: h, asked: map[string]*asked{}, byRun: map[string]map[string]bool{}}
}

// asked is one question a Run put to Core and the answer it got.
type asked struct {
	runID    string
	id       string // request ID, ask ID or call ID
	answer   string // the message type that answers it
	delivery string // the delivery ID of the latest answer
	content  []byte // the latest answer without its delivery ID
}

// Len is the number of questions recorded (tests).
func (b *Book) Len() int { return len(b.asked) }

// Stepped records the questions a Run sends.
func (b *Book) Stepped(ev *peer.Event) {
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
	if _, dup := b.asked[ev.Key.ID]; dup {
		return
	}
	b.asked[ev.Key.ID] = q
	if b.byRun[q.runID] == nil {
		b.byRun[q.runID] = map[string]bool{}
	}
	b.byRun[q.runID][ev.Key.ID] = true
}

// CloseRun ends the Run's questions with it (run_closed).
func (b *Book) CloseRun(d *peer.Driver, runID string) {
	for key := range b.byRun[runID] {
		_ = d.Local(peer.Key{Machine: interactionfsm.Name, ID: key}, fsm.EventID(interactionfsm.EventRunClosed), nil)
		delete(b.asked, key)
	}
	delete(b.byRun, runID)
}

// Forget drops a question the driver forgot.
func (b *Book) Forget(key string) {
	if q := b.asked[key]; q != nil {
		delete(b.asked, key)
		delete(b.byRun[q.runID], key)
	}
}

// ForgetRun drops the questions of a Run the connection forgot.
func (b *Book) ForgetRun(runID string) {
	for key := range b.byRun[runID] {
		delete(b.asked, key)
	}
	delete(b.byRun, runID)
}

// DeliveryOf is the delivery ID an answer frame carries ("" for none).
func DeliveryOf(m *wire.Message) string {
	delivery, _, _, _ := answerOf(m)
	return delivery
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

// ackID is the receipt's envelope ID: a decision's receipt carries the
// interaction ID, a function result's the Run ID (daemon-protocol.txt:80).
func ackID(m *wire.Message, q *asked) string {
	if m.Type == wire.TypeFunctionResult {
		return q.runID
	}
	return m.ID
}

// Hooks returns the interaction machine's Runtime hooks over b.
func (b *Book) Hooks() interactionfsm.RuntimeHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

func (h hooks) lookup(f *fsm.Firing[*peer.Event]) *asked { return h.b.asked[f.Arg.Key.ID] }

func (h hooks) GuardMatchesRequestKind(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && f.Arg.Msg != nil && f.Arg.Msg.Type == q.answer
}

// GuardIdenticalDecision: a replay must repeat the applied answer exactly
// (daemon-protocol.txt:161).
func (h hooks) GuardIdenticalDecision(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	_, content, _, ok := answerOf(f.Arg.Msg)
	return q != nil && ok && f.Arg.Msg.Type == q.answer && bytes.Equal(content, q.content)
}

func (h hooks) GuardCurrentDelivery(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && guard.CurrentDelivery(f.Arg.Payload(), q.delivery)
}

func (h hooks) GuardRetryLater(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && guard.RetryLater(f.Arg.Payload(), q.delivery)
}

func (h hooks) GuardPermissionKind(f *fsm.Firing[*peer.Event]) bool {
	q := h.lookup(f)
	return q != nil && q.answer == wire.TypePermissionDecision
}

// DoApplyDecision submits the answer natively outside the loop; the
// receipt follows the native outcome, never the request
// (daemon-protocol.txt:145).
func (h hooks) DoApplyDecision(f *fsm.Firing[*peer.Event]) error {
	b, msg := h.b, f.Arg.Msg
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
	t, waits := b.host.Target(q.runID)
	if !waits {
		refuse(f.Arg.Driver(), "not_pending", "the Run no longer waits for this answer")
		return nil
	}
	declared := t.Caps.Permissions == wire.Supported
	if answer.Result != nil {
		declared = t.Caps.FunctionTools == wire.Supported
	}
	if !declared || t.Decider == nil {
		refuse(f.Arg.Driver(), "unsupported", "the Harness does not take this answer")
		return nil
	}
	if err := harness.CheckAnswer(t.Caps, answer); err != nil {
		// An image in a function result without function_result_images.
		refuse(f.Arg.Driver(), "unsupported", bounded.Text(err.Error(), 512))
		return nil
	}
	release := t.Hold()
	b.host.Go(func() {
		defer release()
		ctx, cancel := context.WithTimeout(b.host.Context(), NativeWriteBound)
		err := t.Decider.Decide(ctx, q.runID, answer)
		cancel()
		b.host.Post(func(d *peer.Driver) {
			switch {
			case err == nil:
				yes := true
				send(d, id, wire.InteractionDecisionAck{DeliveryID: delivery, Applied: &yes})
			case errors.Is(err, harness.ErrRunInactive):
				refuse(d, "not_pending", "the Run no longer waits for this answer")
			case errors.Is(harness.Classify(declared, err), harness.ErrContractViolation):
				refuse(d, "contract_violation", bounded.Text(err.Error(), 512))
			default:
				refuse(d, "runtime_error", bounded.Text(err.Error(), 512))
			}
		})
	})
	return nil
}

// SendInteractionDecisionAck answers an identical replay of an applied
// answer with its own delivery ID.
func (h hooks) SendInteractionDecisionAck(f *fsm.Firing[*peer.Event]) error {
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

// send queues a frame from a hook or a posted func; failures are the
// machine's (failed-send events) and are logged by the driver.
func send(d *peer.Driver, id string, p wire.Payload) {
	d.Send(peer.Outbound{ID: id, Payload: p}, nil)
}

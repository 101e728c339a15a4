// Package interaction is the interaction lifecycle on Core's side of one
// connection (daemon-protocol.txt:76–80): the questions a Run asks
// (permission requests, user-choice prompts, function calls), each stored
// and put in its Turn's event stream, answered once with a fresh delivery
// ID, and settled only by the receipt that echoes it. The interaction
// machine decides every step. Which Run a question belongs to, and the
// Turn's journal, are the connection's (Host).
package interaction

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	interactionfsm "github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// Kinds of question, as the store and the API name them.
const (
	KindPermission = "permission"
	KindUserChoice = "user_choice"
	KindFunction   = "function"
)

// Errors of Answer.
var (
	// ErrAnswered: the interaction was answered already (or withdrawn).
	ErrAnswered = errors.New("gateway: the interaction is no longer pending")
	// ErrWrongAnswer: the answer is not of the interaction's kind.
	ErrWrongAnswer = errors.New("gateway: the answer does not fit the interaction's kind")
	// ErrNotOpen: the question is not open on this connection, or the
	// answer never left Core.
	ErrNotOpen = errors.New("gateway: the interaction is not open on this connection")
)

// Run is the Run a question belongs to, as the connection knows it.
type Run interface {
	TurnID() string
	RunID() string
}

// Host is what the interaction lifecycle needs of its connection.
type Host interface {
	// Run finds a Run of this connection by its ID.
	Run(runID string) (Run, bool)
	// Journal adds an entry to r's Turn journal, in the connection's
	// batch (hooks run on the loop).
	Journal(r Run, typ string, payload any) error
	// StoreCtx bounds one store operation made from a hook.
	StoreCtx() (context.Context, context.CancelFunc)
	Now() time.Time
}

// Store is what the lifecycle needs of Core's store.
type Store interface {
	CreateInteraction(ctx context.Context, i store.Interaction) error
	TransitionInteraction(ctx context.Context, id string, from, to store.InteractionState, answer json.RawMessage, at time.Time) error
}

// Book is one connection's open questions, by wire interaction ID
// (request_id, ask_id or call_id).
type Book struct {
	host Host
	st   Store
	mu   sync.Mutex
	recs map[string]*rec
}

// New returns the questions of one connection.
func New(h Host, st Store) *Book { return &Book{host: h, st: st, recs: map[string]*rec{}} }

// rec is Core's record of one open question.
type rec struct {
	id     string // the store's interaction ID, unique across Runs
	wireID string
	kind   string
	callID string // a function call's call_id
	run    Run
	mu     sync.Mutex
	// delivery is the delivery ID of the latest answer sent.
	delivery string
}

func (r *rec) currentDelivery() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.delivery
}

func (b *Book) rec(wireID string) *rec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recs[wireID]
}

// RunOf is the Run the question wireID belongs to.
func (b *Book) RunOf(wireID string) (Run, bool) {
	if r := b.rec(wireID); r != nil {
		return r.run, true
	}
	return nil, false
}

// OfRun lists the wire IDs of the questions runID asked that are still
// recorded, in order (a deterministic journal order when they close).
func (b *Book) OfRun(runID string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for wireID, r := range b.recs {
		if r.run.RunID() == runID {
			keys = append(keys, wireID)
		}
	}
	sort.Strings(keys)
	return keys
}

// Forget drops the question the driver forgot.
func (b *Book) Forget(wireID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.recs, wireID)
}

// Len is the number of questions recorded (tests).
func (b *Book) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.recs)
}

// Answer sends answer to the open question interactionID on pc with a
// fresh delivery ID and returns that ID (a function result also gets the
// call's call_id); kind checks come first. record
// moves the stored question to answered (one conditional write) before
// anything leaves, so a question is answered once; the receipt that
// echoes the delivery ID settles it.
func (b *Book) Answer(ctx context.Context, pc *peer.Conn, interactionID string, answer wire.Payload, record func(raw json.RawMessage) error) (string, error) {
	var r *rec
	b.mu.Lock()
	for _, x := range b.recs {
		if x.id == interactionID {
			r = x
		}
	}
	b.mu.Unlock()
	if r == nil || pc == nil {
		return "", ErrNotOpen
	}
	delivery := credential.NewID("dlv")
	switch a := answer.(type) {
	case wire.PermissionDecision:
		if r.kind != KindPermission {
			return "", ErrWrongAnswer
		}
		a.DeliveryID = delivery
		answer = a
	case wire.PromptForUserChoiceDecision:
		if r.kind != KindUserChoice {
			return "", ErrWrongAnswer
		}
		a.DeliveryID = delivery
		answer = a
	case wire.FunctionResult:
		if r.kind != KindFunction {
			return "", ErrWrongAnswer
		}
		a.DeliveryID, a.CallID = delivery, r.callID
		answer = a
	default:
		return "", ErrWrongAnswer
	}
	raw, _ := json.Marshal(answer)
	if err := record(raw); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.delivery = delivery
	r.mu.Unlock()
	// A decision's envelope carries the interaction ID, a function
	// result's the Run ID (daemon-protocol.txt:75–80).
	envelope := r.wireID
	if r.kind == KindFunction {
		envelope = r.run.RunID()
	}
	err := pc.Send(ctx, peer.Outbound{ID: envelope, Payload: answer})
	var se *peer.SendError
	switch {
	case err == nil:
		return delivery, nil
	case errors.As(err, &se), errors.Is(err, peer.ErrConnectionLost), errors.Is(err, peer.ErrClosed):
		// Nothing left: the answer is recorded but was never delivered.
		return "", ErrNotOpen
	}
	// A failed write may have delivered it: the machine waits for the
	// receipt (answer_send_failed) and records unknown without one.
	return delivery, nil
}

// Hooks returns the interaction machine's Core hooks over b.
func (b *Book) Hooks() interactionfsm.CoreHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

func (h hooks) rec(f *fsm.Firing[*peer.Event]) *rec { return h.b.rec(f.Arg.Key.ID) }

func (h hooks) journal(r *rec, typ string, payload any) error {
	return h.b.host.Journal(r.run, typ, payload)
}

// transition moves the stored interaction; a lost race (already moved) is
// not an error of this step.
func (h hooks) transition(r *rec, from, to store.InteractionState) error {
	ctx, cancel := h.b.host.StoreCtx()
	defer cancel()
	err := h.b.st.TransitionInteraction(ctx, r.id, from, to, nil, h.b.host.Now())
	if errors.Is(err, store.ErrStale) {
		return nil
	}
	return err
}

func receiptOf(f *fsm.Firing[*peer.Event]) wire.InteractionDecisionAck {
	if f.Arg != nil && f.Arg.Msg != nil {
		if a, ok := f.Arg.Msg.Payload.(wire.InteractionDecisionAck); ok {
			return a
		}
	}
	return wire.InteractionDecisionAck{}
}

func (h hooks) GuardMatchesRequestKind(f *fsm.Firing[*peer.Event]) bool {
	r := h.rec(f)
	if r == nil || f.Arg.Msg == nil {
		return false
	}
	switch f.Arg.Msg.Payload.(type) {
	case wire.PermissionDecision:
		return r.kind == KindPermission
	case wire.PromptForUserChoiceDecision:
		return r.kind == KindUserChoice
	case wire.FunctionResult:
		return r.kind == KindFunction
	}
	return false
}

// decision: Core sends each answer once and never repeats it
// (daemon-protocol.txt:158: no automatic replay), so no answer is ever
// identical to an earlier one.
func (h hooks) GuardIdenticalDecision(*fsm.Firing[*peer.Event]) bool { return false }

func (h hooks) GuardCurrentDelivery(f *fsm.Firing[*peer.Event]) bool {
	r := h.rec(f)
	return r != nil && guard.CurrentDelivery(f.Arg.Payload(), r.currentDelivery())
}

func (h hooks) GuardRetryLater(f *fsm.Firing[*peer.Event]) bool {
	r := h.rec(f)
	return r != nil && guard.RetryLater(f.Arg.Payload(), r.currentDelivery())
}

func (h hooks) GuardPermissionKind(f *fsm.Firing[*peer.Event]) bool {
	r := h.rec(f)
	return r != nil && r.kind == KindPermission
}

// DoSurfaceRequest stores the question and puts it in the Turn's stream
// with the ID the API answers it by.
func (h hooks) DoSurfaceRequest(f *fsm.Firing[*peer.Event]) error {
	m := f.Arg.Msg
	if m == nil {
		return nil
	}
	run, ok := h.b.host.Run(m.ID)
	if !ok {
		return errors.New("gateway: a question for an unknown run")
	}
	kind, callID := KindFunction, ""
	switch p := m.Payload.(type) {
	case wire.PermissionRequest:
		kind = KindPermission
	case wire.PromptForUserChoice:
		kind = KindUserChoice
	case wire.FunctionCall:
		callID = p.CallID
	}
	raw, err := json.Marshal(m.Payload)
	if err != nil {
		return err
	}
	r := &rec{id: credential.NewID("int"), wireID: f.Arg.Key.ID, kind: kind, callID: callID, run: run}
	now := h.b.host.Now()
	ctx, cancel := h.b.host.StoreCtx()
	defer cancel()
	err = h.b.st.CreateInteraction(ctx, store.Interaction{
		ID: r.id, TurnID: run.TurnID(), RunID: run.RunID(), Kind: kind, CallID: callID, Request: raw,
		State: store.InteractionPending, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return err
	}
	h.b.mu.Lock()
	h.b.recs[r.wireID] = r
	h.b.mu.Unlock()
	return h.journal(r, m.Type, map[string]any{"interaction_id": r.id, "kind": kind, "request": json.RawMessage(raw)})
}

func (h hooks) settle(f *fsm.Firing[*peer.Event], to store.InteractionState, outcome string) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	ack := receiptOf(f)
	err := h.transition(r, store.InteractionAnswered, to)
	ev := map[string]any{"interaction_id": r.id, "outcome": outcome, "delivery_id": ack.DeliveryID}
	if ack.ErrorCode != "" {
		ev["error_code"] = ack.ErrorCode
	}
	return errors.Join(err, h.journal(r, "interaction_outcome", ev))
}

func (h hooks) DoSettleInteraction(f *fsm.Firing[*peer.Event]) error {
	return h.settle(f, store.InteractionApplied, "applied")
}

func (h hooks) DoRecordRefusal(f *fsm.Firing[*peer.Event]) error {
	return h.settle(f, store.InteractionFailed, "refused")
}

// DoMarkUnknown: no receipt in time, or the Run closed first; the answer
// is never reported applied and never resent (daemon-protocol.txt:158).
func (h hooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	return h.journal(r, "interaction_outcome", map[string]any{"interaction_id": r.id, "outcome": "unknown"})
}

func (h hooks) DoSettleLate(f *fsm.Firing[*peer.Event]) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	return h.journal(r, "late_interaction_receipt", map[string]any{"interaction_id": r.id, "receipt": receiptOf(f)})
}

func (h hooks) withdraw(f *fsm.Firing[*peer.Event], outcome string) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	err := h.transition(r, store.InteractionPending, store.InteractionWithdrawn)
	return errors.Join(err, h.journal(r, "interaction_outcome", map[string]any{"interaction_id": r.id, "outcome": outcome}))
}

func (h hooks) DoAbandonRequest(f *fsm.Firing[*peer.Event]) error {
	return h.withdraw(f, "unanswered")
}

func (h hooks) DoWithdrawPrompt(f *fsm.Firing[*peer.Event]) error {
	return h.withdraw(f, "withdrawn")
}

func (h hooks) DoNoteWithdrawal(f *fsm.Firing[*peer.Event]) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	return h.journal(r, "interaction_withdrawn", map[string]any{"interaction_id": r.id})
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// This file keeps Core's side of the questions a Run asks (permission
// requests, user-choice prompts): the interaction machine decides every
// step; its hooks record each question in the store, put it in the Turn's
// event stream, and settle it only by the receipt that echoes the answer's
// delivery ID (daemon-protocol.txt:80).

// Interaction kinds as the store and the API name them.
const (
	KindPermission = "permission"
	KindUserChoice = "user_choice"
	KindFunction   = "function"
)

// interRec is Core's record of one open question on this connection, by
// its wire interaction ID (request_id, ask_id or call_id).
type interRec struct {
	id       string // the store's interaction ID, unique across Runs
	wireID   string
	kind     string
	run      *runRec
	mu       sync.Mutex
	delivery string // the delivery ID of the latest answer sent
}

func (r *interRec) currentDelivery() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.delivery
}

// interHooks are the interaction machine's Core hooks for one connection.
type interHooks struct{ c *conn }

var _ interaction.CoreHooks[*peer.Event] = interHooks{}

func (c *conn) inter(wireID string) *interRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inters[wireID]
}

func (h interHooks) rec(f *fsm.Firing[*peer.Event]) *interRec { return h.c.inter(f.Arg.Key.ID) }

func (h interHooks) journal(r *interRec, typ string, payload any) error {
	return execHooks(h).journal(r.run, typ, payload)
}

// transition moves the stored interaction; a lost race (already moved) is
// not an error of this step.
func (h interHooks) transition(r *interRec, from, to store.InteractionState) error {
	ctx, cancel := h.c.storeCtx()
	defer cancel()
	err := h.c.g.cfg.Store.TransitionInteraction(ctx, r.id, from, to, nil, h.c.g.cfg.Clock.Now())
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

func (h interHooks) GuardMatchesRequestKind(f *fsm.Firing[*peer.Event]) bool {
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
func (h interHooks) GuardIdenticalDecision(*fsm.Firing[*peer.Event]) bool { return false }

func (h interHooks) GuardCurrentDelivery(f *fsm.Firing[*peer.Event]) bool {
	r := h.rec(f)
	return r != nil && guard.CurrentDelivery(f.Arg.Payload(), r.currentDelivery())
}

func (h interHooks) GuardRetryLater(f *fsm.Firing[*peer.Event]) bool {
	r := h.rec(f)
	return r != nil && guard.RetryLater(f.Arg.Payload(), r.currentDelivery())
}

func (h interHooks) GuardPermissionKind(f *fsm.Firing[*peer.Event]) bool {
	r := h.rec(f)
	return r != nil && r.kind == KindPermission
}

// DoSurfaceRequest stores the question and puts it in the Turn's stream
// with the ID the API answers it by.
func (h interHooks) DoSurfaceRequest(f *fsm.Firing[*peer.Event]) error {
	m := f.Arg.Msg
	if m == nil {
		return nil
	}
	run := h.c.run(m.ID)
	if run == nil {
		return errors.New("gateway: a question for an unknown run")
	}
	kind := KindFunction
	switch m.Payload.(type) {
	case wire.PermissionRequest:
		kind = KindPermission
	case wire.PromptForUserChoice:
		kind = KindUserChoice
	}
	raw, err := json.Marshal(m.Payload)
	if err != nil {
		return err
	}
	r := &interRec{id: credential.NewID("int"), wireID: f.Arg.Key.ID, kind: kind, run: run}
	now := h.c.g.cfg.Clock.Now()
	ctx, cancel := h.c.storeCtx()
	defer cancel()
	err = h.c.g.cfg.Store.CreateInteraction(ctx, store.Interaction{
		ID: r.id, TurnID: run.turnID, RunID: run.runID, Kind: kind, Request: raw,
		State: store.InteractionPending, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return err
	}
	h.c.mu.Lock()
	h.c.inters[r.wireID] = r
	h.c.mu.Unlock()
	return h.journal(r, m.Type, map[string]any{"interaction_id": r.id, "kind": kind, "request": json.RawMessage(raw)})
}

func (h interHooks) settle(f *fsm.Firing[*peer.Event], to store.InteractionState, outcome string) error {
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

func (h interHooks) DoSettleInteraction(f *fsm.Firing[*peer.Event]) error {
	return h.settle(f, store.InteractionApplied, "applied")
}

func (h interHooks) DoRecordRefusal(f *fsm.Firing[*peer.Event]) error {
	return h.settle(f, store.InteractionFailed, "refused")
}

// DoMarkUnknown: no receipt in time, or the Run closed first; the answer
// is never reported applied and never resent (daemon-protocol.txt:158).
func (h interHooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	return h.journal(r, "interaction_outcome", map[string]any{"interaction_id": r.id, "outcome": "unknown"})
}

func (h interHooks) DoSettleLate(f *fsm.Firing[*peer.Event]) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	return h.journal(r, "late_interaction_receipt", map[string]any{"interaction_id": r.id, "receipt": receiptOf(f)})
}

func (h interHooks) withdraw(f *fsm.Firing[*peer.Event], outcome string) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	err := h.transition(r, store.InteractionPending, store.InteractionWithdrawn)
	return errors.Join(err, h.journal(r, "interaction_outcome", map[string]any{"interaction_id": r.id, "outcome": outcome}))
}

func (h interHooks) DoAbandonRequest(f *fsm.Firing[*peer.Event]) error {
	return h.withdraw(f, "unanswered")
}

func (h interHooks) DoWithdrawPrompt(f *fsm.Firing[*peer.Event]) error {
	return h.withdraw(f, "withdrawn")
}

func (h interHooks) DoNoteWithdrawal(f *fsm.Firing[*peer.Event]) error {
	r := h.rec(f)
	if r == nil {
		return nil
	}
	return h.journal(r, "interaction_withdrawn", map[string]any{"interaction_id": r.id})
}

// Errors AnswerInteraction returns.
var (
	// ErrAnswered: the interaction was answered already (or withdrawn).
	ErrAnswered = errors.New("gateway: the interaction is no longer pending")
	// ErrWrongAnswer: the answer is not of the interaction's kind.
	ErrWrongAnswer = errors.New("gateway: the answer does not fit the interaction's kind")
)

// AnswerInteraction sends the answer to a pending interaction of the Turn
// with a fresh delivery ID and returns that ID. The stored record moves to
// answered by one conditional write first, so a question is answered
// once; the receipt that echoes the delivery ID settles it.
func (g *Gateway) AnswerInteraction(ctx context.Context, turnID, interactionID string, answer wire.Payload) (string, error) {
	it, err := g.cfg.Store.GetInteraction(ctx, interactionID)
	if err != nil {
		return "", err
	}
	if it.TurnID != turnID {
		return "", store.ErrNotFound
	}
	if it.State != store.InteractionPending {
		return "", ErrAnswered
	}
	t, err := g.cfg.Store.GetTurn(ctx, turnID)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	c := g.conns[t.DeviceID]
	g.mu.Unlock()
	if c == nil || c.epoch != t.OwnerEpoch {
		return "", ErrNotRunning
	}
	var rec *interRec
	c.mu.Lock()
	for _, r := range c.inters {
		if r.id == interactionID {
			rec = r
		}
	}
	pc := c.pc
	c.mu.Unlock()
	if rec == nil || pc == nil {
		return "", ErrNotRunning
	}
	delivery := credential.NewID("dlv")
	switch a := answer.(type) {
	case wire.PermissionDecision:
		if rec.kind != KindPermission {
			return "", ErrWrongAnswer
		}
		a.DeliveryID = delivery
		answer = a
	case wire.PromptForUserChoiceDecision:
		if rec.kind != KindUserChoice {
			return "", ErrWrongAnswer
		}
		a.DeliveryID = delivery
		answer = a
	default:
		return "", ErrWrongAnswer
	}
	raw, _ := json.Marshal(answer)
	if err := g.cfg.Store.TransitionInteraction(ctx, interactionID, store.InteractionPending, store.InteractionAnswered, raw, g.cfg.Clock.Now()); err != nil {
		if errors.Is(err, store.ErrStale) {
			return "", ErrAnswered
		}
		return "", err
	}
	rec.mu.Lock()
	rec.delivery = delivery
	rec.mu.Unlock()
	err = pc.Send(ctx, peer.Outbound{ID: rec.wireID, Payload: answer})
	var se *peer.SendError
	switch {
	case err == nil:
		return delivery, nil
	case errors.As(err, &se), errors.Is(err, peer.ErrConnectionLost), errors.Is(err, peer.ErrClosed):
		// Nothing left: the answer is recorded but was never delivered.
		return "", ErrNotRunning
	}
	// A failed write may have delivered it: the machine waits for the
	// receipt (answer_send_failed) and records unknown without one.
	return delivery, nil
}

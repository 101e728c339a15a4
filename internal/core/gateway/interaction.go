package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/interaction"
	"github.com/agentwire/agentwire/wire"
)

// The questions a Run asks are the interaction module's
// (internal/interaction); the gateway finds the connection an answer goes
// to and records it in the store.

// Interaction kinds as the store and the API name them.
const (
	KindPermission = interaction.KindPermission
	KindUserChoice = interaction.KindUserChoice
	KindFunction   = interaction.KindFunction
)

// Errors AnswerInteraction returns.
var (
	// ErrAnswered: the interaction was answered already (or withdrawn).
	ErrAnswered = interaction.ErrAnswered
	// ErrWrongAnswer: the answer is not of the interaction's kind.
	ErrWrongAnswer = interaction.ErrWrongAnswer
)

// interHost is what the interaction module sees of its connection.
type interHost struct{ c *conn }

var _ interaction.Host = interHost{}

func (h interHost) Run(runID string) (interaction.Run, bool) {
	if r := h.c.run(runID); r != nil {
		return r, true
	}
	return nil, false
}

func (h interHost) Journal(r interaction.Run, typ string, payload any) error {
	return execHooks{h.c}.journal(r.(*runRec), typ, payload)
}

func (h interHost) StoreCtx() (context.Context, context.CancelFunc) { return h.c.storeCtx() }
func (h interHost) Now() time.Time                                  { return h.c.g.cfg.Clock.Now() }

// AnswerRefused is an answer the Run's Harness cannot take; nothing was
// sent and the interaction stays open.
type AnswerRefused struct{ Detail string }

func (e *AnswerRefused) Error() string { return "gateway: answer refused: " + e.Detail }

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
	c := g.liveOwner(t.DeviceID, t.OwnerEpoch)
	if c == nil {
		return "", ErrNotRunning
	}
	// A function result with an image goes only to a Run whose Harness
	// was admitted with function_result_images (daemon-protocol.txt:46);
	// the call stays open for a result it can take.
	if fr, ok := answer.(wire.FunctionResult); ok && fr.HasImage() {
		if r := c.run(t.RunID); r != nil && !r.caps.FunctionResultImages.Supports() {
			return "", &AnswerRefused{Detail: "the result carries an image and the Turn's Harness declares no function_result_images"}
		}
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	delivery, err := c.questions.Answer(ctx, pc, interactionID, answer, func(raw json.RawMessage) error {
		err := g.cfg.Store.TransitionInteraction(ctx, interactionID, store.InteractionPending, store.InteractionAnswered, raw, g.cfg.Clock.Now())
		if errors.Is(err, store.ErrStale) {
			return ErrAnswered
		}
		return err
	})
	if errors.Is(err, interaction.ErrNotOpen) {
		return "", ErrNotRunning
	}
	return delivery, err
}

package gateway

import (
	"context"
	"log/slog"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/input"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// A running Turn's stored active inputs go to its Run through the input
// module (internal/input); the gateway finds the connection that runs the
// Turn.

// inputHost is what the input module sees of its connection.
type inputHost struct{ c *conn }

var _ input.Host = inputHost{}

func (h inputHost) Run(runID string) (input.Run, bool) {
	if r := h.c.run(runID); r != nil {
		return r, true
	}
	return nil, false
}

func (h inputHost) Journal(r input.Run, typ string, payload any) error {
	return execHooks{h.c}.journal(r.(*runRec), typ, payload)
}

func (h inputHost) ReadCtx() (context.Context, context.CancelFunc)  { return h.c.g.storeCtx() }
func (h inputHost) StoreCtx() (context.Context, context.CancelFunc) { return h.c.storeCtx() }
func (h inputHost) Logger() *slog.Logger                            { return h.c.log }

// InputRefused is an active input the Run of its Turn cannot take.
type InputRefused struct{ Detail string }

func (e *InputRefused) Error() string { return "gateway: active input refused: " + e.Detail }

// CheckInput says, for a Turn running on a live connection, whether its
// Run's Harness takes in as active input (*InputRefused when not). A Turn
// not running here is checked when its input is delivered.
func (g *Gateway) CheckInput(ctx context.Context, turnID string, in wire.MessageInput) error {
	t, err := g.cfg.Store.GetTurn(ctx, turnID)
	if err != nil || t.State != store.TurnRunning {
		return nil
	}
	c := g.liveOwner(t.DeviceID, t.OwnerEpoch)
	if c == nil {
		return nil
	}
	if r := c.run(t.RunID); r != nil {
		if err := r.Admits(in); err != nil {
			return &InputRefused{Detail: err.Error()}
		}
	}
	return nil
}

// DeliverInput wakes the delivery of a Turn's stored inputs; the API calls
// it after storing one. A Turn not running on a live connection keeps its
// inputs stored.
//
// The Turn's running state is read from its instance on the connection's
// loop, not from the store: the move to running is committed in the loop's
// batch after the start was sent, so a store read can still say starting
// while the start's own read of the inputs has already passed (an input
// stored in between was then never sent, and the Turn waited for it). On
// the loop, either the start was sent, and this pump reads the input, or
// it was not, and the pump the start makes once sent will.
func (g *Gateway) DeliverInput(ctx context.Context, turnID string) {
	t, err := g.cfg.Store.GetTurn(ctx, turnID)
	if err != nil || t.RunID == "" || t.State.Terminal() {
		return
	}
	in := g.turn(turnID)
	c := g.liveOwner(t.DeviceID, t.OwnerEpoch)
	if in == nil || c == nil {
		return
	}
	r := c.run(t.RunID)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if r == nil || pc == nil {
		return
	}
	_ = pc.Do(ctx, func(d *peer.Driver) {
		if in.Ref().State != store.TurnRunning {
			return
		}
		c.inputs.Pump(d, r)
	})
}

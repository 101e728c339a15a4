package gateway

import (
	"context"
	"log/slog"

	"github.com/agentwire/agentwire/core/gateway/internal/input"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/peer"
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

// DeliverInput wakes the delivery of a Turn's stored inputs; the API calls
// it after storing one. A Turn not running on a live connection keeps its
// inputs stored.
func (g *Gateway) DeliverInput(ctx context.Context, turnID string) {
	t, err := g.cfg.Store.GetTurn(ctx, turnID)
	if err != nil || t.State != store.TurnRunning {
		return
	}
	g.mu.Lock()
	c := g.conns[t.DeviceID]
	g.mu.Unlock()
	if c == nil || c.epoch != t.OwnerEpoch {
		return
	}
	r := c.run(t.RunID)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if r == nil || pc == nil {
		return
	}
	_ = pc.Do(ctx, func(d *peer.Driver) { c.inputs.Pump(d, r) })
}

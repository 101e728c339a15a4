package gateway

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

var (
	// ErrTurnFinished: the Turn already has its terminal state.
	ErrTurnFinished = errors.New("gateway: the Turn has finished")
	// ErrNotRunning: the Turn has no Run on a live connection to cancel.
	ErrNotRunning = errors.New("gateway: the Turn has no running Run on a live connection")
)

// CancelTurn sends prompt_cancel for the Turn's Run with a fresh delivery
// ID and returns that ID. The Run machine then waits 15 s for the receipt
// that echoes it, which owns the terminal outcome; without one it records
// cancel_unconfirmed (daemon-protocol.txt:133).
//
// decision: only a running Turn (its start was sent) is cancelled here: a
// queued or claimed Turn has no Run to cancel yet (daemon-protocol.txt:110,
// after ownership passes to a Run use prompt_cancel), so the caller gets
// ErrNotRunning and may retry once it runs.
func (g *Gateway) CancelTurn(ctx context.Context, turnID string) (string, error) {
	t, err := g.cfg.Store.GetTurn(ctx, turnID)
	if err != nil {
		return "", err
	}
	if t.State.Terminal() {
		return "", ErrTurnFinished
	}
	if t.State != store.TurnRunning {
		return "", ErrNotRunning
	}
	g.mu.Lock()
	c := g.conns[t.DeviceID]
	g.mu.Unlock()
	if c == nil || c.epoch != t.OwnerEpoch {
		return "", ErrNotRunning
	}
	r := c.run(t.RunID)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if r == nil || pc == nil {
		return "", ErrNotRunning
	}
	delivery := credential.NewID("dlv")
	r.addDelivery(delivery)
	err = pc.Send(ctx, peer.Outbound{ID: t.RunID, Payload: wire.PromptCancel{DeliveryID: delivery}})
	var se *peer.SendError
	switch {
	case err == nil:
		return delivery, nil
	case errors.As(err, &se), errors.Is(err, peer.ErrConnectionLost), errors.Is(err, peer.ErrClosed):
		// Nothing left: the Run has ended or its connection has.
		return "", ErrNotRunning
	}
	// A failed write: the Run machine went to cancelling (send_failed) and
	// the connection loss that follows records cancel_unconfirmed.
	return delivery, nil
}

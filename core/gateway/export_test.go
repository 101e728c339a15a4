package gateway

import (
	"context"

	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/wire"
)

// SendRaw sends one frame on the device's current connection through its
// driver, as the gateway's own code would (tests use it to try what the
// gateway never does, such as reusing a pending operation ID).
func (g *Gateway) SendRaw(ctx context.Context, deviceID, id string, p wire.Payload) error {
	g.mu.Lock()
	c := g.conns[deviceID]
	g.mu.Unlock()
	if c == nil {
		return peer.ErrConnectionLost
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	return pc.Send(ctx, peer.Outbound{ID: id, Payload: p})
}

package gateway

import (
	"context"

	"github.com/agentwire/agentwire/internal/core/gateway/internal/suspend"
	"github.com/agentwire/agentwire/internal/peer"
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

// SuspensionInstance is the attempt's instance on the device's current
// connection as its driver saves it (state, and the deadline of each timer
// it keeps armed); false when that connection carries none.
func (g *Gateway) SuspensionInstance(ctx context.Context, deviceID, id string) (peer.Saved, bool) {
	g.mu.Lock()
	c := g.conns[deviceID]
	g.mu.Unlock()
	if c == nil {
		return peer.Saved{}, false
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if pc == nil {
		return peer.Saved{}, false
	}
	var s peer.Saved
	found := false
	err := pc.Do(ctx, func(d *peer.Driver) {
		if i, ok := d.Lookup(suspend.Key(id)); ok {
			s, found = d.Save(i), true
		}
	})
	return s, found && err == nil
}

// TurnState is the state of the Turn's machine this gateway's worker
// holds (moves not yet committed included); "" when it holds none.
func (g *Gateway) TurnState(id string) string {
	if in := g.turn(id); in != nil {
		return string(in.Ref().State)
	}
	return ""
}

// OpenAdmissions is how many admissions the device's current connection
// holds open (-1 without a connection).
func (g *Gateway) OpenAdmissions(deviceID string) int64 {
	g.mu.Lock()
	c := g.conns[deviceID]
	g.mu.Unlock()
	if c == nil {
		return -1
	}
	return int64(c.admissions.Load())
}

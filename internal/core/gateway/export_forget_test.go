package gateway

import (
	"context"

	"github.com/agentwire/agentwire/internal/peer"
)

// TickRecords runs the driver's timers of the device's connection on its
// loop and then counts the connection's records: preparations, Runs and
// questions (tests).
func (g *Gateway) TickRecords(ctx context.Context, deviceID string) (n [3]int, ok bool) {
	g.mu.Lock()
	c := g.conns[deviceID]
	g.mu.Unlock()
	if c == nil {
		return n, false
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if pc == nil {
		return n, false
	}
	err := pc.Do(ctx, func(d *peer.Driver) {
		d.Tick()
		c.mu.Lock()
		n = [3]int{len(c.preps), len(c.runs), c.questions.Len()}
		c.mu.Unlock()
	})
	return n, err == nil
}

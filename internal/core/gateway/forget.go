package gateway

import (
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/fsm/preparation"
	"github.com/agentwire/agentwire/fsm/run"
	"github.com/agentwire/agentwire/internal/peer"
)

var _ peer.Forgetter = (*conn)(nil)

// Forgot implements peer.Forgetter: the driver forgot a settled instance
// (evicted at its machine's bound, 1024 Runs and 64 preparations per
// connection, or past its retention), so the connection drops its record
// of it too. A long-lived connection then keeps per Turn what its driver
// keeps, not every Turn, preparation and question it ever saw.
//
// Only settled instances are forgotten, and a settled one has recorded
// its Turn's outcome and woken its worker already: what a worker still
// holds, it holds by pointer. The store keeps the durable records.
func (c *conn) Forgot(i *peer.Instance) {
	id := i.Key.ID
	c.mu.Lock()
	defer c.mu.Unlock()
	switch i.Key.Machine {
	case preparation.Name:
		p := c.preps[id]
		if p == nil {
			return
		}
		delete(c.preps, id)
		// A Turn whose preparation ended before its start never made a
		// Run instance, so no Forgot comes for its Run record: it goes
		// with the preparation, unless a retry of the Turn (same Run ID)
		// has replaced it.
		if p.run != nil && c.runs[p.runID] == p.run {
			if _, started := c.d.Lookup(peer.Key{Machine: run.Name, ID: p.runID}); !started {
				delete(c.runs, p.runID)
				c.inputs.Forget(p.runID)
			}
		}
	case run.Name:
		delete(c.runs, id)
		c.inputs.Forget(id)
	case interaction.Name:
		c.questions.Forget(id)
	}
}

// dropUnsent forgets the records of a Turn whose execution_prepare was
// refused before it left: no instance took it, so no Forgot will come.
func (c *conn) dropUnsent(prepID string, p *prepRec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.preps[prepID] == p {
		delete(c.preps, prepID)
	}
	if p.run != nil && c.runs[p.runID] == p.run {
		delete(c.runs, p.runID)
		c.inputs.Forget(p.runID)
	}
}

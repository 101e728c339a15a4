package gateway

import "context"

// The Sessions' scheduling reservations: a Session is held either by the
// Turns this gateway's worker executes or by one workspace read, never
// both (daemon-protocol.txt:183: an idle read runs on the Worker's Session
// scheduling reservation).

// sessionHold is a Session's scheduling reservation on this gateway: the
// Turns its worker executes, or one read.
//
// decision: the reservation lives in the worker's memory, like the
// connection-local handles it guards (daemon-protocol.txt:74, 116): a
// Core that stops loses its connections, and with them every handle a
// read held, so no durable record would be left to settle. Turns keep
// their own claim in the store.
//
// decision: with several replicas the reservation has two halves. The
// Turns' half is durable: a claim is refused while another Turn of the
// Session is active, under the Session's row lock (store.Store.MoveTurn,
// postgres lockSessionsSQL), so no two replicas run Turns of one Session.
// The reads' and writes' half stays here: a request for the Session's
// workspace is forwarded to the replica that holds the device's lease
// (internal/core/server/forward.go), which is also the only one that can
// place the Session's Turns on that device, so the one process that could
// contend for the Session holds all of its holds.
type sessionHold struct {
	turns map[string]turnHold // by Turn ID
	read  bool
	write bool // a workspace write is being sent (workspace_write.go)
	// workspace is the registered Environment whose workspace the
	// Session's work uses ("" for an Environment without one).
	workspace string
}

type turnHold struct {
	c     *conn
	runID string
	seq   uint64
}

// holdForTurn adds a claimed Turn to its Session's reservation; false
// while a read holds the Session (the Turn stays queued until it ends).
//
// workspace is the Session's registered Environment ("" for none): a
// write of another Session in the same workspace holds the Turn too.
func (g *Gateway) holdForTurn(sessionID, workspace, turnID string, c *conn, runID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.hold(sessionID)
	if h.read || h.write || g.workspaceWritten(workspace, sessionID) {
		g.tidyHold(sessionID, h)
		return false
	}
	h.workspace = workspace
	g.holdSeq++
	h.turns[turnID] = turnHold{c: c, runID: runID, seq: g.holdSeq}
	return true
}

// dropTurnHold removes a Turn from its Session's reservation.
func (g *Gateway) dropTurnHold(sessionID, turnID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h := g.holds[sessionID]; h != nil {
		delete(h.turns, turnID)
		g.tidyHold(sessionID, h)
	}
	if g.turnDropped != nil {
		close(g.turnDropped)
		g.turnDropped = nil
	}
}

// holdForIdleRead is holdForRead after awaitFinishedTurns.
func (g *Gateway) holdForIdleRead(ctx context.Context, sessionID string) (turnID string, th turnHold, ok bool) {
	g.awaitFinishedTurns(ctx, sessionID)
	return g.holdForRead(sessionID)
}

// awaitFinishedTurns waits, bounded by ctx, while the Session's
// reservation is held only by Turns whose end is already stored. The
// worker drops a Turn's hold when its execution returns, a moment after
// the end is stored, and a read or write from a caller who saw the Turn
// end must not be told the Session is busy.
func (g *Gateway) awaitFinishedTurns(ctx context.Context, sessionID string) {
	for {
		g.mu.Lock()
		if g.turnDropped == nil {
			g.turnDropped = make(chan struct{})
		}
		dropped := g.turnDropped
		var held []string
		if h := g.holds[sessionID]; h != nil {
			for id := range h.turns {
				held = append(held, id)
			}
		}
		g.mu.Unlock()
		if len(held) == 0 {
			return
		}
		for _, id := range held {
			t, err := g.cfg.Store.GetTurn(ctx, id)
			if err != nil || !t.State.Terminal() {
				return // a Turn that runs holds the Session: busy, or read through its Run
			}
		}
		select {
		case <-dropped:
		case <-ctx.Done():
			return
		}
	}
}

func (g *Gateway) hold(sessionID string) *sessionHold {
	if g.holds == nil {
		g.holds = map[string]*sessionHold{}
	}
	h := g.holds[sessionID]
	if h == nil {
		h = &sessionHold{turns: map[string]turnHold{}}
		g.holds[sessionID] = h
	}
	return h
}

func (g *Gateway) tidyHold(sessionID string, h *sessionHold) {
	if !h.read && !h.write && len(h.turns) == 0 {
		delete(g.holds, sessionID)
	}
}

// holdForRead takes the Session's reservation for an idle read, or
// returns the newest Turn that holds it.
func (g *Gateway) holdForRead(sessionID string) (turnID string, th turnHold, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.hold(sessionID)
	for id, t := range h.turns {
		if t.seq > th.seq {
			turnID, th = id, t
		}
	}
	switch {
	case turnID != "":
		return turnID, th, false
	case h.read || h.write:
		return "", th, false
	}
	h.read = true
	return "", th, true
}

func (g *Gateway) dropReadHold(sessionID string) {
	g.mu.Lock()
	if h := g.holds[sessionID]; h != nil {
		h.read = false
		g.tidyHold(sessionID, h)
	}
	g.mu.Unlock()
	g.kick() // a Turn of the Session may have waited for the read
}

// holdForWrite takes the Session's reservation for a workspace write;
// false while a Turn, a read or another write holds it.
//
// decision: the Runtime excludes execution of a workspace while it
// receives or applies a write to it (daemon-protocol.txt:185), and
// refuses the preparation of a Turn there with a code Core may not retry
// (:116). Several Sessions may share one registered Environment
// (docs/tenancy.md), so Core keeps a write and the Turns of every Session
// of that workspace apart: the write waits for no Turn, it is refused
// while one is placed, and a Turn waits (queued) while the write is sent.
func (g *Gateway) holdForWrite(sessionID, workspace string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.hold(sessionID)
	if h.read || h.write || len(h.turns) > 0 || g.sessions[sessionID] != "" || g.workspaceRunning(workspace, sessionID) {
		g.tidyHold(sessionID, h)
		return false
	}
	h.write, h.workspace = true, workspace
	return true
}

// workspaceWritten reports whether another Session of the workspace holds
// a write; workspaceRunning whether one holds a Turn. g.mu is held.
func (g *Gateway) workspaceWritten(workspace, except string) bool {
	for id, h := range g.holds {
		if workspace != "" && id != except && h.workspace == workspace && h.write {
			return true
		}
	}
	return false
}

func (g *Gateway) workspaceRunning(workspace, except string) bool {
	for id, h := range g.holds {
		if workspace != "" && id != except && h.workspace == workspace && len(h.turns) > 0 {
			return true
		}
	}
	return false
}

func (g *Gateway) dropWriteHold(sessionID string) {
	g.mu.Lock()
	if h := g.holds[sessionID]; h != nil {
		h.write = false
		g.tidyHold(sessionID, h)
	}
	g.mu.Unlock()
	g.kick()
}

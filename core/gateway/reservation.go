package gateway

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
type sessionHold struct {
	turns map[string]turnHold // by Turn ID
	read  bool
	write bool // a workspace write is being sent (workspace_write.go)
}

type turnHold struct {
	c     *conn
	runID string
	seq   uint64
}

// holdForTurn adds a claimed Turn to its Session's reservation; false
// while a read holds the Session (the Turn stays queued until it ends).
func (g *Gateway) holdForTurn(sessionID, turnID string, c *conn, runID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.hold(sessionID)
	if h.read || h.write {
		return false
	}
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
func (g *Gateway) holdForWrite(sessionID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.hold(sessionID)
	if h.read || h.write || len(h.turns) > 0 || g.sessions[sessionID] != "" {
		g.tidyHold(sessionID, h)
		return false
	}
	h.write = true
	return true
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

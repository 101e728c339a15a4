package gateway

import policy "github.com/agentwire/agentwire/core/placement"

// order asks the placement policy which of the eligible connections to try
// for p's Turn, and in what order. The policy sees only devices Core
// already found eligible, and every check runs again on the one it picks
// (place), so a policy can reorder or leave out but never widen. An ID the
// policy invents or repeats is ignored.
func (g *Gateway) order(p turnPlan, cands []*conn) []*conn {
	devices := make([]policy.Device, len(cands))
	byID := make(map[string]*conn, len(cands))
	for i, c := range cands {
		devices[i] = policy.Device{ID: c.deviceID, OwnerEpoch: c.epoch, Admissions: int(c.admissions.Load())}
		byID[c.deviceID] = c
	}
	t := policy.Turn{ID: p.turn.ID, SessionID: p.session.ID, Project: p.session.Project, AgentKind: p.session.AgentKind, EnvironmentID: p.env.ID}
	ids := g.cfg.Placement.Order(t, devices)
	out := make([]*conn, 0, len(ids))
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
			delete(byID, id)
		}
	}
	return out
}

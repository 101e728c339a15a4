package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/write"
)

// reconcileWrites settles the writes an earlier Core process left held
// (internal/write).
func (g *Gateway) reconcileWrites(ctx context.Context) {
	write.Reconcile(ctx, g.cfg.Store, g.cfg.Clock.Now().UTC(), g.cfg.Logger, CauseCoreRestarted, nil)
}

// ResolveWrite records an operator's resolution of a write whose outcome
// is unknown and releases the Session's mutation owner. resolution is
// store.ResolutionApplied or store.ResolutionNotApplied.
//
// decision: only an operator may release an unknown write, since no
// receipt can prove what happened (daemon-protocol.txt:185); Core keeps
// the receipt's evidence and records who decided what, and never resends
// the write.
func (g *Gateway) ResolveWrite(ctx context.Context, mutationID, resolution, note string) (store.WorkspaceWrite, error) {
	if resolution != store.ResolutionApplied && resolution != store.ResolutionNotApplied {
		return store.WorkspaceWrite{}, store.ErrInvalid
	}
	if err := g.cfg.Store.ResolveWorkspaceWrite(ctx, mutationID, resolution, note, g.cfg.Clock.Now().UTC()); err != nil {
		return store.WorkspaceWrite{}, err
	}
	g.cfg.Logger.Info("gateway: workspace write resolved by an operator", "mutation_id", mutationID, "resolution", resolution)
	g.kick()
	return g.cfg.Store.GetWorkspaceWrite(ctx, mutationID)
}

// writeBlocksTurns reports whether a write holds the Session's mutation
// owner in the store (a Turn waits; see the decision in workspace_write.go).
func (g *Gateway) writeBlocksTurns(ctx context.Context, sessionID string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := g.cfg.Store.UnsettledWorkspaceWrite(ctx, sessionID)
	return !errors.Is(err, store.ErrNotFound)
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/turn"
)

// CauseCoreRestarted is the cause Core journals beside the reason of a
// Turn it found claimed or running when it started.
const CauseCoreRestarted = "core_restarted"

// reconcile resolves what an earlier Core process left behind on the same
// store, before the worker claims anything: the connections of that
// process died with it, so no Run it observed can be observed any more
// and no device it owned is connected.
//
// Each Turn a worker of that process held gets the turn machine's restart
// event, and the table decides (spec/turn.yaml, with its decisions): a
// claimed or starting Turn fails with delivery_unknown, a running one with
// event_stream_incomplete, or cancel_unconfirmed once its cancellation was
// journaled, and a Turn cancelled before its start is cancelled. Nothing
// is replayed. Only the Runtime, which keeps cleanup ownership until
// settlement (daemon-protocol.txt:151), settles the native work. This
// assumes one Core process per store; several replicas sharing one
// database would resolve only the Turns of an owner epoch no live replica
// holds.
func (g *Gateway) reconcile() {
	ctx, cancel := context.WithTimeout(g.stores, 30*time.Second)
	defer cancel()
	g.reconcileWrites(ctx)      // internal/write
	g.reconcileSuspensions(ctx) // suspension.go
	turns, err := g.cfg.Store.ActiveTurns(ctx)
	if err != nil {
		g.cfg.Logger.Error("gateway: reconcile: active turns", "err", err)
		return
	}
	now := g.cfg.Clock.Now()
	for _, t := range turns {
		st, err := turn.Fire(turn.RefOf(t), turn.Restart, turn.Args{CancelJournaled: g.cancelRequested(ctx, t), At: now})
		if err != nil || !st.Moved() {
			g.cfg.Logger.Warn("gateway: reconcile: turn", "turn_id", t.ID, "state", t.State, "err", err)
			continue
		}
		if o := st.Move.Outcome; o != nil && o.Reason != "" {
			ev, _ := json.Marshal(map[string]string{"reason": o.Reason, "cause": CauseCoreRestarted})
			if _, err := g.cfg.Journal.Append(ctx, store.Event{TurnID: t.ID, RunID: t.RunID, Type: "observation", Payload: ev, At: now}); err != nil {
				g.cfg.Logger.Warn("gateway: reconcile: journal", "turn_id", t.ID, "err", err)
			}
		}
		if err := g.cfg.Store.MoveTurn(ctx, st.Move); err != nil && !errors.Is(err, store.ErrStale) {
			g.cfg.Logger.Warn("gateway: reconcile: finish turn", "turn_id", t.ID, "err", err)
			continue
		}
		g.cfg.Logger.Info("gateway: reconciled a Turn left by an earlier Core process", "turn_id", t.ID, "run_id", t.RunID, "from", st.Move.From, "to", st.Move.To)
	}
	devices, err := g.cfg.Store.ListDevices(ctx)
	if err != nil {
		g.cfg.Logger.Error("gateway: reconcile: devices", "err", err)
		return
	}
	for _, d := range devices {
		if !d.Connected {
			continue
		}
		// The device reconnects under a new owner epoch; until then it
		// is offline and advertises nothing.
		if err := g.cfg.Store.ReleaseOwner(ctx, d.ID, d.OwnerEpoch, now); err != nil && !errors.Is(err, store.ErrStale) {
			g.cfg.Logger.Warn("gateway: reconcile: release owner", "device_id", d.ID, "err", err)
		}
	}
}

// cancelRequested reports whether the running Turn's journal records a
// prompt_cancel of its Run (JournalCancelRequested). The journal is read
// in pages, so a long Run costs time, not memory.
func (g *Gateway) cancelRequested(ctx context.Context, t store.Turn) bool {
	const page = 512
	var after int64
	for {
		evs, err := g.cfg.Store.Events(ctx, t.ID, after, page)
		if err != nil {
			g.cfg.Logger.Warn("gateway: reconcile: journal", "turn_id", t.ID, "err", err)
			return false
		}
		for _, e := range evs {
			if e.Type == JournalCancelRequested && e.RunID == t.RunID {
				return true
			}
		}
		if len(evs) < page {
			return false
		}
		after = evs[len(evs)-1].Seq
	}
}

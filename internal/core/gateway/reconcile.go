package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/suspend"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/write"
	"github.com/agentwire/agentwire/internal/core/turn"
)

// CauseCoreRestarted is the cause Core journals beside the reason of a
// Turn it found claimed or running when it started.
const CauseCoreRestarted = "core_restarted"

// reconcile resolves what earlier Core processes left behind on the same
// store, before the worker claims anything: their connections died with
// them, so no Run they observed can be observed any more.
//
// Each Turn a worker of such a process held gets the turn machine's
// restart event, and the table decides (spec/turn.yaml, with its
// decisions): a claimed or starting Turn fails with delivery_unknown, a
// running one with event_stream_incomplete, or cancel_unconfirmed once
// its cancellation was journaled, and a Turn cancelled before its start
// is cancelled. Nothing is replayed. Only the Runtime, which keeps
// cleanup ownership until settlement (daemon-protocol.txt:151), settles
// the native work.
//
// Which processes are gone: a Core that owns its store alone retires
// every earlier replica, and then also resolves every Turn, write and
// suspension left open (those of a store written before leases existed
// included). A replica sharing the store retires only the earlier
// processes at its own URL (it replaced them) and reaps the leases that
// expired, reconciling the Turns, writes and suspension attempts of each
// (reapExpired); the leases, Turns and writes of live replicas are theirs
// (lease.go).
func (g *Gateway) reconcile() {
	ctx, cancel := context.WithTimeout(g.stores, 30*time.Second)
	defer cancel()
	now := g.cfg.Clock.Now()
	r := g.cfg.Replica
	if err := g.cfg.Store.RegisterReplica(ctx, store.Replica{ID: r.ID, URL: r.URL, StartedAt: now, HeartbeatAt: now}); err != nil {
		g.cfg.Logger.Error("gateway: reconcile: registering the replica", "replica_id", r.ID, "err", err)
	}
	if !r.Shared || r.URL != "" {
		url := ""
		if r.Shared {
			url = r.URL
		}
		if n, err := g.cfg.Store.RetireReplicas(ctx, url, r.ID, now); err != nil {
			g.cfg.Logger.Error("gateway: reconcile: retiring earlier processes", "err", err)
		} else if n > 0 {
			g.cfg.Logger.Info("gateway: reconcile: the device leases of earlier processes end now", "leases", n)
		}
	}
	g.reapExpired(CauseCoreRestarted)
	if r.Shared {
		return
	}
	g.reconcileWrites(ctx)      // internal/write
	g.reconcileSuspensions(ctx) // suspension.go
	turns, err := g.cfg.Store.ActiveTurns(ctx)
	if err != nil {
		g.cfg.Logger.Error("gateway: reconcile: active turns", "err", err)
		return
	}
	for _, t := range turns {
		g.reconcileTurn(ctx, t, now, CauseCoreRestarted)
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

// reconcileTurn fires the restart event on a Turn whose Run no process
// observes any more, journaling the reason with cause.
func (g *Gateway) reconcileTurn(ctx context.Context, t store.Turn, now time.Time, cause string) {
	st, err := turn.Fire(turn.RefOf(t), turn.Restart, turn.Args{CancelJournaled: g.cancelRequested(ctx, t), At: now})
	if err != nil || !st.Moved() {
		g.cfg.Logger.Warn("gateway: reconcile: turn", "turn_id", t.ID, "state", t.State, "err", err)
		return
	}
	if o := st.Move.Outcome; o != nil && o.Reason != "" {
		ev, _ := json.Marshal(map[string]string{"reason": o.Reason, "cause": cause})
		if _, err := g.cfg.Journal.Append(ctx, store.Event{TurnID: t.ID, RunID: t.RunID, Type: "observation", Payload: ev, At: now}); err != nil {
			g.cfg.Logger.Warn("gateway: reconcile: journal", "turn_id", t.ID, "err", err)
		}
	}
	if err := g.cfg.Store.MoveTurn(ctx, st.Move); err != nil && !errors.Is(err, store.ErrStale) {
		g.cfg.Logger.Warn("gateway: reconcile: finish turn", "turn_id", t.ID, "err", err)
		return
	}
	msg := "gateway: reconciled a Turn left by an earlier Core process"
	if cause != CauseCoreRestarted {
		msg = "gateway: reconciled a Turn of a replica whose device lease expired"
	}
	g.cfg.Logger.Info(msg, "turn_id", t.ID, "run_id", t.RunID, "from", st.Move.From, "to", st.Move.To, "cause", cause)
}

// reconcileLease settles the open workspace writes reserved, and the
// open suspension attempts carried, on the connection of reaped lease l,
// as a Core that owns its store alone settles every one at start
// (reconcileWrites, reconcileSuspensions): that connection is gone with
// its replica, so the workspace_write machine's process_exit and the
// suspension machine's connection_lost decide. Only that epoch's are
// touched: a newer connection of the device, on a live replica, carries
// its own writes, and the attempts it adopted are recorded under its
// epoch (suspend.Book.adopt). The reap is one conditional write, so this
// runs once per lease across the replicas. A replica that is alive but
// could not reach the store for a TTL may still run such a write: it
// records the commit attempt with a write conditional on the state it
// last stored before commit may leave (internal/write), so once the
// reaper moved the write, commit is never sent.
//
// decision: the protocol says nothing of Cores sharing a store; a write
// whose sender is gone is settled as after a Core restart
// (daemon-protocol.txt:185: once commit may have left, the outcome is
// unknown and only an operator releases it), with cause as its reason.
func (g *Gateway) reconcileLease(ctx context.Context, l store.Lease, now time.Time, cause string) {
	now = now.UTC()
	write.Reconcile(ctx, g.cfg.Store, now, g.cfg.Logger, cause, func(w store.WorkspaceWrite) bool {
		return w.DeviceID == l.DeviceID && w.OwnerEpoch == l.Epoch
	})
	suspend.Reconcile(ctx, g.cfg.Store, now, g.cfg.Logger, func(a store.Suspension) bool {
		return a.DeviceID == l.DeviceID && a.OwnerEpoch == l.Epoch
	})
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

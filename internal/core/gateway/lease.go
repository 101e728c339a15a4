package gateway

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
)

// Replica is this Core process among the Cores that share one store
// (docs/deployment.md, "Several Core replicas").
type Replica struct {
	// ID names this process in the store; a new one is generated at each
	// start when empty.
	ID string
	// URL is where the other replicas reach this one's public API, to
	// forward a request that needs a device connection held here.
	URL string
	// Shared is set when other replicas may serve the store at the same
	// time: device leases then expire unless renewed, and reconciliation
	// at start ends only the leases of this process's predecessors at URL
	// (and of replicas whose leases expired), not every lease.
	Shared bool
	// LeaseTTL and RenewInterval override DefaultLeaseTTL and
	// DefaultLeaseRenew (tests).
	LeaseTTL      time.Duration
	RenewInterval time.Duration
}

// The device owner lease of a replica that shares its store.
//
// decision: the protocol fences the owner lease when a newer connection
// of the device arrives (daemon-protocol.txt:19) and says nothing of how
// long a lease outlives a Core that can no longer renew it. Both numbers
// are local policy: a replica renews every lease it holds each
// DefaultLeaseRenew, and a lease not renewed for DefaultLeaseTTL expires,
// after which another replica reaps it and ends the Turns it held (their
// effect unknown, as after a restart, daemon-protocol.txt:151). The TTL
// is the failover time of a replica that died: its devices reconnect to
// another replica at once (a new epoch), but the Turns it was running are
// resolved only once its leases expire. Three renewals fit in one TTL, so
// one slow or failed renewal does not drop a healthy replica's devices;
// a replica that could not renew for a whole TTL stops sending on those
// connections by itself (leaseHeld), before any other replica may reap.
const (
	DefaultLeaseTTL   = 15 * time.Second
	DefaultLeaseRenew = 5 * time.Second
)

// CauseReplicaLost is the cause journaled beside the reason of a Turn
// whose device lease expired on another replica (it died or lost its
// store) and which this replica reconciled.
const CauseReplicaLost = "core_replica_lost"

func (r *Replica) defaults() {
	if r.ID == "" {
		r.ID = credential.NewID("rep")
	}
	if r.LeaseTTL <= 0 {
		r.LeaseTTL = DefaultLeaseTTL
	}
	if r.RenewInterval <= 0 {
		r.RenewInterval = DefaultLeaseRenew
	}
}

// ReplicaID is this process's replica ID.
func (g *Gateway) ReplicaID() string { return g.cfg.Replica.ID }

// leaseUntil is the expiry of a lease taken or renewed at `at`: none for
// a store this Core owns alone.
func (g *Gateway) leaseUntil(at time.Time) time.Time {
	if !g.cfg.Replica.Shared {
		return time.Time{}
	}
	return at.Add(g.cfg.Replica.LeaseTTL)
}

// leaseState is what a connection knows of its own lease: until when it
// was last known valid (Unix nanoseconds; 0 for a lease without expiry)
// and whether this replica saw it lost.
type leaseState struct {
	validUntil atomic.Int64
	// takenAt is when AcquireLease returned: a renewal that started
	// before it cannot have seen the lease.
	takenAt atomic.Int64
	fenced  atomic.Bool
}

// leaseHeld reports whether c may still send frames for its Turns: it is
// not fenced, and its lease is known valid now. A replica whose renewals
// failed for a whole TTL stops by itself, so a lease another replica
// reaps (only once expired) has no sender left.
func (g *Gateway) leaseHeld(c *conn) bool {
	if c.lease.fenced.Load() {
		return false
	}
	until := c.lease.validUntil.Load()
	return until == 0 || g.cfg.Clock.Now().UnixNano() < until
}

// liveOwner is the connection that holds the device's lease at epoch on
// this replica and may send for it, or nil: every path that sends a frame
// for a Turn (its input, a decision, a cancellation) goes through it, so
// a fenced connection sends nothing more.
func (g *Gateway) liveOwner(deviceID string, epoch uint64) *conn {
	g.mu.Lock()
	c := g.conns[deviceID]
	g.mu.Unlock()
	if c == nil || c.epoch != epoch || !g.leaseHeld(c) {
		return nil
	}
	return c
}

// fence stops c for good: its lease is lost (a newer connection of the
// device took it on another replica, or it expired), so it is closed
// with the replaced status and sends nothing more meanwhile.
func (c *conn) fence(why string) {
	if !c.lease.fenced.CompareAndSwap(false, true) {
		return
	}
	c.log.Warn("gateway: the device's owner lease is lost; closing its connection as replaced", "why", why)
	c.g.placementChanged()
	c.supersede()
}

// leases runs while the gateway does, for a shared store: it renews this
// replica's leases each RenewInterval, fences the connections whose lease
// was lost, and reaps the leases that expired (of any replica).
func (g *Gateway) leases() {
	defer g.wg.Done()
	t := g.cfg.Clock.NewTimer(g.cfg.Replica.RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C():
		}
		g.LeasePass()
		t.Reset(g.cfg.Replica.RenewInterval)
	}
}

// LeasePass is one pass of the lease loop, run each renew interval: it
// renews this replica's leases, fences what was lost, reaps what expired,
// adopts the suspension attempts older connections of its devices left,
// and wakes the delivery of stored inputs. Tests run it directly.
func (g *Gateway) LeasePass() {
	g.renewLeases()
	g.reapExpired(CauseReplicaLost)
	g.adoptLeftOver() // suspension.go
	g.pumpStoredInputs()
}

// renewLeases renews every lease of this replica in one write and fences
// the connections whose lease it no longer holds.
func (g *Gateway) renewLeases() {
	ctx, cancel := g.storeCtx()
	defer cancel()
	now := g.cfg.Clock.Now()
	held, err := g.cfg.Store.RenewLeases(ctx, g.cfg.Replica.ID, now, g.leaseUntil(now))
	g.mu.Lock()
	conns := make([]*conn, 0, len(g.conns))
	for _, c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	if err != nil {
		g.cfg.Logger.Error("gateway: renewing the device leases", "replica_id", g.cfg.Replica.ID, "err", err)
		for _, c := range conns {
			if !g.leaseHeld(c) {
				c.fence("its lease expired unrenewed")
			}
		}
		return
	}
	type key struct {
		device string
		epoch  uint64
	}
	renewed := make(map[key]bool, len(held))
	for _, l := range held {
		renewed[key{l.DeviceID, l.Epoch}] = true
	}
	until := g.leaseUntil(now).UnixNano()
	for _, c := range conns {
		switch {
		case renewed[key{c.deviceID, c.epoch}]:
			c.lease.validUntil.Store(until)
		case c.lease.takenAt.Load() >= now.UnixNano():
			// Taken after this renewal started: the next one sees it.
		default:
			c.fence("a newer connection of the device took its lease, or the lease expired")
		}
	}
}

// reapExpired ends each expired lease (one conditional write, so of the
// replicas that see it expire exactly one reaps it) and reconciles what
// ran under it: the Turns claimed, the workspace writes reserved and the
// suspension attempts carried under that epoch (reconcileLease). The
// leases a restarted replica retired (RetireReplicas) expire at once, so
// its reconcile reaps and reconciles them here too.
func (g *Gateway) reapExpired(cause string) {
	ctx, cancel := context.WithTimeout(g.stores, 30*time.Second)
	defer cancel()
	now := g.cfg.Clock.Now()
	expired, err := g.cfg.Store.ExpiredLeases(ctx, now)
	if err != nil {
		g.cfg.Logger.Error("gateway: listing expired device leases", "err", err)
		return
	}
	if len(expired) == 0 {
		return
	}
	var active []store.Turn
	for _, l := range expired {
		err := g.cfg.Store.ReapLease(ctx, l.DeviceID, l.Epoch, g.cfg.Replica.ID, now)
		if errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrNotFound) {
			continue // another replica reaped it, or its connection released it
		}
		if err != nil {
			g.cfg.Logger.Warn("gateway: reaping a device lease", "device_id", l.DeviceID, "epoch", l.Epoch, "err", err)
			continue
		}
		g.mu.Lock()
		c := g.conns[l.DeviceID]
		g.mu.Unlock()
		if c != nil && c.epoch == l.Epoch {
			c.fence("its lease expired")
		}
		if active == nil {
			if active, err = g.cfg.Store.ActiveTurns(ctx); err != nil {
				g.cfg.Logger.Error("gateway: reconcile: active turns", "err", err)
				return
			}
		}
		n := 0
		for _, t := range active {
			if t.DeviceID == l.DeviceID && t.OwnerEpoch == l.Epoch {
				g.reconcileTurn(ctx, t, now, cause)
				n++
			}
		}
		g.reconcileLease(ctx, l, now, cause)
		g.cfg.Logger.Info("gateway: reaped an expired device lease", "device_id", l.DeviceID, "epoch", l.Epoch, "holder", l.ReplicaID, "turns", n)
	}
	g.placementChanged()
	// A released write frees its Session's Turns; a settled attempt, its
	// Environment.
	g.kick()
}

// pumpStoredInputs wakes the input delivery of every Turn this replica
// executes.
//
// decision: an input is stored by whichever replica the API request
// reached; a request for a running Turn is forwarded to the Turn's owner
// (internal/core/server/forward.go), which stores and delivers it at
// once. A request that arrived while the Turn was still queued is stored
// where it arrived, and if the Turn started on another replica between
// that check and the write, no one woke the owner's delivery. Inputs are
// durable and delivered in order from the cursor (daemon-protocol.txt:133),
// so the owner looking at its running Turns' stored inputs once per lease
// pass bounds that delay by the renew interval and can replay nothing.
func (g *Gateway) pumpStoredInputs() {
	g.mu.Lock()
	ids := make([]string, 0, len(g.turns))
	for id := range g.turns {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	for _, id := range ids {
		ctx, cancel := g.storeCtx()
		g.DeliverInput(ctx, id)
		cancel()
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm/connection"
	"github.com/agentwire/agentwire/fsm/suspension"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/suspend"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Suspension (daemon-protocol.txt:78, 96). Core starts a suspension
// attempt from the public API: it stores the attempt first (its ID is the
// wire suspend_id), then sends environment_quiesce; the suspension
// machine decides every outcome, and every move of the attempt's instance
// is written to the store with one write conditional on the state it left,
// so a stale writer (an old connection, a Core that restarted) can never
// move it. A reply is fenced by the identity it echoes
// (GuardOwnSuspension); a reply for another attempt routes to that
// attempt's instance, or to none, and never touches this one.
//
// An attempt is scoped: it goes to the device that hosts its Environment
// (store.Environment.DeviceID), and while it is open Core places no work
// of that Environment anywhere (suspended); other Environments, on the
// same device too, are not held. It is bounded: the table's answer_wait
// (30 s, policy) rolls an unanswered quiesce back and ends an unanswered
// resume or rollback expired with CodeAnswerTimeout, which releases the
// Environment while the attempt stays open for a late answer; an attempt
// whose connection was lost (expired ones too) is restored onto the
// device's next connection (adoptOpen) with the time its wait has left and
// rolled back there, so no attempt holds its Environment for want of an
// answer, and no fence is forgotten.
//
// Releasing an admission or closing an Executor never reaches this file:
// neither suspends, resumes or reclaims anything (daemon-protocol.txt:7).

// Errors of SuspendEnvironment and ResumeEnvironment.
var (
	// ErrSuspensionOpen: the Environment already has an unsettled attempt.
	ErrSuspensionOpen = errors.New("gateway: the Environment already has an unsettled suspension attempt")
	// ErrSuspensionExpired is ErrSuspensionOpen for an attempt that expired
	// unanswered: it no longer holds the Environment's work, and it still
	// refuses a new attempt until it settles.
	ErrSuspensionExpired = fmt.Errorf("%w: it expired unanswered (answer_timeout)", ErrSuspensionOpen)
	// ErrNotSuspended: the Environment has no unsettled attempt to resume.
	ErrNotSuspended = errors.New("gateway: the Environment has no unsettled suspension attempt")
	// ErrDeviceOffline: the device hosting the Environment (or the
	// attempt's device) has no connection now.
	ErrDeviceOffline = errors.New("gateway: the device is not connected")
)

// CodeAnswerTimeout is the error code an attempt records when it expires
// (internal/suspend).
const CodeAnswerTimeout = suspend.CodeAnswerTimeout

// ReadSuspended is the unavailable reason of an idle read or export of an
// Environment an unsettled suspension attempt holds: nothing was placed.
const ReadSuspended = "environment_suspended"

// SuspensionRefused is a request the suspension machine refused before it
// left Core (the attempt is not in a state that admits it).
type SuspensionRefused = suspend.Refused

// wireEnvironment is the environment_id Core names an Environment by on the
// wire (its bound local Environment's ID, as for reads) and the device that
// hosts it.
//
// decision: only an Environment with a local binding that a device hosts
// has something to quiesce (daemon-protocol.txt:96 fences the
// Environment's workspace, which lives on its device); the binding's ID is
// the identity runtime_prepare and reads already use. An Environment of
// type none, or a local one stored before registration that no device
// hosts, answers ErrNoWorkspace.
func (g *Gateway) wireEnvironment(ctx context.Context, envID string) (wireID, deviceID string, err error) {
	env, err := g.cfg.Store.GetEnvironment(ctx, envID)
	if err != nil {
		return "", "", err
	}
	t, err := wire.ParseEnvironmentType(env.Type)
	var b wire.LocalEnvironment
	if err != nil || !t.Local() || env.DeviceID == "" || len(env.Binding) == 0 || json.Unmarshal(env.Binding, &b) != nil || b.ID == "" || len(b.ID) > wire.MaxIDBytes {
		return "", "", ErrNoWorkspace
	}
	return b.ID, env.DeviceID, nil
}

// hostConn is the device's current connection.
//
// decision: an attempt goes only to the device that hosts its Environment
// (its resume to the device the attempt was sent to): a valid credential and
// connection are never authority over another binding
// (daemon-protocol.txt:19), so neither the caller nor "the only connected
// device" chooses it.
func (g *Gateway) hostConn(deviceID string) (*conn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.conns[deviceID]; c != nil {
		return c, nil
	}
	return nil, ErrDeviceOffline
}

// SuspendEnvironment starts a suspension attempt of the Environment on the
// device that hosts it and, with wait, waits a bounded time for the
// quiesce's answer. It returns the attempt as stored.
func (g *Gateway) SuspendEnvironment(ctx context.Context, envID string, wait bool) (store.Suspension, error) {
	wireEnv, deviceID, err := g.wireEnvironment(ctx, envID)
	if err != nil {
		return store.Suspension{}, err
	}
	// Only a better answer when an attempt is already open; the conditional
	// insert below decides.
	//
	// decision: an expired attempt refuses a new one as any open attempt
	// does, until an answer settles it (a late one, or that of a rollback
	// the operator sends again with resume rollback true). Its rollback
	// went out and was not answered, and a deadline after dispatch leaves
	// the effect unknown (daemon-protocol.txt:158): the Runtime may still
	// hold the Environment's fence under the old suspend_id, which is
	// persisted fencing (daemon-protocol.txt:78), and it refuses a quiesce
	// of a fenced Environment under another suspend_id (resource_busy). A
	// second attempt would prove nothing the first cannot, and two open
	// attempts of one Environment would each have to be rolled back on
	// every new connection. What expiry does bound is the Environment's
	// work: it is placed again (suspended, suspend.Holds).
	if open, err := g.cfg.Store.LatestSuspension(ctx, envID); err == nil && !open.Settled {
		if open.State == suspension.StateExpired.String() {
			return store.Suspension{}, ErrSuspensionExpired
		}
		return store.Suspension{}, ErrSuspensionOpen
	}
	c, err := g.hostConn(deviceID)
	if err != nil {
		return store.Suspension{}, err
	}
	initial := suspension.Table.StateName(suspension.Table.Initial)
	a := store.Suspension{ID: newUUID(), EnvironmentID: envID, DeviceID: c.deviceID, OwnerEpoch: c.epoch, State: initial, CreatedAt: g.cfg.Clock.Now().UTC()}
	// The attempt is stored before anything is sent, so a Core that stops
	// right after the send still knows the attempt its resume must name.
	if err := g.cfg.Store.CreateSuspension(ctx, a); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return store.Suspension{}, ErrSuspensionOpen
		}
		return store.Suspension{}, err
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	return c.susp.Quiesce(ctx, g.ctx, pc, a, wireEnv, wait)
}

// ResumeEnvironment resumes the Environment's unsettled attempt (rollback
// abandons it) on its device's current connection and, with wait, waits a
// bounded time for the answer. An attempt whose instance is not on that connection (it
// was sent on an earlier connection, or by a Core that has since
// restarted) is restored there from the store first: the connection that
// carried its last request is gone, so the table's connection_lost step
// gives the state it restarts from (an unanswered request: uncertain).
func (g *Gateway) ResumeEnvironment(ctx context.Context, envID string, rollback, wait bool) (store.Suspension, error) {
	wireEnv, _, err := g.wireEnvironment(ctx, envID)
	if err != nil {
		return store.Suspension{}, err
	}
	a, err := g.cfg.Store.LatestSuspension(ctx, envID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.Settled) {
		return a, ErrNotSuspended
	}
	if err != nil {
		return store.Suspension{}, err
	}
	c, err := g.hostConn(a.DeviceID)
	if err != nil {
		return a, err
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	return c.susp.Resume(ctx, g.ctx, pc, a, wireEnv, rollback, wait)
}

// adoptOpen restores onto c, once its connection is live, every unsettled
// attempt of its device that c does not carry yet, so that the attempt's
// answer_wait runs again (for the time it has left) and a lost attempt is
// rolled back on this connection if nobody resumes it first. It runs on
// c's loop.
//
// decision: an attempt still idle (its quiesce not yet written by the
// SuspendEnvironment that created it) is that call's to settle; the idle
// attempts a stopped Core left are taken to uncertain at start
// (reconcileSuspensions).
func (g *Gateway) adoptOpen(c *conn, d *peer.Driver) {
	if !g.owns(c) {
		return
	}
	ctx, cancel := g.storeCtx()
	defer cancel()
	open, err := g.cfg.Store.OpenSuspensions(ctx)
	if err != nil {
		c.log.Warn("gateway: open suspension attempts", "err", err)
		return
	}
	initial := suspension.Table.StateName(suspension.Table.Initial)
	for _, a := range open {
		if a.DeviceID != c.deviceID || a.State == initial {
			continue
		}
		if _, ok := d.Lookup(suspend.Key(a.ID)); ok {
			continue
		}
		wireEnv, _, err := g.wireEnvironment(ctx, a.EnvironmentID)
		if err != nil {
			c.log.Warn("gateway: suspension attempt not restored", "suspend_id", a.ID, "err", err)
			continue
		}
		if err := c.susp.Adopt(d, a, wireEnv); err != nil {
			c.log.Warn("gateway: suspension attempt not restored", "suspend_id", a.ID, "err", err)
		}
	}
}

// connMoved is the Saver's part for the connection instance: when the
// connection goes live (its first valid heartbeat), the device's open
// attempts are adopted on its loop.
func (c *conn) connMoved(i *peer.Instance) {
	if connection.State(i.State()) != connection.StateLive {
		return
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if pc == nil {
		return
	}
	c.g.wg.Add(1)
	go func() {
		defer c.g.wg.Done()
		_ = pc.Do(c.g.ctx, func(d *peer.Driver) { c.g.adoptOpen(c, d) })
	}()
}

// adoptLeftOver runs each lease pass: every connection of this replica
// that is live adopts the open attempts of its device that an older
// connection's epoch still carries in the store.
//
// decision: a connection adopts its device's open attempts once, when it
// goes live (connMoved). An attempt that was idle then, or whose older
// connection's replica had died and not yet been reaped, is taken to
// uncertain later, by the replica that reaps that lease
// (reconcileLease), possibly another one; unless a connection adopts it,
// its answer_wait never runs and it holds its Environment until the
// device's next connection. Looking again each pass bounds that by the
// renew interval; an attempt the connection carries already, or that is
// still idle, is left as adoptOpen leaves it.
func (g *Gateway) adoptLeftOver() {
	ctx, cancel := g.storeCtx()
	open, err := g.cfg.Store.OpenSuspensions(ctx)
	cancel()
	if err != nil {
		g.cfg.Logger.Warn("gateway: open suspension attempts", "err", err)
		return
	}
	initial := suspension.Table.StateName(suspension.Table.Initial)
	done := map[string]bool{} // adoptOpen adopts all of a device's at once
	for _, a := range open {
		if a.State == initial || done[a.DeviceID] {
			continue
		}
		g.mu.Lock()
		c := g.conns[a.DeviceID]
		g.mu.Unlock()
		if c == nil || c.epoch == a.OwnerEpoch {
			continue
		}
		if _, live := c.snapshot(); !live || !g.leaseHeld(c) {
			continue // connMoved adopts once it is live
		}
		c.mu.Lock()
		pc := c.pc
		c.mu.Unlock()
		if pc == nil {
			continue
		}
		done[a.DeviceID] = true
		ctx, cancel := g.storeCtx()
		_ = pc.Do(ctx, func(d *peer.Driver) { g.adoptOpen(c, d) })
		cancel()
	}
}

// reconcileSuspensions runs at start, before any connection
// (internal/suspend).
func (g *Gateway) reconcileSuspensions(ctx context.Context) {
	suspend.Reconcile(ctx, g.cfg.Store, g.cfg.Clock.Now().UTC(), g.cfg.Logger, nil)
}

// suspended reports whether an unsettled attempt holds the Environment:
// Core places none of its work (Turns, idle reads and exports, writes,
// initialization) meanwhile. Other Environments are not held, on the same
// device either, and neither is the Environment of an expired attempt (its
// resume or rollback went unanswered: released, though not settled). A
// store error holds it too.
//
// decision: while an attempt is open the Runtime admits no new work of the
// Environment it fences (wire-reference.md §2.12), so work placed there
// could only fail; it stays queued (a Turn) or answers unavailable (a read)
// until the attempt settles, which answer_wait bounds. The fence is the
// Environment's, not the device's: its suspend_id names one Environment
// (daemon-protocol.txt:78), and the attempt goes only to the device hosting
// it (hostConn).
func (g *Gateway) suspended(ctx context.Context, envID string) bool {
	a, err := g.cfg.Store.LatestSuspension(ctx, envID)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	return err != nil || suspend.Holds(a)
}

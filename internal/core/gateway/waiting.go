package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/turn"
)

// Why a queued Turn is not placed. A user sees the reason in the Turn's
// status (`waiting`) and, each time it changes, as a `placement` event in
// its stream (issue 22: users of systems like this one most often cannot
// tell why a job waits).
const (
	// WaitNoDevice: no device of the Session's project is connected (for
	// a registered Environment: the device that hosts it).
	WaitNoDevice = "no_device"
	// WaitKindNotDeclared: connected devices of the project declare no
	// Harness of the Session's agent kind.
	WaitKindNotDeclared = "kind_not_declared"
	// WaitKindUnavailable: the kind is declared, unavailable everywhere.
	WaitKindUnavailable = "kind_unavailable"
	// WaitNotQualified: the engine profile of the Session's kind does not
	// qualify a feature of its Agent (core/agent.Profile).
	WaitNotQualified = "not_qualified"
	// WaitCapabilityMissing: every device declaring the kind lacks a
	// capability the Turn requires (wire.RequiredCapabilities).
	WaitCapabilityMissing = "capability_missing"
	// WaitEnvironmentSuspended: a suspension attempt holds the
	// Session's Environment.
	WaitEnvironmentSuspended = "environment_suspended"
	// WaitDeviceBusy: a device admits the Turn but is at its admission
	// bound, initializing or holding the workspace for a read or write.
	WaitDeviceBusy = "device_busy"
	// WaitSessionBusy: an earlier Turn of the Session, or a read or write
	// of its workspace, is in flight.
	WaitSessionBusy = "session_busy"
	// WaitOtherReplica: no device the Turn may use is connected to this
	// Core replica, and one is connected to another replica, which places
	// it (docs/deployment.md).
	WaitOtherReplica = "device_on_other_replica"
)

// Waiting is why a queued Turn is not placed, as the scheduler last saw
// it; Since is when that reason began.
type Waiting struct {
	Reason string    `json:"reason"`
	Detail string    `json:"detail"`
	Since  time.Time `json:"since"`
	// unplaced is since when, without a break, no device of the project
	// declared what the Turn requires (zero while it waits for another
	// reason).
	unplaced time.Time
	// gen and checked are the placeGen and the time at which the
	// scheduler last planned the Turn (skipUnmet).
	gen     uint64
	checked time.Time
}

// DefaultPlacementTimeout is how long a Turn waits for a device that
// declares what it requires before it fails unplaceable.
//
// decision: five minutes, local policy (spec/turn.yaml, unplaceable):
// long enough for a Runtime that restarts or a Harness that is being
// installed, short enough that a Turn nothing can run does not wait
// forever (daemon-protocol.txt:156).
const DefaultPlacementTimeout = 5 * time.Minute

// unmet reports whether a reason says that no device of the project
// declares what the Turn requires; only those end in unplaceable (a
// suspension, a busy device or Session passes).
func unmet(reason string) bool {
	switch reason {
	case WaitNoDevice, WaitKindNotDeclared, WaitKindUnavailable, WaitCapabilityMissing, WaitNotQualified:
		return true
	}
	return false
}

// Waiting reports why the queued Turn turnID is not placed, if the
// scheduler has considered it since this Core started.
func (g *Gateway) Waiting(turnID string) (Waiting, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := g.waiting[turnID]
	return w, ok
}

// why tells why no connection admits p's Turn, looking at the devices of
// its project (and, for a registered Environment, the one that hosts it).
func (g *Gateway) why(p turnPlan) Waiting {
	g.mu.Lock()
	list := make([]*conn, 0, len(g.conns))
	for _, c := range g.conns {
		list = append(list, c)
	}
	g.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].deviceID < list[j].deviceID })
	kind := p.session.AgentKind
	hosting, declaring, available := 0, 0, 0
	var lacks []string
	var lacking string
	for _, c := range list {
		decl, ok := c.snapshot()
		if !hosts(c, p) || !ok {
			continue
		}
		hosting++
		for _, k := range decl.SupportedAgentKinds {
			if k.Kind != kind {
				continue
			}
			declaring++
			if k.Available == nil || !*k.Available {
				continue
			}
			available++
			if m := p.required.Missing(k.Capabilities, true); len(m) > 0 && lacks == nil {
				lacks, lacking = m, c.deviceID
			}
		}
	}
	if hosting == 0 && g.cfg.Replica.Shared {
		if dev := g.connectedElsewhere(p); dev != "" {
			return Waiting{Reason: WaitOtherReplica, Detail: "the device " + dev + " is connected to another Core replica"}
		}
	}
	switch {
	case hosting == 0 && p.admit.Environment.Local():
		return Waiting{Reason: WaitNoDevice, Detail: "the device " + p.env.DeviceID + " that hosts the Session's Environment is not connected"}
	case hosting == 0:
		return Waiting{Reason: WaitNoDevice, Detail: "no device of project " + p.session.Project + " is connected"}
	case declaring == 0:
		return Waiting{Reason: WaitKindNotDeclared, Detail: "no connected device of the project declares agent kind " + kind}
	case available == 0:
		return Waiting{Reason: WaitKindUnavailable, Detail: "agent kind " + kind + " is declared unavailable on every connected device"}
	case lacks != nil:
		return Waiting{Reason: WaitCapabilityMissing, Detail: "agent kind " + kind + " on " + lacking + " lacks " + strings.Join(lacks, ", ")}
	}
	return Waiting{Reason: WaitDeviceBusy, Detail: "a device admits the Turn and is busy"}
}

// noteWaiting records why t is not placed; a new reason is journaled as
// a placement event, so the Turn's stream shows it as it changes. A Turn
// whose requirement no device has declared for the placement timeout
// fails unplaceable, with the reason and its words as evidence.
func (g *Gateway) noteWaiting(ctx context.Context, t store.Turn, w Waiting) {
	now := g.cfg.Clock.Now().UTC()
	g.mu.Lock()
	prev, ok := g.waiting[t.ID]
	switch {
	case !unmet(w.Reason):
	case ok && !prev.unplaced.IsZero():
		w.unplaced = prev.unplaced
	default:
		w.unplaced = now
	}
	same := ok && prev.Reason == w.Reason && prev.Detail == w.Detail
	if same {
		w.Since = prev.Since
	} else {
		w.Since = now
	}
	g.waiting[t.ID] = w
	g.mu.Unlock()
	if !w.unplaced.IsZero() && now.Sub(w.unplaced) >= g.cfg.PlacementTimeout {
		g.unplaceable(ctx, t, w)
		return
	}
	if same {
		return
	}
	raw, _ := json.Marshal(map[string]string{"reason": w.Reason, "detail": w.Detail})
	if _, err := g.cfg.Journal.Append(ctx, store.Event{TurnID: t.ID, Type: "placement", Payload: raw, At: w.Since}); err != nil {
		g.cfg.Logger.Warn("gateway: journal a placement reason", "turn_id", t.ID, "err", err)
	}
}

// forgetWaiting drops the reasons of Turns that left the queue.
func (g *Gateway) forgetWaiting(ids ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		delete(g.waiting, id)
	}
}

// pruneWaiting keeps the reasons of the Turns in due only.
func (g *Gateway) pruneWaiting(due []store.Turn) {
	keep := make(map[string]bool, len(due))
	for _, t := range due {
		keep[t.ID] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for id := range g.waiting {
		if !keep[id] {
			delete(g.waiting, id)
		}
	}
}

// unplaceable fails a queued Turn that no device of its project can run.
func (g *Gateway) unplaceable(ctx context.Context, t store.Turn, w Waiting) {
	ev, _ := json.Marshal(map[string]string{"waiting": w.Reason, "detail": w.Detail})
	if _, err := g.moveStored(ctx, t, turn.Unplaceable, turn.Args{Outcome: store.Outcome{Evidence: ev}}); err != nil {
		if !errors.Is(err, store.ErrStale) {
			g.cfg.Logger.Warn("gateway: fail an unplaceable Turn", "turn_id", t.ID, "err", err)
		}
		return
	}
	g.forgetWaiting(t.ID)
	g.cfg.Logger.Info("gateway: a Turn no device can run failed unplaceable", "turn_id", t.ID, "waiting", w.Reason, "detail", w.Detail)
}

// connectedElsewhere names a device p's Turn may use that is connected to
// another replica, or "".
//
// decision: a replica judges only the devices connected to it; a Turn no
// device here can run is not failed unplaceable while a device of its
// project (for a registered Environment, its host) is connected to
// another replica, whose scheduler places it. The store's device
// registry says where each device is connected (its lease's replica),
// read at most once a second for all Turns.
func (g *Gateway) connectedElsewhere(p turnPlan) string {
	now := g.cfg.Clock.Now()
	g.mu.Lock()
	devs, at := g.elsewhere, g.elsewhereAt
	g.mu.Unlock()
	if at.IsZero() || now.Sub(at) >= time.Second {
		ctx, cancel := g.storeCtx()
		list, err := g.cfg.Store.ListDevices(ctx)
		cancel()
		if err != nil {
			g.cfg.Logger.Warn("gateway: list the devices other replicas hold", "err", err)
			return ""
		}
		devs = devs[:0:0]
		for _, d := range list {
			if d.Connected && d.ReplicaID != "" && d.ReplicaID != g.cfg.Replica.ID {
				devs = append(devs, d)
			}
		}
		g.mu.Lock()
		g.elsewhere, g.elsewhereAt = devs, now
		g.mu.Unlock()
	}
	for _, d := range devs {
		if d.Project != p.session.Project {
			continue
		}
		if p.admit.Environment.Local() && d.ID != p.env.DeviceID {
			continue
		}
		return d.ID
	}
	return ""
}

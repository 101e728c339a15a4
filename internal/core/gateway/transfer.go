package gateway

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/envinit"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/wire"
)

// Environment initialization (daemon-protocol.txt:104): the transfer
// lifecycle is the transfer module (internal/transfer); here the gateway
// decides what to send (the Environment's declaration), records the
// outcome on the Environment and turns it into the work's outcome.

// Public reasons of work that an initialization stopped.
const (
	// ReasonInitializationFailed: the Turn failed because its
	// Environment's initialization ended without completing; the
	// Environment's initialization status keeps the transfer's code.
	ReasonInitializationFailed = "initialization_failed"
	// ReadInitializationFailed is the unavailable reason of such a read.
	ReadInitializationFailed = "initialization_failed"
)

// newUUID is a random canonical UUID: runtime_prepare's transfer ID must
// be one (wire-reference.md §2.1), as are a write's mutation ID and a
// suspension's IDs.
func newUUID() string { return credential.NewUUID() }

// initOutcome is what an initialization attempt on one connection gave.
type initOutcome struct {
	ok     bool
	retry  bool // nothing applied, cause transient: the work may be placed again
	status store.Initialization
}

// initialize runs the Environment's declared initialization on c unless it
// already completed there. It records the outcome on the Environment.
func (g *Gateway) initialize(c *conn, env store.Environment, sessionID string) initOutcome {
	spec, err := envinit.Parse(env.Initialization)
	base := store.Initialization{EnvironmentID: env.ID, DeviceID: c.deviceID, OwnerEpoch: c.epoch, ExitCode: -1}
	if err != nil {
		// The API validates a declaration before storing it; a stored one
		// that no longer parses is sent nowhere.
		base.Outcome, base.ErrorCode = "not_sent", "invalid_declaration"
		return g.recordInit(initOutcome{status: base})
	}
	if spec.Empty() {
		return initOutcome{ok: true}
	}
	spec, err = spec.Open(func(name string, sealed []byte) ([]byte, error) {
		return g.cfg.Sealer.Open(env.Project, envinit.SecretName(env.ID, name), sealed)
	})
	if err != nil {
		// A value sealed under another key (the data directory moved
		// without its vault.key) is sent nowhere, and says why.
		c.log.Warn("gateway: an initialization variable does not open", "environment_id", env.ID, "err", err)
		base.Outcome, base.ErrorCode = "not_sent", "sealed_value_unreadable"
		return g.recordInit(initOutcome{status: base})
	}
	var binding wire.LocalEnvironment
	if len(env.Binding) == 0 || json.Unmarshal(env.Binding, &binding) != nil || !wire.IsCanonicalUUID(binding.ID) {
		base.Outcome, base.ErrorCode = "not_sent", "invalid_binding"
		return g.recordInit(initOutcome{status: base})
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	steps := spec.Steps(binding.ID, envinit.SessionUUID(sessionID))
	o := c.xfers.Initialize(g.ctx, pc, g.cfg.Clock, c.log.With("environment_id", env.ID), env.ID, steps, base)
	g.kick() // work that avoided the connection may go now
	out := initOutcome{ok: o.OK, retry: o.Retry, status: o.Status}
	if o.Record {
		return g.recordInit(out)
	}
	return out
}

func (g *Gateway) recordInit(o initOutcome) initOutcome {
	o.status.At = g.cfg.Clock.Now().UTC()
	ctx, cancel := g.storeCtx()
	defer cancel()
	if err := g.cfg.Store.RecordInitialization(ctx, o.status); err != nil {
		g.cfg.Logger.Warn("gateway: record initialization", "environment_id", o.status.EnvironmentID, "err", err)
	}
	return o
}

// placeable reports whether the worker may place p's work on c now: no
// initialization runs there, and no suspension attempt holds p's
// Environment (suspension.go; other Environments' attempts do not).
func (g *Gateway) placeable(ctx context.Context, c *conn, p turnPlan) bool {
	return !c.xfers.Busy() && !g.suspended(ctx, p.env.ID)
}

// initializeTurn initializes the claimed Turn's Environment on c before
// its execution_prepare. Nothing of the Turn was sent yet, so a transient
// end returns it to the queue with backoff; any other end fails it with
// ReasonInitializationFailed and the transfer's outcome as evidence.
func (g *Gateway) initializeTurn(c *conn, p turnPlan, in *turn.Instance, log *slog.Logger) bool {
	o := g.initialize(c, p.env, p.session.ID)
	if o.ok {
		return true
	}
	if o.retry {
		g.requeue(log, in, p.turn.Attempts)
		return false
	}
	ev, _ := json.Marshal(map[string]string{"initialization": o.status.Outcome, "step": o.status.Step, "initialization_error": o.status.ErrorCode})
	g.fail(log, in, turn.InitializationFailed, store.Outcome{Evidence: ev}, nil)
	return false
}

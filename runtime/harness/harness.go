package harness

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentwire/agentwire/internal/peer"
	"sort"
	"sync"

	"github.com/agentwire/agentwire/wire"
)

// Declaration is what an adapter declares about its agent kind.
type Declaration struct {
	// Kind is the agent kind a prompt request selects.
	Kind string
	// Available is false when the adapter exists but cannot run now (its
	// binary is missing, say). Capabilities are declared either way.
	Available bool
	// Version is the Harness version, when known.
	Version string
	// Capabilities decides every field; an unspecified one is invalid.
	Capabilities wire.AgentKindCapabilities
}

// Validate checks the declaration whole.
func (d Declaration) Validate() error {
	if d.Kind == "" {
		return errors.New("harness: declaration: kind is required")
	}
	if len(d.Kind) > wire.MaxAgentKindBytes {
		return fmt.Errorf("harness: declaration: kind is longer than %d bytes", wire.MaxAgentKindBytes)
	}
	if err := d.Capabilities.Validate(); err != nil {
		return fmt.Errorf("harness: declaration of %s: %w", d.Kind, err)
	}
	return nil
}

// Wire is the declaration as a heartbeat lists it.
func (d Declaration) Wire() wire.SupportedAgentKind {
	avail := d.Available
	return wire.SupportedAgentKind{Kind: d.Kind, Available: &avail, Version: d.Version, Capabilities: d.Capabilities}
}

// Adapter is one Harness. NewExecutor performs native preparation for an
// immutable configuration and returns the Executor that will run the
// Session's Turns; it may take long and runs outside the receive loop.
type Adapter interface {
	Declaration() Declaration
	NewExecutor(ctx context.Context, cfg ExecutorConfig) (Executor, error)
}

// ExecutorConfig is what preparation knows: the Session and its immutable
// configuration, with no Run input (daemon-protocol.txt:100).
type ExecutorConfig struct {
	SessionID     string
	Configuration wire.PromptRequest
	// Declaration is the snapshot the Executor was admitted with.
	Declaration Declaration
	// WorkspaceDir is the absolute workspace directory of the Environment
	// the configuration is bound to (its local_environment, as the daemon
	// was configured with it): the Harness runs there. It is "" for an
	// Environment of type none (disable_execution_environment), where the
	// adapter uses its own default.
	WorkspaceDir string
}

// Executor is a native resource that runs Turns, one at a time.
type Executor interface {
	// Run executes one Turn and returns when the native work has settled:
	// normally (the final Done), after ctx was cancelled (a cancellation
	// that settled; Done may hold partial content), or with an error when
	// the Turn failed without a final snapshot. Events go out through emit
	// in order; an emit error means the connection is gone and Run should
	// settle its native work and return.
	Run(ctx context.Context, turn Turn, emit Emit) (wire.Done, error)
	// Close releases the native resource; an error keeps it owned.
	Close(ctx context.Context) error
}

// Emit sends one Run event (delta, thinking, tool_call, usage, error,
// permission_request, …) to Core.
type Emit func(ctx context.Context, p wire.Payload) error

// Turn is one execution of an Executor.
type Turn struct {
	RunID string
	Input wire.MessageInput
	// Declaration is the snapshot the Turn was admitted with: optional
	// operations check it before any native call.
	Declaration Declaration
	// Notify reports the native fate of active input written by Steer;
	// nil when the daemon does not listen (adapters check).
	Notify Notify
}

// ErrCancelUnsettled is what Executor.Run returns (wrapped, with the
// partial Done) when a cancelled Turn ended only because its process was
// killed: the native work never confirmed it stopped, and a kill does not
// prove cancellation (daemon-protocol.txt:147), so the daemon answers the
// cancellation with an unapplied receipt.
var ErrCancelUnsettled = errors.New("harness: the cancelled Turn was killed, not settled natively")

// ErrUnsupportedOperation is what an adapter returns for an operation it
// does not implement. Returned for an operation its declaration supports,
// it is a contract violation (see Snapshot.Check), distinct from
// unavailability, a failed native call or an uncertain write.
var ErrUnsupportedOperation = errors.New("harness: unsupported operation")

// ErrContractViolation marks a declared operation that answered unsupported.
var ErrContractViolation = errors.New("harness: contract violation: a declared operation answered unsupported")

// Classify turns an adapter's error for an operation the snapshot declares
// into ErrContractViolation when the adapter called it unsupported.
func Classify(declared bool, err error) error {
	if declared && errors.Is(err, ErrUnsupportedOperation) {
		return fmt.Errorf("%w: %v", ErrContractViolation, err)
	}
	return err
}

// Registry maps agent kinds to adapters. It is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	adapters map[string]entry
}

type entry struct {
	adapter Adapter
	decl    Declaration
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{adapters: map[string]entry{}} }

// Register validates a's declaration whole and only then adds it; a
// second adapter for the same kind is refused.
func (r *Registry) Register(a Adapter) error {
	d := a.Declaration()
	if err := d.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.adapters[d.Kind]; dup {
		return fmt.Errorf("harness: agent kind %s is already registered", d.Kind)
	}
	r.adapters[d.Kind] = entry{adapter: a, decl: d}
	return nil
}

// Lookup returns the adapter of kind and the declaration it registered.
func (r *Registry) Lookup(kind string) (Adapter, Declaration, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.adapters[kind]
	return e.adapter, e.decl, ok
}

// Kinds lists the declarations, sorted by kind, as a heartbeat declares them.
func (r *Registry) Kinds() []wire.SupportedAgentKind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]wire.SupportedAgentKind, 0, len(r.adapters))
	for _, e := range r.adapters {
		out = append(out, e.decl.Wire())
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Kind < out[b].Kind })
	return out
}

// Clock is the time a Runtime and its adapters read and the timers they
// arm (heartbeats, graces, timeouts); tests inject one they advance.
type Clock = peer.Clock

// Timer is a Clock's one-shot timer.
type Timer = peer.Timer

// SystemClock is the wall clock.
func SystemClock() Clock { return peer.SystemClock() }

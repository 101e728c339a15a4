package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/agentwire/agentwire/wire"
)

// The optional operations of an Executor, in one place. Run and Close are
// all an Executor must implement; each interface below is an operation the
// daemon looks for by type assertion when Core asks for it, and each backs
// the capabilities named in its comment. Implementing an interface grants
// nothing: the daemon calls it only when the Turn's declaration snapshot
// supports the capability (daemon-protocol.txt:27), and a declared
// capability whose operation is missing is refused to Core as unsupported.
//
// A Harness declares its capabilities with Supports; every Turn requires
// the ones EveryTurn lists, steering among them, so even a minimal
// Executor implements Steerer.

// Steerer is an Executor whose running Turn accepts active input
// (prompt_steer). It backs the steering capability, and, with the
// InputNotice it reports through Turn.Notify, durable_input_receipts.
type Steerer interface {
	// Steer writes one active input natively into the running Turn runID.
	// It returns nil once the native write completed (the "written" phase,
	// daemon-protocol.txt:143), an error when it failed or ctx ended, and
	// ErrRunInactive when runID is not running here, having written
	// nothing. Steer may be called as soon as Run was, before the Executor
	// opened its Turn to input: the Runtime then tries again, with backoff,
	// while the Run has not settled. The native acceptance (or refusal) is
	// reported through Turn.Notify, after or before Steer returns.
	Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error
}

// Decider is an Executor whose running Turn takes Core's answers to the
// questions it asked. It backs permissions (permission and user-choice
// decisions), function_tools (function results) and function_result_images
// (an image in a function result).
type Decider interface {
	// Decide submits the answer natively; nil means it was applied, i.e.
	// the interaction's operation settled (daemon-protocol.txt:145).
	// ErrRunInactive means the Turn no longer waits for it.
	Decide(ctx context.Context, runID string, a Answer) error
}

// Answer is Core's answer to one open interaction. Exactly one of the
// pointers is set.
type Answer struct {
	// InteractionID is the request ID, ask ID or call ID.
	InteractionID string
	Permission    *wire.PermissionDecision
	Choice        *wire.PromptForUserChoiceDecision
	Result        *wire.FunctionResult
}

// Supports returns a declaration that decides every capability: those
// named, by their JSON names (wire.CapabilityFields lists them with what
// each means), are Supported and every other one is Unsupported. A name
// that is not a capability is an error naming it.
//
// A capability the protocol adds later is Unsupported in a declaration
// built this way until the embedder names it: Supports never claims an
// operation the embedder did not choose to claim.
func Supports(names ...string) (wire.AgentKindCapabilities, error) {
	var c wire.AgentKindCapabilities
	for _, f := range wire.CapabilityFields() {
		*f.Of(&c) = wire.Unsupported
	}
	for _, n := range names {
		f, ok := wire.CapabilityFieldByName(n)
		if !ok {
			return wire.AgentKindCapabilities{}, fmt.Errorf("harness: %q is not a capability (known: %s)", n, strings.Join(capabilityNames(), ", "))
		}
		*f.Of(&c) = wire.Supported
	}
	return c, nil
}

// EveryTurn lists the capabilities Core requires of a Harness for every
// Turn, whatever its Session and Agent (the admission table's always row,
// wire.RequiredCapabilities), in spec order. A Session adds its own on
// top: environment_none or local_environment with the workspace ones for
// its Environment, subagent_control for an Agent without multi-agent (the
// default), and so on.
func EveryTurn() []string {
	// decision: derived from the admission table rather than written out,
	// so it cannot drift from what Core enforces: the always row is what
	// every combination of the conditional rows' inputs still requires.
	var every map[string]bool
	for _, env := range []wire.EnvironmentType{wire.EnvironmentTypeNone, wire.EnvironmentTypeSelfHosted} {
		for _, multi := range []bool{false, true} {
			s, err := wire.RequiredCapabilities(wire.AdmissionInput{Environment: env, Agent: wire.AgentFeatures{MultiAgentEnabled: multi}})
			if err != nil {
				panic("harness: the admission table refused a valid input: " + err.Error())
			}
			if every == nil {
				every = map[string]bool{}
				for _, n := range s.Names() {
					every[n] = true
				}
			}
			for n := range every {
				every[n] = every[n] && s.Has(n)
			}
		}
	}
	var out []string
	for _, f := range wire.CapabilityFields() {
		if every[f.Name] {
			out = append(out, f.Name)
		}
	}
	return out
}

func capabilityNames() []string {
	var out []string
	for _, f := range wire.CapabilityFields() {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// MustSupport is Supports for a declaration written in code, whose names
// are fixed when it is compiled: a name that is not a capability panics,
// as regexp.MustCompile does for a bad pattern.
func MustSupport(names ...string) wire.AgentKindCapabilities {
	c, err := Supports(names...)
	if err != nil {
		panic(err)
	}
	return c
}

package harness

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/wire"
)

// What Core sends to a Turn that is already running: active input
// (prompt_steer) and the answers to the questions the Turn asked
// (permission and user-choice decisions, function results). An Executor
// takes them by implementing Steerer and Decider; the daemon checks the
// Turn's declaration snapshot before it calls either (daemon-protocol.txt:27).

// Steerer is an Executor whose running Turn accepts active input.
type Steerer interface {
	// Steer writes one active input natively into the running Turn runID.
	// It returns nil once the native write completed (the "written" phase,
	// daemon-protocol.txt:143), an error when it failed or ctx ended. The
	// native acceptance is reported later through Turn.Notify.
	Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error
}

// Decider is an Executor whose running Turn takes Core's answers.
type Decider interface {
	// Decide submits the answer natively; nil means it was applied, i.e.
	// the interaction's operation settled (daemon-protocol.txt:145).
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

// InputNotice is the native fate of an active input after its write: the
// adapter consumed it (Accepted) or refused it with a finite code.
type InputNotice struct {
	InputID  string
	Accepted bool
	// Code is a prompt_steer_ack error code when Accepted is false.
	Code  string
	Error string
}

// Notify reports an InputNotice; it never blocks for long.
type Notify func(InputNotice)

// ErrRunInactive is what Steer and Decide return when the Turn they name
// is not running on the Executor (any more).
var ErrRunInactive = errRunInactive{}

type errRunInactive struct{}

func (errRunInactive) Error() string { return "harness: the Run is not active" }

// Withdrawal withdraws an open permission request of the running Turn: the
// Harness resolved it itself (its own timeout fired, say), so no answer is
// owed. Emitted through Emit, it travels as permission_cancel under the
// request's interaction ID (daemon-protocol.txt:76: permission-cancel
// envelopes use the interaction ID); Core's answer after it is refused.
// Only a permission request the Turn has not had an answer for can be
// withdrawn.
type Withdrawal struct {
	RequestID string
}

// MessageType is permission_cancel.
func (Withdrawal) MessageType() string { return wire.TypePermissionCancel }

// Validate checks the interaction ID.
func (w Withdrawal) Validate() error {
	if w.RequestID == "" {
		return errors.New("harness: a withdrawal names the request_id it withdraws")
	}
	return nil
}

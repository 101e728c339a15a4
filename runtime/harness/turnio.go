package harness

import (
	"errors"

	"github.com/agentwire/agentwire/wire"
)

// What a running Turn exchanges with the daemon besides Emit: the native
// fate of an active input (Notify), the refusal of an operation on a Run
// that is not running, and a withdrawn question. The optional operations
// that deliver Core's input and answers are in optional.go.

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

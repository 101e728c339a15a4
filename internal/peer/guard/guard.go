// Package guard holds the table guards that are pure predicates: each
// function answers the guard of the same name in spec/*.yaml from the
// frame's payload and the values a peer keeps for the instance. Core's and
// the Runtime's hooks call them, and so does the model checker, so the
// checker explores the guards the peers run rather than copies of them.
//
// A guard that needs a peer's own state beyond a value or two (a store
// read, a lock over a shared record) stays in that peer's hooks; it then
// calls the predicate here for the part that reads the frame.
package guard

import (
	"crypto/sha256"
	"encoding/json"

	"github.com/agentwire/agentwire/wire"
)

// Retryable receipt codes of prompt_steer_ack: the input was not consumed
// and may be delivered again (daemon-protocol.txt:133).
const (
	CodeNotReady       = "not_ready"
	CodeBusy           = "busy"
	CodeOutcomeUnknown = "outcome_unknown"
)

// NewerRevision (preparation): the status's revision is higher than the
// highest one applied to the handle.
func NewerRevision(p wire.Payload, applied uint64) bool {
	s, ok := p.(wire.PreparationStatus)
	return ok && s.Revision > applied
}

// CapacityRefusal (preparation): execution_prepare was rejected with
// preparation_capacity, the one refusal that leaves the Turn unclaimed.
func CapacityRefusal(p wire.Payload) bool {
	s, ok := p.(wire.PreparationStatus)
	return ok && s.LeavesTurnUnclaimed()
}

// RejectsPrepare (preparation): the rejected operation is execution_prepare.
func RejectsPrepare(p wire.Payload) bool {
	s, ok := p.(wire.PreparationStatus)
	return ok && s.Operation == wire.PreparationOpPrepare
}

// RejectsStart (preparation): the rejected operation is execution_start.
func RejectsStart(p wire.Payload) bool {
	s, ok := p.(wire.PreparationStatus)
	return ok && s.Operation == wire.PreparationOpStart
}

// Fingerprint is what identifies an execution_prepare's payload for
// same_fingerprint: the SHA-256 of its JSON encoding.
func Fingerprint(p wire.Payload) [32]byte {
	b, _ := json.Marshal(p)
	return sha256.Sum256(b)
}

// SameFingerprint (preparation): a repeated execution_prepare carries the
// payload the first one had.
func SameFingerprint(p wire.Payload, first [32]byte) bool {
	ep, ok := p.(wire.ExecutionPrepare)
	return ok && Fingerprint(ep) == first
}

// ValidDeclaration (connection): the heartbeat's declaration validates.
func ValidDeclaration(p wire.Payload) bool {
	hb, ok := p.(wire.Heartbeat)
	return ok && hb.Validate() == nil
}

// MatchesCancelDelivery (run): the receipt echoes a delivery ID of a
// prompt_cancel sent for the Run; sent reports whether one was.
func MatchesCancelDelivery(p wire.Payload, sent func(delivery string) bool) bool {
	ack, ok := p.(wire.InteractionDecisionAck)
	return ok && ack.DeliveryID != "" && sent(ack.DeliveryID)
}

// UnsettledCancel (run): the receipt echoes a delivery ID of a
// prompt_cancel sent for the Run and reports it not applied with
// runtime_error, which a cancellation receipt uses when the native work
// ended without settlement (the Harness was killed).
func UnsettledCancel(p wire.Payload, sent func(delivery string) bool) bool {
	ack, ok := p.(wire.InteractionDecisionAck)
	return ok && MatchesCancelDelivery(p, sent) && ack.Applied != nil && !*ack.Applied &&
		ack.ErrorCode == wire.InteractionCodeRuntimeError
}

// RetryableCode (input): the receipt refuses the input with not_ready or
// busy.
func RetryableCode(p wire.Payload) bool {
	ack, ok := p.(wire.PromptSteerAck)
	return ok && (ack.ErrorCode == CodeNotReady || ack.ErrorCode == CodeBusy)
}

// UnknownCode (input): the receipt reports the write's outcome unknown.
func UnknownCode(p wire.Payload) bool {
	ack, ok := p.(wire.PromptSteerAck)
	return ok && ack.ErrorCode == CodeOutcomeUnknown
}

// CurrentDelivery (interaction): the receipt echoes the delivery ID of the
// answer in flight.
func CurrentDelivery(p wire.Payload, current string) bool {
	ack, ok := p.(wire.InteractionDecisionAck)
	return ok && ack.DeliveryID != "" && ack.DeliveryID == current
}

// RetryLater (interaction): the receipt of the answer in flight says
// not_ready.
func RetryLater(p wire.Payload, current string) bool {
	ack, ok := p.(wire.InteractionDecisionAck)
	return ok && CurrentDelivery(p, current) && ack.ErrorCode == CodeNotReady
}

// OwnSuspension (suspension): the reply echoes the attempt's Environment
// and suspend IDs, and an accepted reply carries no error code.
func OwnSuspension(p wire.Payload, suspendID, env string) bool {
	e, id, accepted, code, ok := wire.SuspensionAnswer(p)
	return ok && env != "" && e == env && id == suspendID && !(accepted && code != "")
}

// ResumeMatchesQuiesce (suspension): the resume names the Environment the
// attempt's quiesce named.
func ResumeMatchesQuiesce(p wire.Payload, env string) bool {
	r, ok := p.(wire.EnvironmentResume)
	return ok && env != "" && r.EnvironmentID == env
}

// CloseAcknowledged (workspace_read): the result acknowledges the close,
// and a directory listing says whether it was truncated. Core also checks
// that the result answers its request.
func CloseAcknowledged(p wire.Payload) bool {
	r, ok := p.(wire.WorkspaceReadResult)
	return ok && r.CloseAcknowledged && (r.Directory == nil || r.Directory.Truncated != nil)
}

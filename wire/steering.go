package wire

// Active input: Core delivers input to a running Run as prompt_steer, one
// input at a time per Run, and waits for the receipt before the next. A
// receipt reports exactly one phase: written (the native write completed,
// durable receipts only), accepted (the adapter confirmed native
// consumption) or rejected (an error code). Neither written nor a failed
// send advances Core's input cursor.

// PromptSteer is one active input for the Run named by Envelope.id.
// InputID is the receipt identity: a retry with the same InputID must carry
// the identical payload, or the Runtime answers input_conflict.
// DurableReceipt asks for the written phase; Core always sets it.
type PromptSteer struct {
	InputID        string       `json:"input_id"`
	Input          MessageInput `json:"input"`
	DurableReceipt bool         `json:"durable_receipt,omitempty"`
}

// Validate checks the input ID and the ordered input.
func (p PromptSteer) Validate() error {
	c := newChecker("")
	c.id("input_id", p.InputID, MaxInputIDBytes)
	c.nested("input", p.Input.validate())
	return c.err()
}

// Error codes of a rejecting prompt_steer_ack. The list is closed.
const (
	// SteerCodeInvalidInput: the input failed validation or native conversion.
	SteerCodeInvalidInput = "invalid_input"
	// SteerCodeRunInactive: the Run no longer admits input.
	SteerCodeRunInactive = "run_inactive"
	// SteerCodeInputConflict: the input ID was already bound to a different payload.
	SteerCodeInputConflict = "input_conflict"
	// SteerCodeInputLimit: the Run retains no more input receipts.
	SteerCodeInputLimit = "input_limit"
	// SteerCodeNotReady: the Run cannot take input yet; retry with the identical payload.
	SteerCodeNotReady = "not_ready"
	// SteerCodeBusy: another input is being written; retry with the identical payload.
	SteerCodeBusy = "busy"
	// SteerCodeInFlight: the same input is already being written.
	SteerCodeInFlight = "in_flight"
	// SteerCodeUnsupported: the admitted declaration does not support steering.
	SteerCodeUnsupported = "unsupported"
	// SteerCodeContractViolation: the adapter declared steering but refused it as unsupported.
	SteerCodeContractViolation = "contract_violation"
	// SteerCodeRejected: the Harness refused the input natively.
	SteerCodeRejected = "rejected"
	// SteerCodeOutcomeUnknown: the native write may or may not have happened.
	SteerCodeOutcomeUnknown = "outcome_unknown"
)

var steerAckCodes = []string{
	SteerCodeInvalidInput,
	SteerCodeRunInactive,
	SteerCodeInputConflict,
	SteerCodeInputLimit,
	SteerCodeNotReady,
	SteerCodeBusy,
	SteerCodeInFlight,
	SteerCodeUnsupported,
	SteerCodeContractViolation,
	SteerCodeRejected,
	SteerCodeOutcomeUnknown,
}

// SteerAckCodes returns the closed list of rejection codes.
func SteerAckCodes() []string { return append([]string(nil), steerAckCodes...) }

// SteerCodeRetryable reports whether a rejection with code proves the input
// was not taken and may be sent again with the identical payload and input
// ID: only not_ready and busy. Every other code is final for that input ID.
func SteerCodeRetryable(code string) bool {
	return code == SteerCodeNotReady || code == SteerCodeBusy
}

// SteerCodeResendable reports whether Core may resend an input rejected with
// code automatically. It is SteerCodeRetryable under another name, spelled
// out because outcome_unknown in particular is never resent: the input may
// already be in the conversation.
func SteerCodeResendable(code string) bool { return SteerCodeRetryable(code) }

// PromptSteerAck is one receipt for an active input. Accepted is a pointer
// because it is always on the wire and a missing value must not read as a
// rejection.
//
// Exactly one phase per frame:
//   - written:  written true, accepted false, no error_code;
//   - accepted: accepted true, no written, no error_code;
//   - rejected: accepted false, no written, an error_code from the closed list.
//
// Error explains a rejection and goes only with an error_code.
type PromptSteerAck struct {
	InputID   string `json:"input_id"`
	Accepted  *bool  `json:"accepted"`
	Written   bool   `json:"written,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Validate checks the input ID and that the receipt names exactly one phase.
func (p PromptSteerAck) Validate() error {
	c := newChecker("")
	c.id("input_id", p.InputID, MaxInputIDBytes)
	c.requiredBool("accepted", p.Accepted)
	if p.Accepted == nil {
		return c.err()
	}
	switch {
	case *p.Accepted:
		if p.Written {
			c.fail("written", RuleConflict, "written is an intermediate phase; an acceptance is not also written")
		}
		c.forbidden("error_code", p.ErrorCode != "", "an accepted input carries no error_code")
		c.forbidden("error", p.Error != "", "an accepted input carries no error")
	case p.Written:
		c.forbidden("error_code", p.ErrorCode != "", "a written receipt is not a rejection; it carries no error_code")
		c.forbidden("error", p.Error != "", "a written receipt carries no error")
	default:
		c.oneOf("error_code", p.ErrorCode, steerAckCodes...)
	}
	return c.err()
}

// DriveKey maps the receipt onto the input machine: "written", "accepted" or
// "rejected", following the phases in the type's comment; "" when accepted
// is missing.
func (p PromptSteerAck) DriveKey() string {
	switch {
	case p.Accepted == nil:
		return ""
	case *p.Accepted:
		return "accepted"
	case p.Written:
		return "written"
	}
	return "rejected"
}

// Retryable reports whether this receipt is a rejection that allows sending
// the identical input again (not_ready or busy).
func (p PromptSteerAck) Retryable() bool {
	return p.DriveKey() == "rejected" && SteerCodeRetryable(p.ErrorCode)
}

// OutcomeUnknown reports whether the Runtime could not tell if the input
// reached the Harness. Such an input is never resent automatically.
func (p PromptSteerAck) OutcomeUnknown() bool {
	return p.DriveKey() == "rejected" && p.ErrorCode == SteerCodeOutcomeUnknown
}

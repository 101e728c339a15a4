package wire

import "encoding/json"

// Finite refusal codes of the suspension replies. not_suspended answers
// only a resume: a quiesce cannot find the Environment "not suspended".
// The E3 assignment codes are not part of the E2 wire.
var (
	suspensionQuiescedCodes = []string{"invalid_request", "resource_busy"}
	suspensionResumedCodes  = []string{"invalid_request", "resource_busy", "not_suspended"}
)

// EnvironmentQuiesce asks the Runtime to drain the Environment and fence it
// for one persisted suspension attempt. suspend_id names that attempt; the
// envelope id only correlates this request with its reply.
//
// A quiesce carries no rollback: rollback belongs to environment_resume. A
// rollback member is not left to the generic unknown-member error; it is
// refused as forbidden, with a message that says where it belongs.
type EnvironmentQuiesce struct {
	EnvironmentID string `json:"environment_id"`
	SuspendID     string `json:"suspend_id"`
}

// UnmarshalJSON decodes strictly and refuses a rollback member explicitly.
func (p *EnvironmentQuiesce) UnmarshalJSON(data []byte) error {
	var wire struct {
		EnvironmentID string          `json:"environment_id"`
		SuspendID     string          `json:"suspend_id"`
		Rollback      json.RawMessage `json:"rollback"`
	}
	if err := decodeRelative(data, &wire); err != nil {
		return err
	}
	if wire.Rollback != nil {
		return fieldErr("", "rollback", RuleForbidden, "rollback applies only to environment_resume")
	}
	*p = EnvironmentQuiesce{EnvironmentID: wire.EnvironmentID, SuspendID: wire.SuspendID}
	return nil
}

// Validate checks the request.
func (p EnvironmentQuiesce) Validate() error {
	c := newChecker("")
	suspensionCheckIdentity(c, p.EnvironmentID, p.SuspendID)
	return c.err()
}

// EnvironmentResume resumes the Environment fenced by suspend_id, typically
// on a new connection after a snapshot restore. With rollback it is a no-op
// resume of a source that is still running after an uncertain quiesce; it
// never authorizes a cold replacement. The suspension it addresses is the
// same whether or not rollback is set.
type EnvironmentResume struct {
	EnvironmentID string `json:"environment_id"`
	SuspendID     string `json:"suspend_id"`
	Rollback      bool   `json:"rollback,omitempty"`
}

// Validate checks the request.
func (p EnvironmentResume) Validate() error {
	c := newChecker("")
	suspensionCheckIdentity(c, p.EnvironmentID, p.SuspendID)
	return c.err()
}

// DriveKey is "rollback" for a rollback and "resume" otherwise.
func (p EnvironmentResume) DriveKey() string {
	if p.Rollback {
		return "rollback"
	}
	return "resume"
}

// EnvironmentQuiesced says whether the Environment quiesced for the
// suspension it echoes. accepted is always present; a refusal carries a
// finite error code and an acceptance none.
type EnvironmentQuiesced struct {
	EnvironmentID string `json:"environment_id"`
	SuspendID     string `json:"suspend_id"`
	Accepted      *bool  `json:"accepted"`
	ErrorCode     string `json:"error_code,omitempty"`
}

// Validate checks the reply on its own; Answers also checks that it
// echoes the request's suspension.
func (r EnvironmentQuiesced) Validate() error {
	c := newChecker("")
	suspensionCheckReply(c, r.EnvironmentID, r.SuspendID, r.Accepted, r.ErrorCode, suspensionQuiescedCodes)
	return c.err()
}

// DriveKey is "accepted" or "refused" ("" while accepted is missing).
func (r EnvironmentQuiesced) DriveKey() string { return driveKeyOf(r.Accepted, "accepted", "refused") }

// Answers validates r and checks that it echoes the environment_id and
// suspend_id of the quiesce it answers; a reply for another suspension is
// rejected, since suspension is fenced by that identity. The error is
// stamped with the message type under "payload".
func (r EnvironmentQuiesced) Answers(req EnvironmentQuiesce) *FieldError {
	if err := r.Validate(); err != nil {
		return payloadError(TypeEnvironmentQuiesced, err)
	}
	return suspensionMatch(TypeEnvironmentQuiesced, r.EnvironmentID, r.SuspendID, req.EnvironmentID, req.SuspendID)
}

// EnvironmentResumed says whether the Environment resumed for the
// suspension it echoes, with the same rules as EnvironmentQuiesced.
type EnvironmentResumed struct {
	EnvironmentID string `json:"environment_id"`
	SuspendID     string `json:"suspend_id"`
	Accepted      *bool  `json:"accepted"`
	ErrorCode     string `json:"error_code,omitempty"`
}

// Validate checks the reply on its own; Answers also checks that it
// echoes the request's suspension.
func (r EnvironmentResumed) Validate() error {
	c := newChecker("")
	suspensionCheckReply(c, r.EnvironmentID, r.SuspendID, r.Accepted, r.ErrorCode, suspensionResumedCodes)
	return c.err()
}

// DriveKey is "accepted" or "refused" ("" while accepted is missing).
func (r EnvironmentResumed) DriveKey() string { return driveKeyOf(r.Accepted, "accepted", "refused") }

// Answers validates r and checks that it echoes the environment_id and
// suspend_id of the resume it answers (rollback plays no part in the
// identity). The error is stamped with the message type under "payload".
func (r EnvironmentResumed) Answers(req EnvironmentResume) *FieldError {
	if err := r.Validate(); err != nil {
		return payloadError(TypeEnvironmentResumed, err)
	}
	return suspensionMatch(TypeEnvironmentResumed, r.EnvironmentID, r.SuspendID, req.EnvironmentID, req.SuspendID)
}

// suspensionCheckIdentity checks the pair that names one suspension.
func suspensionCheckIdentity(c *checker, environmentID, suspendID string) {
	c.id("environment_id", environmentID, MaxIDBytes)
	c.id("suspend_id", suspendID, MaxIDBytes)
}

func suspensionCheckReply(c *checker, environmentID, suspendID string, accepted *bool, code string, codes []string) {
	suspensionCheckIdentity(c, environmentID, suspendID)
	c.requiredBool("accepted", accepted)
	switch {
	case accepted == nil:
	case *accepted:
		c.forbidden("error_code", code != "", "an accepted reply carries no error_code")
	default:
		c.oneOf("error_code", code, codes...)
	}
}

func suspensionMatch(typ, gotEnv, gotSuspend, wantEnv, wantSuspend string) *FieldError {
	c := newChecker(typ)
	if gotEnv != wantEnv {
		c.fail("payload.environment_id", RuleConflict, "answers another Environment than the request")
	}
	if gotSuspend != wantSuspend {
		c.fail("payload.suspend_id", RuleConflict, "answers another suspension than the request")
	}
	return c.first
}

// SuspensionAnswer reads an environment_quiesced or environment_resumed
// payload: the identity it echoes, whether it was accepted and its code;
// ok is false for any other payload.
func SuspensionAnswer(p Payload) (env, suspendID string, accepted bool, code string, ok bool) {
	switch r := p.(type) {
	case EnvironmentQuiesced:
		return r.EnvironmentID, r.SuspendID, r.Accepted != nil && *r.Accepted, r.ErrorCode, true
	case EnvironmentResumed:
		return r.EnvironmentID, r.SuspendID, r.Accepted != nil && *r.Accepted, r.ErrorCode, true
	}
	return "", "", false, "", false
}

package wire

import "strconv"

// Interactions: the Harness stops to ask a person something (a permission or
// a set of questions), Core answers with a decision, and the Runtime confirms
// the decision with an interaction_decision_ack. The request travels under
// the Run ID; the payload carries the interaction ID (request_id or ask_id)
// that the decision and permission_cancel envelopes address. Every decision
// attempt carries a fresh delivery_id, and only an ack echoing that
// delivery_id settles the attempt.

// PermissionRequest asks Core for permission before the Harness runs a tool.
// RequestID is the interaction ID: it lives in the payload because
// Envelope.id is the Run ID, which routes the frame to the Run's subscriber.
type PermissionRequest struct {
	RequestID string `json:"request_id"`
	// Tool names the tool waiting for permission.
	Tool string `json:"tool"`
	// Title is the short, human-readable summary shown to the approver; it
	// may be empty.
	//
	// decision: an empty title is accepted. It is display text, not an
	// identity, and the protocol asks nothing of it (daemon-protocol.txt:76
	// names only the interaction ID); the reference's peers send requests
	// with an empty title, which Core can show by the tool's name.
	Title  string `json:"title"`
	Detail string `json:"detail,omitempty"`
	// Payload is the tool's native input, opaque to Core. When present it
	// must be a JSON object; omit it rather than sending null.
	Payload NativeJSON `json:"payload,omitempty"`
}

// Validate checks the interaction ID, the tool, and the shape of the opaque
// payload.
func (p PermissionRequest) Validate() error {
	c := newChecker("")
	c.id("request_id", p.RequestID, MaxIDBytes)
	c.required("tool", p.Tool)
	c.nativeJSON("payload", p.Payload, optionalObject)
	return c.err()
}

// PermissionCancel withdraws a pending permission request, for instance when
// the Harness's own timeout fired. The envelope carries the interaction ID;
// the payload has no members (an empty object or no payload at all).
type PermissionCancel struct{}

// Validate accepts the empty payload; unknown members were already rejected
// by the strict decoder.
func (p PermissionCancel) Validate() error { return nil }

// PromptForUserChoice asks the person one or more questions. AskID is the
// interaction ID. Each question has its own ID, and the decision answers a
// question only by that ID, never by its position or header.
type PromptForUserChoice struct {
	AskID     string               `json:"ask_id"`
	Questions []UserChoiceQuestion `json:"questions"`
	// ToolUseID is the native tool call that raised the prompt, if any.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// AutoResolutionMS, when set, is how long the Harness waits before it
	// resolves the prompt on its own. Absent means it waits indefinitely,
	// which is why this is a pointer and never a zero.
	AutoResolutionMS *uint64 `json:"auto_resolution_ms,omitempty"`
}

// UserChoiceQuestion is one question of a PromptForUserChoice.
//
// Option labels are unique within a question because an answer names the
// option it picks by its label.
//
// decision: options may be null, absent or empty, for any question. The
// reference's peers send "options": null (a Go nil slice), and the
// protocol constrains only the answers (daemon-protocol.txt:82): a
// question without options can still be answered with typed text, left
// unanswered, or answered with an explicit empty array. Null and absent
// both decode to a nil slice, which encodes as null.
type UserChoiceQuestion struct {
	ID          string             `json:"id"`
	Header      string             `json:"header,omitempty"`
	Question    string             `json:"question"`
	MultiSelect bool               `json:"multi_select,omitempty"`
	IsOther     bool               `json:"is_other,omitempty"`
	IsSecret    bool               `json:"is_secret,omitempty"`
	Options     []UserChoiceOption `json:"options"`
}

// UserChoiceOption is one choice offered by a question.
type UserChoiceOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Validate checks the interaction ID, that there is at least one question,
// that question IDs are non-blank and unique, and each question's shape.
func (p PromptForUserChoice) Validate() error {
	c := newChecker("")
	c.id("ask_id", p.AskID, MaxIDBytes)
	if len(p.Questions) == 0 {
		c.fail("questions", RuleRequired, "at least one question is required")
	}
	seen := make(map[string]bool, len(p.Questions))
	for i, q := range p.Questions {
		qp := "questions[" + strconv.Itoa(i) + "]"
		c.required(qp+".id", q.ID)
		if c.ok() && seen[q.ID] {
			c.fail(qp+".id", RuleConflict, "question id "+quote(q.ID)+" repeats an earlier question")
		}
		seen[q.ID] = true
		c.required(qp+".question", q.Question)
		labels := make(map[string]bool, len(q.Options))
		for j, o := range q.Options {
			op := qp + ".options[" + strconv.Itoa(j) + "].label"
			c.required(op, o.Label)
			if c.ok() && labels[o.Label] {
				c.fail(op, RuleConflict, "option label "+quote(o.Label)+" repeats an earlier option")
			}
			labels[o.Label] = true
		}
	}
	if p.AutoResolutionMS != nil && *p.AutoResolutionMS == 0 {
		c.fail("auto_resolution_ms", RuleRange, "must be at least 1 when present; omit it for no automatic resolution")
	}
	return c.err()
}

// QuestionIDs returns the IDs of the emitted questions, in order.
func (p PromptForUserChoice) QuestionIDs() []string {
	ids := make([]string, len(p.Questions))
	for i, q := range p.Questions {
		ids[i] = q.ID
	}
	return ids
}

// PermissionDecision is Core's verdict on a permission request. Approved is
// a pointer because a decision that forgot its verdict must not read as a
// denial. UpdatedInput lets an approver change the tool's input before it
// runs, so it only goes with an approval.
type PermissionDecision struct {
	DeliveryID   string     `json:"delivery_id"`
	Approved     *bool      `json:"approved"`
	Message      string     `json:"message,omitempty"`
	UpdatedInput NativeJSON `json:"updated_input,omitempty"`
}

// Validate checks the delivery ID, that the verdict is present, and that
// updated_input is an object that comes only with an approval.
func (p PermissionDecision) Validate() error {
	c := newChecker("")
	c.id("delivery_id", p.DeliveryID, MaxIDBytes)
	c.requiredBool("approved", p.Approved)
	c.nativeJSON("updated_input", p.UpdatedInput, optionalObject)
	if p.Approved != nil && !*p.Approved {
		c.forbidden("updated_input", len(p.UpdatedInput) > 0, "a denial carries no updated_input")
	}
	return c.err()
}

// PromptForUserChoiceDecision answers a user-choice prompt, or cancels it.
//
// Each answer names its question by ID; order and headers never identify a
// question. A question left out stays unanswered, and an empty answers
// array is an explicit non-answer, so answers must be present as an array
// (null or missing is invalid). A cancellation carries cancelled: true and
// no answers. Reason explains a cancellation and goes only with one.
//
// Validate checks what the payload alone can know. Whether every
// question_id belongs to the emitted questions needs the prompt: both Core
// (before sending) and the Runtime (before native submission) must call
// ValidateAgainst.
type PromptForUserChoiceDecision struct {
	DeliveryID      string             `json:"delivery_id"`
	QuestionAnswers []UserChoiceAnswer `json:"question_answers,omitempty"`
	Cancelled       bool               `json:"cancelled,omitempty"`
	Reason          string             `json:"reason,omitempty"`
}

// UserChoiceAnswer binds answers to one emitted question ID. Answers is
// never nil in a valid decision: an empty array is a deliberate non-answer.
// For a pick question each answer is an option label; for a free-form
// question it is the typed text. Native choice rules (one answer for a
// single-select question, labels that exist) stay with the adapter.
type UserChoiceAnswer struct {
	QuestionID string   `json:"question_id"`
	Answers    []string `json:"answers"`
}

// Validate checks the delivery ID and the shape of the answers: non-blank,
// unique question IDs, answers present as an array of non-blank strings, and
// no answers or reason shapes that contradict cancelled.
func (p PromptForUserChoiceDecision) Validate() error {
	c := newChecker("")
	c.id("delivery_id", p.DeliveryID, MaxIDBytes)
	seen := make(map[string]bool, len(p.QuestionAnswers))
	for i, a := range p.QuestionAnswers {
		ap := "question_answers[" + strconv.Itoa(i) + "]"
		c.required(ap+".question_id", a.QuestionID)
		if c.ok() && seen[a.QuestionID] {
			c.fail(ap+".question_id", RuleConflict, "question id "+quote(a.QuestionID)+" is answered twice")
		}
		seen[a.QuestionID] = true
		if a.Answers == nil {
			c.fail(ap+".answers", RuleRequired, "answers must be an array; send [] for an explicit non-answer")
		}
		for j, s := range a.Answers {
			c.required(ap+".answers["+strconv.Itoa(j)+"]", s)
		}
	}
	if p.Cancelled {
		c.forbidden("question_answers", len(p.QuestionAnswers) > 0, "a cancellation carries no answers")
	} else {
		c.forbidden("reason", p.Reason != "", "reason explains a cancellation; it needs cancelled: true")
	}
	return c.err()
}

// ValidateAgainst checks the decision and then binds it to the prompt it
// answers: every question_id must be the ID of one of q's questions. Paths
// are relative to the decision payload, as in Validate. Neither peer may
// submit or consume an answer before this passes.
func (p PromptForUserChoiceDecision) ValidateAgainst(q PromptForUserChoice) error {
	if err := p.Validate(); err != nil {
		return err
	}
	emitted := make(map[string]bool, len(q.Questions))
	for _, qq := range q.Questions {
		emitted[qq.ID] = true
	}
	c := newChecker("")
	for i, a := range p.QuestionAnswers {
		if !emitted[a.QuestionID] {
			c.fail("question_answers["+strconv.Itoa(i)+"].question_id", RuleEnum, quote(a.QuestionID)+" is not one of the emitted question ids")
		}
	}
	return c.err()
}

// AnswerMap returns the answers keyed by question ID. It assumes a decision
// that passed ValidateAgainst; a question missing from the map is
// unanswered, an empty slice is an explicit non-answer.
func (p PromptForUserChoiceDecision) AnswerMap() map[string][]string {
	m := make(map[string][]string, len(p.QuestionAnswers))
	for _, a := range p.QuestionAnswers {
		m[a.QuestionID] = a.Answers
	}
	return m
}

// Error codes of an interaction_decision_ack that refuses a decision, a
// function result or a cancellation. The list is closed: any other code is
// rejected, so a peer never has to guess what an unknown refusal means.
//
// decision: the E3 assignment_conflict and assignment_stale codes are left
// out; session assignments do not exist in the E2 wire this package speaks.
const (
	// InteractionCodeNotPending: no pending interaction or call with that ID.
	InteractionCodeNotPending = "not_pending"
	// InteractionCodeNotReady: the interaction exists but cannot take a
	// decision yet.
	InteractionCodeNotReady = "not_ready"
	// InteractionCodeUnsupported: the admitted declaration does not support
	// the operation (for example permissions).
	InteractionCodeUnsupported = "unsupported"
	// InteractionCodeContractViolation: the adapter declared the operation
	// but returned unsupported when called.
	InteractionCodeContractViolation = "contract_violation"
	// InteractionCodeRuntimeError: the native call failed.
	InteractionCodeRuntimeError = "runtime_error"
	// InteractionCodeDecisionConflict: a replay of the same interaction with
	// different content than the decision already applied.
	InteractionCodeDecisionConflict = "decision_conflict"
	// InteractionCodeInvalidResult: a function result the Runtime cannot
	// submit natively.
	InteractionCodeInvalidResult = "invalid_result"
	// InteractionCodeRunInactive: a cancellation for a Run that is not
	// active.
	InteractionCodeRunInactive = "run_inactive"
)

var interactionAckCodes = []string{
	InteractionCodeNotPending,
	InteractionCodeNotReady,
	InteractionCodeUnsupported,
	InteractionCodeContractViolation,
	InteractionCodeRuntimeError,
	InteractionCodeDecisionConflict,
	InteractionCodeInvalidResult,
	InteractionCodeRunInactive,
}

// InteractionAckCodes returns the closed list of refusal codes.
func InteractionAckCodes() []string { return append([]string(nil), interactionAckCodes...) }

// InteractionDecisionAck is the Runtime's receipt for a permission or
// user-choice decision, a function result or a prompt_cancel with a
// delivery_id. It is matched by delivery_id; Envelope.id is the interaction
// ID for decisions and the Run ID for results and cancellations, so the
// peer routes it by the ID it registered.
//
// Applied is a pointer: a receipt that does not say whether it applied
// proves nothing. An applied receipt carries no error; a refusal carries a
// code from the closed list and may explain it in Error. Outcome keeps a
// cancelled Turn's continuity (partial content, native identity, usage)
// when no done frame was published, so it only goes with applied: true.
type InteractionDecisionAck struct {
	DeliveryID string `json:"delivery_id"`
	Applied    *bool  `json:"applied"`
	ErrorCode  string `json:"error_code,omitempty"`
	Error      string `json:"error,omitempty"`
	Outcome    *Done  `json:"outcome,omitempty"`
}

// Validate checks the delivery ID, the presence of applied, that the error
// members and the outcome agree with it, and the outcome itself.
func (p InteractionDecisionAck) Validate() error {
	c := newChecker("")
	c.id("delivery_id", p.DeliveryID, MaxIDBytes)
	c.requiredBool("applied", p.Applied)
	if p.Applied != nil {
		if *p.Applied {
			c.forbidden("error_code", p.ErrorCode != "", "an applied receipt carries no error_code")
			c.forbidden("error", p.Error != "", "an applied receipt carries no error")
		} else {
			c.oneOf("error_code", p.ErrorCode, interactionAckCodes...)
			c.forbidden("outcome", p.Outcome != nil, "only an applied receipt carries an outcome")
		}
	}
	if p.Outcome != nil {
		c.nested("outcome", p.Outcome.Validate())
	}
	return c.err()
}

// DriveKey maps the receipt onto the interaction (or Run) machine:
// applied: true is "applied", applied: false is "refused", and a receipt
// without applied (invalid) is "".
func (p InteractionDecisionAck) DriveKey() string {
	return driveKeyOf(p.Applied, "applied", "refused")
}

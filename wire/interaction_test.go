package wire

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// userChoicePrompt is the prompt every decision below answers.
var userChoicePrompt = PromptForUserChoice{
	AskID: "ask_1",
	Questions: []UserChoiceQuestion{
		{ID: "db", Header: "Database", Question: "Which database?", Options: []UserChoiceOption{{Label: "Postgres"}, {Label: "SQLite"}}},
		{ID: "env", Header: "Environment", Question: "Deploy where?", MultiSelect: true, Options: []UserChoiceOption{{Label: "staging"}, {Label: "production"}}},
		{ID: "name", Header: "Name", Question: "Project name?", IsOther: true, Options: []UserChoiceOption{}},
	},
}

// TestUserChoiceDecisionRules decodes each decision from the wire, as the
// Runtime does, and binds it to the emitted prompt with ValidateAgainst.
func TestUserChoiceDecisionRules(t *testing.T) {
	require.NoError(t, userChoicePrompt.Validate())
	cases := []struct {
		name    string
		payload string
		field   string // "" when the decision is valid
		rule    Rule
		want    map[string][]string // the answers of a valid decision
	}{
		{
			name:    "every question answered",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db","answers":["Postgres"]},{"question_id":"env","answers":["staging","production"]},{"question_id":"name","answers":["agentwire"]}]}`,
			want:    map[string][]string{"db": {"Postgres"}, "env": {"staging", "production"}, "name": {"agentwire"}},
		},
		{
			name:    "order independence: answers in another order than the questions",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"name","answers":["agentwire"]},{"question_id":"db","answers":["SQLite"]}]}`,
			want:    map[string][]string{"name": {"agentwire"}, "db": {"SQLite"}},
		},
		{
			name:    "an omitted question stays unanswered",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"env","answers":["staging"]}]}`,
			want:    map[string][]string{"env": {"staging"}},
		},
		{
			name:    "empty answers array is an explicit non-answer",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db","answers":[]}]}`,
			want:    map[string][]string{"db": {}},
		},
		{
			name:    "cancelled without answers",
			payload: `{"delivery_id":"d","cancelled":true,"reason":"closed"}`,
			want:    map[string][]string{},
		},
		{
			name:    "unknown question id",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db","answers":["SQLite"]},{"question_id":"Database","answers":["SQLite"]}]}`,
			field:   "question_answers[1].question_id", rule: RuleEnum,
		},
		{
			name:    "a header does not identify a question",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"Environment","answers":["staging"]}]}`,
			field:   "question_answers[0].question_id", rule: RuleEnum,
		},
		{
			name:    "a position does not identify a question",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"0","answers":["Postgres"]}]}`,
			field:   "question_answers[0].question_id", rule: RuleEnum,
		},
		{
			name:    "repeated question id",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db","answers":["Postgres"]},{"question_id":"db","answers":[]}]}`,
			field:   "question_answers[1].question_id", rule: RuleConflict,
		},
		{
			name:    "blank question id",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"","answers":["Postgres"]}]}`,
			field:   "question_answers[0].question_id", rule: RuleRequired,
		},
		{
			name:    "missing answers",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db"}]}`,
			field:   "question_answers[0].answers", rule: RuleRequired,
		},
		{
			name:    "null answers",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db","answers":null}]}`,
			field:   "question_answers[0].answers", rule: RuleRequired,
		},
		{
			name:    "answers not an array",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db","answers":"Postgres"}]}`,
			rule:    RuleType, field: "question_answers[0].answers",
		},
		{
			name:    "cancelled with answers",
			payload: `{"delivery_id":"d","cancelled":true,"question_answers":[{"question_id":"db","answers":[]}]}`,
			field:   "question_answers", rule: RuleForbidden,
		},
		{
			name:    "legacy per-answer header",
			payload: `{"delivery_id":"d","question_answers":[{"question_id":"db","header":"Database","answers":["Postgres"]}]}`,
			rule:    RuleUnknownField, field: "question_answers[0].header",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := decodePayload[PromptForUserChoiceDecision]("prompt_for_user_choice_decision", []byte(tc.payload))
			if err == nil {
				err = p.ValidateAgainst(userChoicePrompt)
			} else {
				var fe *FieldError
				require.True(t, errors.As(err, &fe))
				fe.Field = trimPayloadPrefix(fe.Field)
			}
			if tc.field == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, p.AnswerMap())
				return
			}
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "%v", err)
			require.Equal(t, tc.field, fe.Field, "%v", err)
			require.Equal(t, tc.rule, fe.Rule, "%v", err)
		})
	}
}

func trimPayloadPrefix(f string) string {
	if len(f) > len("payload.") && f[:len("payload.")] == "payload." {
		return f[len("payload."):]
	}
	return f
}

// TestUserChoiceOrderIndependence checks that reordering the answers, or the
// questions of the prompt, changes neither validity nor the answer map.
func TestUserChoiceOrderIndependence(t *testing.T) {
	d := PromptForUserChoiceDecision{DeliveryID: "d", QuestionAnswers: []UserChoiceAnswer{
		{QuestionID: "db", Answers: []string{"Postgres"}},
		{QuestionID: "env", Answers: []string{}},
	}}
	r := PromptForUserChoiceDecision{DeliveryID: "d", QuestionAnswers: []UserChoiceAnswer{d.QuestionAnswers[1], d.QuestionAnswers[0]}}
	q := userChoicePrompt
	q.Questions = []UserChoiceQuestion{q.Questions[2], q.Questions[0], q.Questions[1]}
	for _, prompt := range []PromptForUserChoice{userChoicePrompt, q} {
		require.NoError(t, d.ValidateAgainst(prompt))
		require.NoError(t, r.ValidateAgainst(prompt))
	}
	require.Equal(t, d.AnswerMap(), r.AnswerMap())
}

func TestUserChoiceValidateAgainstChecksShapeFirst(t *testing.T) {
	// A shape error wins over membership: the payload is rejected for what
	// it is before it is compared with the prompt.
	d := PromptForUserChoiceDecision{DeliveryID: "d", Cancelled: true, QuestionAnswers: []UserChoiceAnswer{{QuestionID: "nope", Answers: []string{}}}}
	var fe *FieldError
	require.True(t, errors.As(d.ValidateAgainst(userChoicePrompt), &fe))
	require.Equal(t, "question_answers", fe.Field)
	require.Equal(t, RuleForbidden, fe.Rule)
	// Against a prompt with no questions, every answer is unknown.
	d = PromptForUserChoiceDecision{DeliveryID: "d", QuestionAnswers: []UserChoiceAnswer{{QuestionID: "db", Answers: []string{}}}}
	require.True(t, errors.As(d.ValidateAgainst(PromptForUserChoice{}), &fe))
	require.Equal(t, RuleEnum, fe.Rule)
}

func TestUserChoiceDecisionEncoding(t *testing.T) {
	// An empty answers array survives encoding: it must not turn into a
	// missing member, which would be invalid.
	d := PromptForUserChoiceDecision{DeliveryID: "d", QuestionAnswers: []UserChoiceAnswer{{QuestionID: "db", Answers: []string{}}}}
	out, err := json.Marshal(d)
	require.NoError(t, err)
	require.JSONEq(t, `{"delivery_id":"d","question_answers":[{"question_id":"db","answers":[]}]}`, string(out))
	back, err := decodePayload[PromptForUserChoiceDecision]("prompt_for_user_choice_decision", out)
	require.NoError(t, err)
	require.Equal(t, d, back)
}

func TestPromptForUserChoiceQuestions(t *testing.T) {
	free := PromptForUserChoice{AskID: "a", Questions: []UserChoiceQuestion{
		{ID: "secret", Question: "Token?", IsSecret: true, Options: []UserChoiceOption{}},
		{ID: "other", Question: "Name?", IsOther: true, Options: []UserChoiceOption{}},
	}}
	require.NoError(t, free.Validate(), "free-form questions may have no options")
	require.Equal(t, []string{"secret", "other"}, free.QuestionIDs())

	// Any question may come without options, as the reference's peers send
	// it: null, absent or empty.
	for _, raw := range []string{`"options":null,`, ``, `"options":[],`} {
		p, err := decodePayload[PromptForUserChoice]("prompt_for_user_choice", []byte(`{"ask_id":"a","questions":[{"id":"q",`+raw+`"question":"Pick"}]}`))
		require.NoError(t, err, raw)
		require.Empty(t, p.Questions[0].Options)
	}
	var fe *FieldError

	// Nested wrong types are rejected, named with their index.
	_, err := decodePayload[PromptForUserChoice]("prompt_for_user_choice", []byte(`{"ask_id":"a","questions":[{"id":"q","question":"x","multi_select":"yes","options":[{"label":"l"}]}]}`))
	require.True(t, errors.As(err, &fe))
	require.Equal(t, RuleType, fe.Rule)
	require.Equal(t, "payload.questions[0].multi_select", fe.Field)
}

func TestPermissionDecisionVerdict(t *testing.T) {
	yes, no := true, false
	require.NoError(t, PermissionDecision{DeliveryID: "d", Approved: &no, Message: "no"}.Validate())
	require.NoError(t, PermissionDecision{DeliveryID: "d", Approved: &yes, UpdatedInput: NativeJSON(`{"x":1}`)}.Validate())
	var fe *FieldError
	require.True(t, errors.As(PermissionDecision{DeliveryID: "d"}.Validate(), &fe), "a missing verdict is not a denial")
	require.Equal(t, "approved", fe.Field)
	require.Equal(t, RuleRequired, fe.Rule)
	require.True(t, errors.As(PermissionDecision{DeliveryID: "d", Approved: &no, UpdatedInput: NativeJSON(`{}`)}.Validate(), &fe))
	require.Equal(t, RuleForbidden, fe.Rule)
	// A denial always encodes its verdict explicitly.
	out, err := json.Marshal(PermissionDecision{DeliveryID: "d", Approved: &no})
	require.NoError(t, err)
	require.JSONEq(t, `{"delivery_id":"d","approved":false}`, string(out))
}

func TestInteractionDecisionAck(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name  string
		ack   InteractionDecisionAck
		key   string
		field string // "" when valid
		rule  Rule
	}{
		{name: "applied", ack: InteractionDecisionAck{DeliveryID: "d", Applied: &yes}, key: "applied"},
		{name: "applied cancellation with outcome", ack: InteractionDecisionAck{DeliveryID: "d", Applied: &yes, Outcome: &Done{Content: "partial"}}, key: "applied"},
		{name: "refused", ack: InteractionDecisionAck{DeliveryID: "d", Applied: &no, ErrorCode: InteractionCodeNotPending, Error: "gone"}, key: "refused"},
		{name: "applied missing", ack: InteractionDecisionAck{DeliveryID: "d"}, key: "", field: "applied", rule: RuleRequired},
		{name: "applied with code", ack: InteractionDecisionAck{DeliveryID: "d", Applied: &yes, ErrorCode: InteractionCodeRuntimeError}, key: "applied", field: "error_code", rule: RuleForbidden},
		{name: "refused without code", ack: InteractionDecisionAck{DeliveryID: "d", Applied: &no}, key: "refused", field: "error_code", rule: RuleRequired},
		{name: "refused with an unlisted code", ack: InteractionDecisionAck{DeliveryID: "d", Applied: &no, ErrorCode: "assignment_conflict"}, key: "refused", field: "error_code", rule: RuleEnum},
		{name: "refused with outcome", ack: InteractionDecisionAck{DeliveryID: "d", Applied: &no, ErrorCode: InteractionCodeRunInactive, Outcome: &Done{}}, key: "refused", field: "outcome", rule: RuleForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.key, tc.ack.DriveKey())
			err := tc.ack.Validate()
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "%v", err)
			require.Equal(t, tc.field, fe.Field)
			require.Equal(t, tc.rule, fe.Rule)
		})
	}
	for _, code := range InteractionAckCodes() {
		require.NoError(t, InteractionDecisionAck{DeliveryID: "d", Applied: &no, ErrorCode: code}.Validate(), code)
	}
}

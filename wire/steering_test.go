package wire

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPromptSteerAckPhases(t *testing.T) {
	cases := []struct {
		name      string
		ack       PromptSteerAck
		key       string
		field     string // "" when valid
		rule      Rule
		retryable bool
		unknown   bool
	}{
		{name: "written", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false), Written: true}, key: "written"},
		{name: "accepted", ack: PromptSteerAck{InputID: "i", Accepted: ptr(true)}, key: "accepted"},
		{name: "rejected busy", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false), ErrorCode: SteerCodeBusy}, key: "rejected", retryable: true},
		{name: "rejected not_ready", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false), ErrorCode: SteerCodeNotReady, Error: "starting"}, key: "rejected", retryable: true},
		{name: "rejected outcome_unknown", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false), ErrorCode: SteerCodeOutcomeUnknown}, key: "rejected", unknown: true},
		{name: "rejected input_conflict", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false), ErrorCode: SteerCodeInputConflict}, key: "rejected"},
		{name: "accepted missing", ack: PromptSteerAck{InputID: "i"}, key: "", field: "accepted", rule: RuleRequired},
		{name: "accepted and written", ack: PromptSteerAck{InputID: "i", Accepted: ptr(true), Written: true}, key: "accepted", field: "written", rule: RuleConflict},
		{name: "accepted with code", ack: PromptSteerAck{InputID: "i", Accepted: ptr(true), ErrorCode: SteerCodeBusy}, key: "accepted", field: "error_code", rule: RuleForbidden},
		{name: "written with code", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false), Written: true, ErrorCode: SteerCodeBusy}, key: "written", field: "error_code", rule: RuleForbidden},
		{name: "rejection without code", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false)}, key: "rejected", field: "error_code", rule: RuleRequired},
		{name: "unknown code", ack: PromptSteerAck{InputID: "i", Accepted: ptr(false), ErrorCode: "timeout"}, key: "rejected", field: "error_code", rule: RuleEnum},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.key, tc.ack.DriveKey())
			err := tc.ack.Validate()
			if tc.field == "" {
				require.NoError(t, err)
			} else {
				var fe *FieldError
				require.True(t, errors.As(err, &fe), "%v", err)
				require.Equal(t, tc.field, fe.Field)
				require.Equal(t, tc.rule, fe.Rule)
				require.ErrorIs(t, err, ErrInvalid)
			}
			require.Equal(t, tc.retryable, tc.ack.Retryable())
			require.Equal(t, tc.unknown, tc.ack.OutcomeUnknown())
		})
	}
}

func TestSteerCodes(t *testing.T) {
	for _, code := range SteerAckCodes() {
		ack := PromptSteerAck{InputID: "i", Accepted: ptr(false), ErrorCode: code}
		require.NoError(t, ack.Validate(), code)
		want := code == SteerCodeNotReady || code == SteerCodeBusy
		require.Equal(t, want, SteerCodeRetryable(code), code)
		require.Equal(t, want, SteerCodeResendable(code), code)
	}
	require.False(t, SteerCodeResendable(SteerCodeOutcomeUnknown), "outcome_unknown is never resent")
	require.False(t, SteerCodeRetryable(""))
	// The list is a copy: callers cannot widen the closed set.
	codes := SteerAckCodes()
	codes[0] = "widened"
	require.NotContains(t, SteerAckCodes(), "widened")
}

func TestPromptSteerInputPaths(t *testing.T) {
	// Index paths of the input join without a dot.
	p := PromptSteer{InputID: "i", Input: MessageInput{
		{Content: []InputContent{{Type: ContentText, Text: "ok"}}},
		{Content: []InputContent{{Type: ContentImage}}},
	}}
	var fe *FieldError
	require.True(t, errors.As(p.Validate(), &fe))
	require.Equal(t, "input[1].content[0].image_url", fe.Field)

	_, err := decodePayload[PromptSteer]("prompt_steer", []byte(`{"input_id":"i","input":[{"content":[{"type":"input_text","text":"x","extra":1}]}]}`))
	require.True(t, errors.As(err, &fe))
	require.Equal(t, RuleUnknownField, fe.Rule, "unknown members are rejected at any depth")
}

func TestPromptSteerInputIDLimit(t *testing.T) {
	id := make([]byte, MaxInputIDBytes)
	for i := range id {
		id[i] = 'x'
	}
	input := MessageInput{{Content: []InputContent{{Type: ContentText, Text: "go"}}}}
	require.NoError(t, PromptSteer{InputID: string(id), Input: input}.Validate())
	var fe *FieldError
	require.True(t, errors.As(PromptSteer{InputID: string(id) + "x", Input: input}.Validate(), &fe))
	require.Equal(t, RuleTooLarge, fe.Rule)
	require.ErrorIs(t, fe, ErrTooLarge)
}

package wire

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFunctionCallArguments(t *testing.T) {
	cases := []struct {
		args string // "" means the member is absent
		rule Rule   // "" when valid
	}{
		{args: `{}`},
		{args: `{"a":[1,{"b":null}]}`},
		{args: ` {"a":1} `},
		{args: "", rule: RuleRequired},
		{args: `null`, rule: RuleRequired},
		{args: `[]`, rule: RuleType},
		{args: `"{}"`, rule: RuleType},
		{args: `true`, rule: RuleType},
		{args: `0`, rule: RuleType},
	}
	for _, tc := range cases {
		p := FunctionCall{CallID: "c", Name: "f"}
		if tc.args != "" {
			p.Arguments = NativeJSON(tc.args)
		}
		err := p.Validate()
		if tc.rule == "" {
			require.NoError(t, err, tc.args)
			continue
		}
		var fe *FieldError
		require.True(t, errors.As(err, &fe), tc.args)
		require.Equal(t, "arguments", fe.Field, tc.args)
		require.Equal(t, tc.rule, fe.Rule, tc.args)
	}
}

func TestFunctionResultContent(t *testing.T) {
	yes := true
	base := FunctionResult{DeliveryID: "d", CallID: "c", Success: &yes}

	empty := base
	empty.Content = []InputContent{}
	require.NoError(t, empty.Validate(), "an empty content array is a valid result")
	out, err := json.Marshal(empty)
	require.NoError(t, err)
	require.JSONEq(t, `{"delivery_id":"d","call_id":"c","success":true,"content":[]}`, string(out))

	var fe *FieldError
	require.True(t, errors.As(base.Validate(), &fe), "nil content is missing content")
	require.Equal(t, "content", fe.Field)
	require.Equal(t, RuleRequired, fe.Rule)

	// A function may return empty text; a user message may not.
	blank := base
	blank.Content = []InputContent{{Type: ContentText, Text: ""}}
	require.NoError(t, blank.Validate())

	img := base
	img.Content = []InputContent{{Type: ContentText, Text: "see"}, {Type: ContentImage, ImageURL: "https://example.com/a.png"}}
	require.NoError(t, img.Validate())
	require.True(t, img.HasImage())
	require.False(t, blank.HasImage())

	// The success flag is never inferred from its absence.
	_, err = decodePayload[FunctionResult]("function_result", []byte(`{"delivery_id":"d","call_id":"c","content":[]}`))
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "payload.success", fe.Field)
	require.Equal(t, RuleRequired, fe.Rule)

	// Nested unknown members are rejected.
	_, err = decodePayload[FunctionResult]("function_result", []byte(`{"delivery_id":"d","call_id":"c","success":true,"content":[{"type":"input_text","text":"a","mime":"x"}]}`))
	require.True(t, errors.As(err, &fe))
	require.Equal(t, RuleUnknownField, fe.Rule)
}

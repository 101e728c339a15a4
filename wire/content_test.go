package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContentItemRules pins the one content-item validator under both text
// rules, and through each place that carries items: the rules agree on
// everything but the text of an input_text item.
func TestContentItemRules(t *testing.T) {
	yes := true
	cases := []struct {
		name  string
		item  InputContent
		field string // "" when valid under textMayBeEmpty
		rule  Rule
		// nonEmptyField and nonEmptyRule are the result under textNonEmpty
		// when it differs.
		nonEmptyField string
		nonEmptyRule  Rule
	}{
		{name: "text", item: InputContent{Type: ContentText, Text: "hi"}},
		{name: "whitespace text", item: InputContent{Type: ContentText, Text: "  "}},
		{name: "empty text", item: InputContent{Type: ContentText}, nonEmptyField: "text", nonEmptyRule: RuleRequired},
		{name: "empty text with an image_url", item: InputContent{Type: ContentText, ImageURL: "u"}, field: "image_url", rule: RuleForbidden, nonEmptyField: "text", nonEmptyRule: RuleRequired},
		{name: "text with an image_url", item: InputContent{Type: ContentText, Text: "x", ImageURL: "u"}, field: "image_url", rule: RuleForbidden},
		{name: "image", item: InputContent{Type: ContentImage, ImageURL: "https://example.com/a.png"}},
		{name: "image without url", item: InputContent{Type: ContentImage}, field: "image_url", rule: RuleRequired},
		{name: "image with a blank url", item: InputContent{Type: ContentImage, ImageURL: " "}, field: "image_url", rule: RuleRequired},
		{name: "image with text", item: InputContent{Type: ContentImage, Text: "x", ImageURL: "u"}, field: "text", rule: RuleForbidden},
		{name: "no type", item: InputContent{Text: "x"}, field: "type", rule: RuleRequired},
		{name: "unknown type", item: InputContent{Type: "input_audio"}, field: "type", rule: RuleEnum},
	}
	for _, tc := range cases {
		nonEmptyField, nonEmptyRule := tc.field, tc.rule
		if tc.nonEmptyField != "" {
			nonEmptyField, nonEmptyRule = tc.nonEmptyField, tc.nonEmptyRule
		}
		check := func(err error, field string, rule Rule, where string) {
			t.Helper()
			if field == "" {
				require.NoError(t, err, "%s: %s", where, tc.name)
				return
			}
			requireFieldError(t, err, field, rule, where, tc.name)
		}
		check(asError(tc.item.validate(textMayBeEmpty)), tc.field, tc.rule, "textMayBeEmpty")
		check(asError(tc.item.validate(textNonEmpty)), nonEmptyField, nonEmptyRule, "textNonEmpty")

		// A function result follows textMayBeEmpty item by item.
		fr := FunctionResult{DeliveryID: "d", CallID: "c", Success: &yes, Content: []InputContent{tc.item}}
		check(fr.Validate(), prefixField("content[0]", tc.field), tc.rule, "function_result")
		// A tool observation follows textNonEmpty.
		obs := ToolCall{ID: "c", Name: "n", Stage: ToolStageAfter, Observation: &ToolObservation{Kind: "k", Status: "s", Content: &[]InputContent{tc.item}}}
		check(obs.Validate(), prefixField("observation.content[0]", nonEmptyField), nonEmptyRule, "tool_call")
		// A message follows textMayBeEmpty, after an item that gives the
		// message its substance.
		in := MessageInput{{Content: []InputContent{{Type: ContentText, Text: "hello"}, tc.item}}}
		check(asError(in.validate()), prefixField("[0].content[1]", tc.field), tc.rule, "input")
	}
}

// TestMessageNeedsSubstance: empty items are valid one by one, but a
// message of nothing but empty text carries nothing. Whitespace-only text
// is valid on the wire; WhitespaceOnly reports it for admission.
func TestMessageNeedsSubstance(t *testing.T) {
	empty := MessageInput{{Content: []InputContent{{Type: ContentText}, {Type: ContentText}}}}
	requireFieldError(t, asError(empty.validate()), "[0].content", RuleRequired)

	blank := MessageInput{{Content: []InputContent{{Type: ContentText, Text: " "}, {Type: ContentText}}}}
	require.NoError(t, asError(blank.validate()))
	require.True(t, blank.WhitespaceOnly())

	withImage := MessageInput{{Content: []InputContent{{Type: ContentText, Text: " "}, {Type: ContentImage, ImageURL: "u"}}}}
	require.NoError(t, asError(withImage.validate()))
	require.False(t, withImage.WhitespaceOnly())
	require.False(t, MessageInput{{Content: []InputContent{{Type: ContentText, Text: " x "}}}}.WhitespaceOnly())
}

func prefixField(prefix, field string) string {
	if field == "" {
		return ""
	}
	return join(prefix, field)
}

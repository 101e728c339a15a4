package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpaqueMembersShareOneRule builds every opaque member of every family
// in Go with the same values and checks that members of the same shape
// reject them alike: one field, one rule, whichever family they belong to.
func TestOpaqueMembersShareOneRule(t *testing.T) {
	yes := true
	members := []struct {
		field string
		shape jsonShape
		// nilIsAbsent: a nil value means "none" rather than "missing"
		// (the opt-in output schema is optional as a whole).
		nilIsAbsent bool
		validate    func(NativeJSON) error
	}{
		{"args", optionalObject, false, func(v NativeJSON) error {
			return ToolCall{ID: "c", Name: "n", Stage: ToolStageAfter, Args: v}.Validate()
		}},
		{"result", optionalObject, false, func(v NativeJSON) error {
			return ToolCall{ID: "c", Name: "n", Stage: ToolStageAfter, Result: v}.Validate()
		}},
		{"raw", optionalObject, false, func(v NativeJSON) error { return Usage{Model: "m", Raw: v}.Validate() }},
		{"payload", optionalObject, false, func(v NativeJSON) error {
			return PermissionRequest{RequestID: "r", Tool: "t", Title: "x", Payload: v}.Validate()
		}},
		{"updated_input", optionalObject, false, func(v NativeJSON) error {
			return PermissionDecision{DeliveryID: "d", Approved: &yes, UpdatedInput: v}.Validate()
		}},
		{"agent_options.model_provider", optionalObject, false, func(v NativeJSON) error {
			return PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput(), AgentOptions: &AgentOptions{ModelProvider: v}}.Validate()
		}},
		{"agent_options.harness_config", optionalObject, false, func(v NativeJSON) error {
			return PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput(), AgentOptions: &AgentOptions{HarnessConfig: v}}.Validate()
		}},
		{"arguments", requiredObject, false, func(v NativeJSON) error {
			return FunctionCall{CallID: "c", Name: "f", Arguments: v}.Validate()
		}},
		{"function_tools[0].parameters", requiredObject, false, func(v NativeJSON) error {
			return PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput(), FunctionTools: []FunctionTool{{Name: "f", Parameters: v}}}.Validate()
		}},
		{"execution_controls.output_format.schema", requiredObject, false, func(v NativeJSON) error {
			return PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput(), ExecutionControls: &ExecutionControls{
				WebSearch: WebSearchDisabled, TextVerbosity: TextVerbosityMedium,
				OutputFormat: &OutputFormat{Type: OutputFormatJSONSchema, Schema: v},
			}}.Validate()
		}},
		{"output_schema", requiredObject, true, func(v NativeJSON) error {
			s := optInBaseSession()
			s.OutputSchema = v
			return ApplyOptIns(&PromptRequest{}, s)
		}},
		{"code", anyJSON, false, func(v NativeJSON) error { return ErrorFrame{Error: "e", Code: v}.Validate() }},
		{"http_status", anyJSON, false, func(v NativeJSON) error { return ErrorFrame{Error: "e", HTTPStatus: v}.Validate() }},
		{"observation.arguments", anyJSON, false, func(v NativeJSON) error {
			return ToolCall{ID: "c", Name: "n", Stage: ToolStageAfter, Observation: &ToolObservation{Kind: "k", Status: "s", Arguments: v}}.Validate()
		}},
		{"observation.output", anyJSON, false, func(v NativeJSON) error {
			return ToolCall{ID: "c", Name: "n", Stage: ToolStageAfter, Observation: &ToolObservation{Kind: "k", Status: "s", Output: v}}.Validate()
		}},
		{"observation.error", anyJSON, false, func(v NativeJSON) error {
			return ToolCall{ID: "c", Name: "n", Stage: ToolStageAfter, Observation: &ToolObservation{Kind: "k", Status: "s", Error: v}}.Validate()
		}},
	}
	// want gives the rule per shape: "" for valid.
	values := []struct {
		name string
		v    NativeJSON
		want map[jsonShape]Rule
	}{
		{"absent", nil, map[jsonShape]Rule{requiredObject: RuleRequired}},
		{"empty", NativeJSON{}, map[jsonShape]Rule{requiredObject: RuleRequired}},
		{"object", NativeJSON(`{}`), nil},
		{"spaced object", NativeJSON(" {\"a\": [1, null]} \n"), nil},
		{"null", NativeJSON(`null`), map[jsonShape]Rule{optionalObject: RuleType, requiredObject: RuleRequired}},
		{"spaced null", NativeJSON(` null `), map[jsonShape]Rule{optionalObject: RuleType, requiredObject: RuleRequired}},
		{"array", NativeJSON(`[]`), map[jsonShape]Rule{optionalObject: RuleType, requiredObject: RuleType}},
		{"string", NativeJSON(`"{}"`), map[jsonShape]Rule{optionalObject: RuleType, requiredObject: RuleType}},
		{"number", NativeJSON(`0`), map[jsonShape]Rule{optionalObject: RuleType, requiredObject: RuleType}},
		{"not JSON", NativeJSON(`{"unterminated"`), map[jsonShape]Rule{anyJSON: RuleSyntax, optionalObject: RuleSyntax, requiredObject: RuleSyntax}},
		{"two values", NativeJSON(`50 2`), map[jsonShape]Rule{anyJSON: RuleSyntax, optionalObject: RuleSyntax, requiredObject: RuleSyntax}},
		{"whitespace only", NativeJSON("  "), map[jsonShape]Rule{anyJSON: RuleSyntax, optionalObject: RuleSyntax, requiredObject: RuleSyntax}},
	}
	for _, m := range members {
		for _, val := range values {
			want := val.want[m.shape]
			if m.nilIsAbsent && val.v == nil {
				want = ""
			}
			err := m.validate(val.v)
			if want == "" {
				require.NoError(t, err, "%s: %s", m.field, val.name)
				continue
			}
			requireFieldError(t, err, m.field, want)
		}
	}
}

// TestNativeJSONDecodesCompact: whitespace is not part of a decoded value,
// and the encoding is that of json.RawMessage.
func TestNativeJSONDecodesCompact(t *testing.T) {
	var p FunctionCall
	require.NoError(t, json.Unmarshal([]byte(`{"call_id":"c","name":"f","arguments": { "a" : [1, 2] } }`), &p))
	require.Equal(t, NativeJSON(`{"a":[1,2]}`), p.Arguments)
	for _, v := range []string{`{"a":"<&>"}`, `null`, `[1, {"b": 2}]`} {
		native, err := json.Marshal(struct {
			V NativeJSON `json:"v"`
		}{NativeJSON(v)})
		require.NoError(t, err)
		raw, err := json.Marshal(struct {
			V json.RawMessage `json:"v"`
		}{json.RawMessage(v)})
		require.NoError(t, err)
		require.Equal(t, string(raw), string(native), v)
	}
	out, err := json.Marshal(FunctionCall{CallID: "c", Name: "f"})
	require.NoError(t, err)
	require.JSONEq(t, `{"call_id":"c","name":"f","arguments":null}`, string(out), "nil encodes as null")
}

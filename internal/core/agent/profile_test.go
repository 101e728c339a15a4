package agent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

func TestQualifyNamesTheUnqualifiedField(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	fn := []wire.FunctionTool{{Name: "f", Parameters: wire.NativeJSON(schema)}}
	for _, tc := range []struct {
		name  string
		def   Definition
		field string
	}{
		{"function tools", Definition{FunctionTools: fn}, "function_tools"},
		{"json schema", Definition{OutputFormat: &OutputFormat{Type: "json_schema", Schema: schema}}, "output_format"},
		{"subagents", Definition{MultiAgent: &MultiAgent{Enabled: true}}, "multi_agent.enabled"},
		{"tool search", Definition{ToolSearch: true}, "tool_search"},
		{"programmatic", Definition{DisableProgrammaticToolCalling: true}, "disable_programmatic_tool_calling"},
		{"mcp", Definition{MCPServers: []MCPServer{{ServerLabel: "a", ServerURL: "https://h/mcp"}}}, "mcp_servers"},
		{"verbosity", Definition{TextVerbosity: wire.TextVerbosityHigh}, "text_verbosity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.def.AgentKind = "exec"
			err := DefaultProfiles().Lookup("exec").Qualify(tc.def)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.Contains(t, fe.Detail, "agent kind exec")
			if tc.field == "text_verbosity" {
				tc.def.AgentKind = "codex"
				assert.NoError(t, DefaultProfiles().Lookup("codex").Qualify(tc.def), "codex declares the control")
				return
			}
			tc.def.AgentKind = "script"
			assert.NoError(t, DefaultProfiles().Lookup("script").Qualify(tc.def), "script qualifies every feature")
		})
	}
	// A text output format and multi_agent disabled ask for nothing.
	assert.NoError(t, Profile{}.Qualify(Definition{AgentKind: "x", OutputFormat: &OutputFormat{Type: "text"}, MultiAgent: &MultiAgent{}}))
}

func TestShippedProfiles(t *testing.T) {
	ps := DefaultProfiles()
	assert.Equal(t, wire.EngineProfile{WebSearchControl: true, TextVerbosity: true}, ps.Lookup("codex").Wire(), "codex sets both controls")
	assert.Equal(t, wire.EngineProfile{}, ps.Lookup("claude").Wire(), "Claude Code has neither control")
	assert.True(t, ps.Lookup("claude").Features.FunctionTools)
	assert.Equal(t, Profile{AgentKind: "gemini", Features: Features{FunctionTools: true}}, ps.Lookup("gemini"),
		"gemini qualifies function tools (the ACP adapter's MCP server) and nothing else")
	assert.Equal(t, Profile{AgentKind: "mystery"}, ps.Lookup("mystery"), "an unknown kind qualifies nothing")
	kinds := []string{}
	for _, p := range ps.Sorted() {
		kinds = append(kinds, p.AgentKind)
	}
	assert.IsIncreasing(t, kinds)
}

// A profile the admission table reads: a declared control requires its
// capability on every Run of the kind.
func TestProfileControlsRequireTheirCapabilities(t *testing.T) {
	set, err := wire.RequiredCapabilities(wire.AdmissionInput{Environment: wire.EnvironmentTypeNone, Profile: DefaultProfiles().Lookup("codex").Wire()})
	require.NoError(t, err)
	assert.True(t, set.Has("web_search_control"))
	assert.True(t, set.Has("text_verbosity"))
	set, err = wire.RequiredCapabilities(wire.AdmissionInput{Environment: wire.EnvironmentTypeNone, Profile: DefaultProfiles().Lookup("claude").Wire()})
	require.NoError(t, err)
	assert.False(t, set.Has("web_search_control"))
}

func TestParseProfiles(t *testing.T) {
	ps, err := ParseProfiles("p.json", []byte(`{"profiles":[{"agent_kind":"exec","features":{"function_tools":true}},{"agent_kind":"gemini","controls":{"text_verbosity":true}}]}`))
	require.NoError(t, err)
	assert.True(t, ps.Lookup("exec").Features.FunctionTools, "a listed profile replaces the default")
	assert.True(t, ps.Lookup("gemini").Controls.TextVerbosity)
	assert.Equal(t, DefaultProfiles().Lookup("codex"), ps.Lookup("codex"), "the others keep their defaults")

	for body, want := range map[string]string{
		`{"profiles":[{"agent_kind":"exec","featurez":{}}]}`:             `unknown field "featurez"`,
		`{"profiles":[{"controls":{}}]}`:                                 "profiles[0].agent_kind: required",
		`{"profiles":[{"agent_kind":"a"},{"agent_kind":"a"}]}`:           `profiles[1].agent_kind: "a" is listed twice`,
		`{"profiles":[]} {}`:                                             "data after the document",
		`{"profiles":[{"agent_kind":"a","features":{"tool_search":1}}]}`: "tool_search",
	} {
		_, err := ParseProfiles("p.json", []byte(body))
		require.Error(t, err, body)
		assert.Contains(t, err.Error(), "p.json", body)
		assert.Contains(t, err.Error(), want, body)
	}
}

package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

func TestValidateNamesTheField(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	fn := wire.NativeJSON(obj)
	for _, tc := range []struct {
		name  string
		def   Definition
		field string
	}{
		{"no kind", Definition{}, "agent_kind"},
		{"blank kind", Definition{AgentKind: "  "}, "agent_kind"},
		{"unnamed function", Definition{AgentKind: "codex", FunctionTools: []wire.FunctionTool{{Parameters: fn}}}, "function_tools[0].name"},
		{"twice", Definition{AgentKind: "codex", FunctionTools: []wire.FunctionTool{{Name: "f", Parameters: fn}, {Name: "f", Parameters: fn}}}, "function_tools[1].name"},
		{"deferred without search", Definition{AgentKind: "codex", FunctionTools: []wire.FunctionTool{{Name: "f", Parameters: fn, DeferLoading: true}}}, "function_tools[0].defer_loading"},
		{"parameters not an object", Definition{AgentKind: "codex", FunctionTools: []wire.FunctionTool{{Name: "f", Parameters: wire.NativeJSON(`[1]`)}}}, "function_tools[0].parameters"},
		{"no parameters", Definition{AgentKind: "codex", FunctionTools: []wire.FunctionTool{{Name: "f"}}}, "function_tools[0].parameters"},
		{"schema missing", Definition{AgentKind: "codex", OutputFormat: &OutputFormat{Type: "json_schema"}}, "output_format.schema"},
		{"text with schema", Definition{AgentKind: "codex", OutputFormat: &OutputFormat{Type: "text", Schema: obj}}, "output_format.schema"},
		{"unknown format", Definition{AgentKind: "codex", OutputFormat: &OutputFormat{Type: "xml"}}, "output_format.type"},
		{"verbosity", Definition{AgentKind: "codex", TextVerbosity: "loud"}, "text_verbosity"},
		{"search with nothing deferred", Definition{AgentKind: "codex", ToolSearch: true, FunctionTools: []wire.FunctionTool{{Name: "f", Parameters: fn}}}, "tool_search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.def.Validate()
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.NotEmpty(t, fe.Detail)
		})
	}
	require.NoError(t, Definition{AgentKind: "codex", ToolSearch: true, OutputFormat: &OutputFormat{Type: "text"},
		FunctionTools: []wire.FunctionTool{{Name: "f", Parameters: fn, DeferLoading: true}}}.Validate())
}

// An Agent's features are what admission requires; a bare definition
// requires nothing beyond its kind.
func TestFeaturesDriveAdmission(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	fn := wire.NativeJSON(obj)
	req := func(d Definition) wire.CapabilitySet {
		t.Helper()
		set, err := wire.RequiredCapabilities(wire.AdmissionInput{Environment: wire.EnvironmentTypeNone, Agent: d.Features()})
		require.NoError(t, err)
		return set
	}
	base := req(Definition{AgentKind: "codex"})
	full := req(Definition{AgentKind: "codex", ToolSearch: true, MultiAgent: &MultiAgent{Enabled: true},
		DisableProgrammaticToolCalling: true,
		OutputFormat:                   &OutputFormat{Type: "json_schema", Schema: obj},
		FunctionTools:                  []wire.FunctionTool{{Name: "f", Parameters: fn, DeferLoading: true}}})
	for _, c := range []string{"function_tools", "structured_output", "tool_search", "programmatic_tool_calling_disable"} {
		assert.False(t, base.Has(c), "%s without the feature", c)
		assert.True(t, full.Has(c), "%s with the feature", c)
	}
}

func TestConfigureCarriesTheAgent(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	d := Definition{AgentKind: "codex", Model: "m-1", Instructions: "be brief", TextVerbosity: wire.TextVerbosityLow,
		OutputFormat:  &OutputFormat{Type: "json_schema", Schema: schema},
		FunctionTools: []wire.FunctionTool{{Name: "lookup", Parameters: wire.NativeJSON(schema)}}}
	var req wire.PromptRequest
	var sc wire.SessionConfig
	d.Configure(&req, &sc)
	require.NotNil(t, req.AgentOptions)
	assert.Equal(t, "m-1", *req.AgentOptions.Model)
	assert.Equal(t, "be brief", *req.AgentOptions.SystemPrompt)
	assert.Equal(t, d.FunctionTools, req.FunctionTools)
	assert.Equal(t, wire.NativeJSON(schema), sc.OutputSchema)
	assert.Equal(t, wire.TextVerbosityLow, sc.TextVerbosity)
	assert.False(t, sc.MultiAgentEnabled)

	var bare wire.PromptRequest
	Definition{AgentKind: "codex"}.Configure(&bare, &wire.SessionConfig{})
	assert.Nil(t, bare.AgentOptions, "no options invented for a bare Agent")
}

func TestMCPServers(t *testing.T) {
	server := func(s MCPServer) Definition { return Definition{AgentKind: "codex", MCPServers: []MCPServer{s}} }
	ok := MCPServer{ServerLabel: "docs", ServerURL: "https://mcp.example.com/mcp"}
	require.NoError(t, server(ok).Validate())
	for _, tc := range []struct {
		name  string
		def   Definition
		field string
	}{
		{"no label", server(MCPServer{ServerURL: ok.ServerURL}), "mcp_servers[0].server_label"},
		{"twice", Definition{AgentKind: "codex", MCPServers: []MCPServer{ok, ok}}, "mcp_servers[1].server_label"},
		{"relative", server(MCPServer{ServerLabel: "a", ServerURL: "/mcp"}), "mcp_servers[0].server_url"},
		{"ftp", server(MCPServer{ServerLabel: "a", ServerURL: "ftp://h/mcp"}), "mcp_servers[0].server_url"},
		{"credentials in the URL", server(MCPServer{ServerLabel: "a", ServerURL: "https://u:p@h/mcp"}), "mcp_servers[0].server_url"},
		{"origin", server(MCPServer{ServerLabel: "a", ServerURL: ok.ServerURL, ConnectionOrigin: "anywhere"}), "mcp_servers[0].connection_origin"},
		{"allowed twice", server(MCPServer{ServerLabel: "a", ServerURL: ok.ServerURL, AllowedTools: &[]string{"x", "x"}}), "mcp_servers[0].allowed_tools[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fe *FieldError
			require.ErrorAs(t, tc.def.Validate(), &fe)
			assert.Equal(t, tc.field, fe.Field)
		})
	}

	// Required servers and their presence reach admission.
	req := server(MCPServer{ServerLabel: "docs", ServerURL: ok.ServerURL, Required: true})
	set, err := wire.RequiredCapabilities(wire.AdmissionInput{Environment: wire.EnvironmentTypeNone, Agent: req.Features()})
	require.NoError(t, err)
	assert.True(t, set.Has("mcp_http_tools"))
	assert.True(t, set.Has("mcp_http_required"))
	set, err = wire.RequiredCapabilities(wire.AdmissionInput{Environment: wire.EnvironmentTypeNone, Agent: server(ok).Features()})
	require.NoError(t, err)
	assert.False(t, set.Has("mcp_http_required"), "no server is required")

	// An origin left to Core follows the Session's Environment; an explicit
	// one the Environment cannot carry is named.
	for _, tc := range []struct {
		env  wire.EnvironmentType
		want string
	}{{wire.EnvironmentTypeNone, wire.MCPOriginService}, {wire.EnvironmentTypeSelfHosted, wire.MCPOriginEnvironment}} {
		var p wire.PromptRequest
		server(ok).Configure(&p, &wire.SessionConfig{Environment: tc.env})
		require.NotNil(t, p.MCPHTTPServers)
		assert.Equal(t, tc.want, (*p.MCPHTTPServers)[0].ConnectionOrigin, "%s", tc.env)
		assert.Nil(t, (*p.MCPHTTPServers)[0].BearerToken, "no credential is invented")
	}
	assert.NoError(t, server(ok).CheckOrigins(true))
	var fe *FieldError
	require.ErrorAs(t, server(MCPServer{ServerLabel: "a", ServerURL: ok.ServerURL, ConnectionOrigin: wire.MCPOriginService}).CheckOrigins(true), &fe)
	assert.Equal(t, "mcp_servers[0].connection_origin", fe.Field)
	require.ErrorAs(t, server(MCPServer{ServerLabel: "a", ServerURL: ok.ServerURL, ConnectionOrigin: wire.MCPOriginEnvironment}).CheckOrigins(false), &fe)
}

func TestCheckKind(t *testing.T) {
	for _, ok := range []string{"codex", "claude", "acp:gemini", "my-agent_2"} {
		assert.NoError(t, CheckKind(ok), ok)
	}
	for _, bad := range []string{"", "co\x00dex", "a b", "tab\there", "bell\a", strings.Repeat("k", 129), "\xff"} {
		assert.Error(t, CheckKind(bad), "%q", bad)
	}
	var fe *FieldError
	require.ErrorAs(t, Definition{AgentKind: "co\ndex"}.Validate(), &fe)
	assert.Equal(t, "agent_kind", fe.Field)
}

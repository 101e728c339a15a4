package harness_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

func ptr[T any](v T) *T { return &v }

// gateCases asks for each optional operation of a configuration once: the
// capability it needs and the request that asks for it.
var gateCases = []struct {
	capability string
	cfg        wire.PromptRequest
}{
	{"environment_none", wire.PromptRequest{DisableExecutionEnvironment: true}},
	{"local_environment", wire.PromptRequest{LocalEnvironment: &wire.LocalEnvironment{ID: "e"}}},
	{"execution_controls", wire.PromptRequest{ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium}}},
	{"tool_observations", wire.PromptRequest{ObserveToolObservations: true}},
	{"message_items", wire.PromptRequest{ObserveMessages: true}},
	{"subagent_observations", wire.PromptRequest{ObserveSubagentIdentities: true}},
	{"subagent_control", wire.PromptRequest{DisableSubagents: true}},
	{"resume", wire.PromptRequest{AgentSessionID: "native"}},
	{"native_session_recovery", wire.PromptRequest{RequireExistingNativeSession: true}},
	{"workspace_authoring", wire.PromptRequest{WorkspaceAuthoring: true}},
	{"function_tools", wire.PromptRequest{FunctionTools: []wire.FunctionTool{{Name: "f"}}}},
	{"tool_search", wire.PromptRequest{ToolSearch: true}},
	{"web_search_control", wire.PromptRequest{ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchLive, TextVerbosity: wire.TextVerbosityMedium}}},
	{"text_verbosity", wire.PromptRequest{ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityHigh}}},
	{"programmatic_tool_calling_disable", wire.PromptRequest{ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium, DisableProgrammaticToolCalling: true}}},
	{"structured_output", wire.PromptRequest{ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium,
		OutputFormat: &wire.OutputFormat{Type: wire.OutputFormatJSONSchema, Schema: wire.NativeJSON(`{"type":"object"}`)}}}},
	{"mcp_http_tools", wire.PromptRequest{MCPHTTPServers: &[]wire.MCPHTTPServer{{ServerLabel: "m"}}}},
	{"mcp_http_required", wire.PromptRequest{MCPHTTPServers: &[]wire.MCPHTTPServer{{ServerLabel: "m", Required: true}}}},
	{"mcp_http_bearer_auth", wire.PromptRequest{MCPHTTPServers: &[]wire.MCPHTTPServer{{ServerLabel: "m", BearerToken: ptr("t")}}}},
	{"message_images", wire.PromptRequest{Input: wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "a"}, {Type: wire.ContentImage, ImageURL: "https://x/i.png"}}}}}},
	{"workspace_read_preparation", wire.PromptRequest{WorkspaceReadOnly: true}},
}

// TestCheckConfigurationNamesTheCapability: each operation is refused,
// naming its capability, when exactly that capability is false, and
// admitted when every capability is declared.
func TestCheckConfigurationNamesTheCapability(t *testing.T) {
	for _, c := range gateCases {
		t.Run(c.capability, func(t *testing.T) {
			require.NoError(t, harness.CheckConfiguration(wiretest.Capabilities(), c.cfg))
			err := harness.CheckConfiguration(wiretest.Capabilities(wiretest.Unsupports(c.capability)), c.cfg)
			require.ErrorIs(t, err, harness.ErrUnsupportedOperation)
			var ue *harness.UnsupportedError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, c.capability, ue.Capability)
			assert.NotErrorIs(t, harness.Classify(false, err), harness.ErrContractViolation)
		})
	}
}

// TestCheckConfigurationCoreDefaults: what Core sends on every Run
// (disabled web search, medium verbosity) needs no optional control.
func TestCheckConfigurationCoreDefaults(t *testing.T) {
	caps := wiretest.Capabilities(wiretest.Unsupports("web_search_control", "text_verbosity"))
	cfg := wire.PromptRequest{ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium}, StrictResume: true}
	assert.NoError(t, harness.CheckConfiguration(caps, cfg))
}

func TestCheckSteerAndAnswer(t *testing.T) {
	image := wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentImage, ImageURL: "https://x/i.png"}}}}
	text := wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "a"}}}}
	all := wiretest.Capabilities()
	assert.NoError(t, harness.CheckSteer(all, image))
	assert.ErrorIs(t, harness.CheckSteer(wiretest.Capabilities(wiretest.Unsupports("steering")), text), harness.ErrUnsupportedOperation)
	assert.ErrorIs(t, harness.CheckSteer(wiretest.Capabilities(wiretest.Unsupports("message_images")), image), harness.ErrUnsupportedOperation)

	yes := true
	perm := harness.Answer{Permission: &wire.PermissionDecision{Approved: &yes}}
	choice := harness.Answer{Choice: &wire.PromptForUserChoiceDecision{Cancelled: true}}
	result := harness.Answer{Result: &wire.FunctionResult{Success: &yes, Content: []wire.InputContent{{Type: wire.ContentImage, ImageURL: "https://x/i.png"}}}}
	for _, a := range []harness.Answer{perm, choice, result} {
		assert.NoError(t, harness.CheckAnswer(all, a))
	}
	noPerm := wiretest.Capabilities(wiretest.Unsupports("permissions"))
	assert.ErrorIs(t, harness.CheckAnswer(noPerm, perm), harness.ErrUnsupportedOperation)
	assert.ErrorIs(t, harness.CheckAnswer(noPerm, choice), harness.ErrUnsupportedOperation)
	assert.NoError(t, harness.CheckAnswer(noPerm, result))
	assert.ErrorIs(t, harness.CheckAnswer(wiretest.Capabilities(wiretest.Unsupports("function_tools")), result), harness.ErrUnsupportedOperation)
	assert.ErrorIs(t, harness.CheckAnswer(wiretest.Capabilities(wiretest.Unsupports("function_result_images")), result), harness.ErrUnsupportedOperation)
}

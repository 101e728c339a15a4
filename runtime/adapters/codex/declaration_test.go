package codex

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every field of the declaration, decided here one by one: a new field
// fails this test until it is decided (daemon-protocol.txt:31). Each true
// names the test that shows it against the real CLI.
func TestDeclarationDecidesEveryField(t *testing.T) {
	want := map[string]bool{
		"streaming":                         true,  // TestHarnessCodexHello
		"steering":                          true,  // TestHarnessCodexSteeringWrittenThenAccepted
		"durable_turns":                     true,  // TestHarnessCodexInterrupt, TestHarnessCodexProviderErrorsAreClassified
		"durable_input_receipts":            true,  // TestHarnessCodexSteeringWrittenThenAccepted
		"preparation":                       true,  // every TestHarness* (NewExecutor), TestHarnessCodexStrictResumeOfAnUnknownThreadFails
		"execution_controls":                true,  // TestHarnessCodexHello (web search, verbosity), TestHarnessCodexStructuredOutput
		"tool_observations":                 true,  // TestHarnessCodexApprovedCommandRuns
		"permissions":                       true,  // TestHarnessCodexApprovedCommandRuns, TestHarnessCodexDeniedCommandDoesNotRun
		"usage":                             true,  // TestHarnessCodexHello, TestHarnessCodexResumeOnANewExecutor
		"resume":                            true,  // TestHarnessCodexResumeOnANewExecutor
		"message_items":                     true,  // TestHarnessCodexHello
		"environment_none":                  true,  // TestHarnessCodexEnvironmentNone
		"local_environment":                 true,  // TestHarnessCodexApprovedCommandRuns (the workspace is the cwd)
		"workspace_read_preparation":        true,  // the daemon's own implementation (runtime/execution)
		"workspace_output_export":           true,  // the daemon's own implementation (runtime/execution)
		"web_search_control":                true,  // TestHarnessCodexHello
		"text_verbosity":                    true,  // TestHarnessCodexHello
		"structured_output":                 true,  // TestHarnessCodexStructuredOutput
		"subagent_control":                  true,  // TestHarnessCodexHello (no multi_agent tool)
		"subagent_observations":             false, // no child-agent frames are mapped
		"native_session_recovery":           false, // no recovery without a recorded thread ID
		"workspace_authoring":               false,
		"programmatic_tool_calling_disable": false,
		"tool_search":                       false,
		"message_images":                    false, // text only; images are refused (TestHarnessCodexRefusesImages)
		"function_result_images":            false,
		"function_tools":                    true, // TestHarnessCodexFunctionTool
		"mcp_http_tools":                    false,
		"mcp_http_required":                 false,
		"mcp_http_bearer_auth":              false,
	}
	c := capabilities()
	require.NoError(t, c.Validate())
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var got map[string]bool
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, want, got)
}

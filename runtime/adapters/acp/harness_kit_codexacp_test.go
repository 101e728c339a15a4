package acp

// The Harness conformance kit against the REAL codex-acp (make harnesses)
// and the scripted Responses API on 127.0.0.1, with the hook of
// harness_kit_test.go speaking Codex's tools: every capability the
// codex-acp kind declares true passes its scenario, every one declared
// false its refusal, at the Harness level and through the daemon.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

func TestHarnessCodexACPConformance(t *testing.T) {
	bin := install.RequireCodexACP(t)
	n := newKitNative(t, codexACPDialect)
	t.Setenv("AW_TEST_CODEX_ACP_KEY", "sk-dummy")
	// A model Codex has metadata for: for any other, codex-acp says a
	// warning as agent text, which ACP cannot tell from the answer.
	ag, err := CodexACP(CodexACPConfig{Binary: bin, Model: "gpt-5.4", BaseURL: n.srv.OpenAIBaseURL(), APIKeyEnv: "AW_TEST_CODEX_ACP_KEY"})
	require.NoError(t, err)
	n.run(t, ag)
}

// codexACPDialect: codex-acp on the Responses API.
var codexACPDialect = kitDialect{
	agent: "codex-acp",
	// A command in the sandbox runs unasked (and fails: codex-acp cannot
	// sandbox here, codexacp.go); it is reported all the same.
	tool:       modeltest.CodexExec("echo kit-tool"),
	toolResult: "exec_command",
	// A command the model asks to run outside the sandbox asks.
	ask: func(proof, what string) modeltest.Part {
		return modeltest.CodexExecEscalated(fmt.Sprintf("echo %[1]s > %[1]s.txt && cat %[1]s.txt", proof), what)
	},
	userParts: responsesUserParts,
	controls: func(t *testing.T, cfg wire.PromptRequest, first *modeltest.Request) {
		for _, tool := range first.Tools() {
			assert.NotEqual(t, "web_search", tool.Type, "web search disabled: offered %v", first.ToolNames())
		}
		if cfg.DisableSubagents {
			assert.False(t, first.HasTool("spawn_agent"), "subagents disabled: offered %v", first.ToolNames())
		}
	},
}

// responsesUserParts is the input_text parts of the request's last user
// message (Responses API input items).
func responsesUserParts(r *modeltest.Request) []string {
	items, _ := r.Body["input"].([]any)
	for i := len(items) - 1; i >= 0; i-- {
		m, _ := items[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		var out []string
		content, _ := m["content"].([]any)
		for _, c := range content {
			cm, _ := c.(map[string]any)
			if cm["type"] == "input_text" {
				if s, ok := cm["text"].(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	return nil
}

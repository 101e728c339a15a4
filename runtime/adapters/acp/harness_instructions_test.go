package acp

// The Agent's instructions (agent_options.system_prompt) reach the model
// through the REAL agents: Gemini CLI's global context file, codex-acp's
// developer instructions. Each is checked in the request the scripted
// model endpoint received, beside a Run without them.

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// instructions hold characters a configuration file must escape.
const instructions = "Answer as the \"Zebra-7\" desk.\nQuote paths like C:\\tmp\\x and tabs\there."

func withInstructions(s string) *wire.AgentOptions { return &wire.AgentOptions{SystemPrompt: &s} }

func TestHarnessGeminiAgentInstructions(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("Noted."))))
	a := geminiAdapter(t, srv)
	e := startGeminiWith(t, a, t.TempDir(), wire.PromptRequest{AgentOptions: withInstructions(instructions)})
	ctx, cancel := context.WithTimeout(t.Context(), cliWait)
	defer cancel()
	d, err := e.Run(ctx, harness.Turn{RunID: "run-ins-1", Input: text("who are you"), Declaration: a.Declaration()}, newRecorder().emit)
	require.NoError(t, err)
	assert.Equal(t, "Noted.", d.Content)
	reqs := srv.TurnRequests()
	require.NotEmpty(t, reqs)
	sys := systemText(t, reqs[0])
	assert.Contains(t, sys, `Answer as the "Zebra-7" desk.`, "the instructions are in the system instruction")
	assert.Contains(t, sys, `C:\tmp\x`)
	assert.NotContains(t, userText(reqs[0]), "Zebra-7", "not sent as the user's words")

	// Without instructions the model sees none of them.
	srv2 := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("Plain."))))
	a2 := geminiAdapter(t, srv2)
	e2 := startGeminiWith(t, a2, t.TempDir(), wire.PromptRequest{})
	_, err = e2.Run(ctx, harness.Turn{RunID: "run-ins-2", Input: text("who are you"), Declaration: a2.Declaration()}, newRecorder().emit)
	require.NoError(t, err)
	require.NotEmpty(t, srv2.TurnRequests())
	assert.NotContains(t, string(srv2.TurnRequests()[0].RawBody), "Zebra-7")
}

func TestHarnessCodexACPAgentInstructions(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithTurns(modeltest.Reply(modeltest.Text("Noted."))))
	a := codexACPAdapter(t, srv)
	decl := a.Declaration()
	ctx, cancel := context.WithTimeout(t.Context(), cliWait)
	defer cancel()
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000c9",
		Configuration: wire.PromptRequest{ObserveToolObservations: true, AgentOptions: withInstructions(instructions),
			ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}},
		Declaration: decl, WorkspaceDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		assert.NoError(t, exe.Close(cctx))
	})
	d, err := exe.(*executor).Run(ctx, harness.Turn{RunID: "run-ins-cx", Input: text("who are you"), Declaration: decl}, newRecorder().emit)
	require.NoError(t, err, "codex-acp took the configuration with the instructions in it")
	assert.Equal(t, "Noted.", d.Content)
	reqs := srv.TurnRequests()
	require.NotEmpty(t, reqs)
	found := false
	for _, item := range inputItems(reqs[0]) {
		if item["role"] == "developer" && strings.Contains(contentText(item), instructions) {
			found = true
		}
	}
	assert.True(t, found, "the instructions are a developer message, verbatim: %s", reqs[0].RawBody)
}

func TestTOMLStringEscapes(t *testing.T) {
	assert.Equal(t, `"a\"b\\c\nd\te\u0001\u007F"`, tomlString("a\"b\\c\nd\te\x01\x7f"))
	assert.Equal(t, `"Zürich ✓"`, tomlString("Zürich ✓"))
}

// systemText is the Gemini request's system instruction, its parts' text
// joined.
func systemText(t *testing.T, r *modeltest.Request) string {
	t.Helper()
	si, _ := r.Body["systemInstruction"].(map[string]any)
	require.NotNil(t, si, "the request has a system instruction: %s", r.RawBody)
	return partsText(si)
}

// userText is the text of the Gemini request's user contents.
func userText(r *modeltest.Request) string {
	var b strings.Builder
	contents, _ := r.Body["contents"].([]any)
	for _, c := range contents {
		if m, _ := c.(map[string]any); m != nil && m["role"] == "user" {
			b.WriteString(partsText(m))
		}
	}
	return b.String()
}

func partsText(m map[string]any) string {
	var b strings.Builder
	parts, _ := m["parts"].([]any)
	for _, p := range parts {
		if pm, _ := p.(map[string]any); pm != nil {
			s, _ := pm["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// inputItems are the Responses request's input items.
func inputItems(r *modeltest.Request) []map[string]any {
	var out []map[string]any
	items, _ := r.Body["input"].([]any)
	for _, it := range items {
		if m, _ := it.(map[string]any); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// contentText is a Responses message item's text, its parts joined.
func contentText(item map[string]any) string {
	switch c := item["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if pm, _ := p.(map[string]any); pm != nil {
				s, _ := pm["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

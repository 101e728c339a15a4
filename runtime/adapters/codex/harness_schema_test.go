package codex

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
)

// The pin matches the version the install package installs.
func TestPinnedVersionIsTheInstalledOne(t *testing.T) {
	assert.Equal(t, install.CodexVersion, PinnedVersion)
}

// Every method, notification and server request the adapter uses exists
// in the pinned version's generated schema (the protocol is experimental
// and changes between releases). The schema is generated with
// --experimental: the adapter initializes with experimentalApi, and its
// function tools (thread/start's dynamicTools) exist only there.
func TestHarnessCodexSchemaHasWhatTheAdapterUses(t *testing.T) {
	bin := install.RequireCodex(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "app-server", "generate-json-schema", "--experimental", "--out", out)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+t.TempDir())
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	uses := map[string][]string{
		"ClientRequest.json":      {mInitialize, mThreadStart, mThreadResume, mTurnStart, mTurnSteer, mTurnInterrupt},
		"ClientNotification.json": {mInitialized},
		"ServerNotification.json": {nAgentDelta, nReasoningSumm, nReasoningText, nItemStarted, nItemCompleted, nTokenUsage, nTurnCompleted, nError, nRequestResolved},
		"ServerRequest.json":      {rCommandApproval, rFileApproval, rToolCall},
	}
	for file, methods := range uses {
		raw, err := os.ReadFile(filepath.Join(out, file))
		require.NoError(t, err)
		var doc struct {
			OneOf []struct {
				Properties struct {
					Method struct {
						Enum []string `json:"enum"`
					} `json:"method"`
				} `json:"properties"`
			} `json:"oneOf"`
		}
		require.NoError(t, json.Unmarshal(raw, &doc))
		have := map[string]bool{}
		for _, m := range doc.OneOf {
			for _, n := range m.Properties.Method.Enum {
				have[n] = true
			}
		}
		for _, m := range methods {
			assert.Truef(t, have[m], "%s lists no %q in codex %s", file, m, PinnedVersion)
		}
	}
	// The item types and the members the mapping reads.
	raw, err := os.ReadFile(filepath.Join(out, "v2", "ItemStartedNotification.json"))
	require.NoError(t, err)
	for _, typ := range []string{itemUserMessage, itemAgentMessage, itemCommand, itemFileChange, itemMCPTool, itemDynamicTool, itemWebSearch,
		`"clientId"`, `"aggregatedOutput"`, `"exitCode"`, `"phase"`} {
		assert.Contains(t, string(raw), typ)
	}

	// The function tools: declared on thread/start, called with
	// item/tool/call (toolCallParams), answered with toolCallResponse.
	members := map[string][]string{
		"ClientRequest.json":           {`"dynamicTools"`, `"inputSchema"`},
		"DynamicToolCallParams.json":   {`"callId"`, `"tool"`, `"arguments"`, `"threadId"`, `"turnId"`},
		"DynamicToolCallResponse.json": {`"contentItems"`, `"success"`, `"inputText"`},
		// The sandbox: the thread configuration that keeps /tmp and
		// $TMPDIR out of the writable roots, and the effective policy
		// thread/start and thread/resume answer, which checkSandbox reads.
		"v2/ConfigReadResponse.json":   {`"sandbox_workspace_write"`, `"exclude_slash_tmp"`, `"exclude_tmpdir_env_var"`},
		"v2/ThreadStartResponse.json":  {`"workspaceWrite"`, `"excludeSlashTmp"`, `"excludeTmpdirEnvVar"`, `"writableRoots"`},
		"v2/ThreadResumeResponse.json": {`"workspaceWrite"`, `"excludeSlashTmp"`, `"excludeTmpdirEnvVar"`, `"writableRoots"`},
	}
	for file, want := range members {
		raw, err := os.ReadFile(filepath.Join(out, file))
		require.NoError(t, err)
		for _, m := range want {
			assert.Containsf(t, string(raw), m, "%s in codex %s", file, PinnedVersion)
		}
	}
}

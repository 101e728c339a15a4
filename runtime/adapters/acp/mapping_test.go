package acp

import (
	"path/filepath"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

func TestChooseNeverGrantsAlways(t *testing.T) {
	gemini := []sdk.PermissionOption{{OptionId: "proceed_always", Kind: sdk.PermissionOptionKindAllowAlways},
		{OptionId: "proceed_once", Kind: sdk.PermissionOptionKindAllowOnce}, {OptionId: "cancel", Kind: sdk.PermissionOptionKindRejectOnce}}
	id, ok := choose(gemini, true)
	assert.True(t, ok)
	assert.Equal(t, sdk.PermissionOptionId("proceed_once"), id)
	id, ok = choose(gemini, false)
	assert.True(t, ok)
	assert.Equal(t, sdk.PermissionOptionId("cancel"), id)
	_, ok = choose([]sdk.PermissionOption{{OptionId: "a", Kind: sdk.PermissionOptionKindAllowAlways}}, true)
	assert.False(t, ok, "an approval never widens to allow_always")
	id, ok = choose([]sdk.PermissionOption{{OptionId: "never", Kind: sdk.PermissionOptionKindRejectAlways}}, false)
	assert.True(t, ok)
	assert.Equal(t, sdk.PermissionOptionId("never"), id)
}

func TestFSPathsStayInTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	c := &client{e: &executor{wsDir: dir, ws: ws}}
	rel, err := c.relPath(filepath.Join(dir, "a", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a/b.txt", rel)
	for _, p := range []string{filepath.Join(dir, "..", "x"), "/etc/passwd", "relative.txt", filepath.Join(dir, "bad\xff"), dir + "/a\x00b"} {
		_, err := c.relPath(p)
		assert.Error(t, err, p)
	}
}

func TestLinesSelectsByLineAndLimit(t *testing.T) {
	one, two := 2, 1
	assert.Equal(t, "b\n", lines("a\nb\nc\n", &one, &two))
	assert.Equal(t, "b\nc\n", lines("a\nb\nc\n", &one, nil))
	far := 10
	assert.Equal(t, "", lines("a\n", &far, nil))
}

func TestToolNamesAndKinds(t *testing.T) {
	assert.Equal(t, "run_shell_command", toolName("run_shell_command__call_1", "execute"))
	assert.Equal(t, "execute", toolName("call_1", "execute"))
	assert.Equal(t, "tool", toolName("call_1", ""))
	assert.Equal(t, "command", observedKind("execute"))
	assert.Equal(t, "file_change", observedKind("edit"))
	assert.Equal(t, "tool", observedKind("read"))
}

func TestAKindWithoutControlsIsRefusedWithTheReason(t *testing.T) {
	_, err := New(Config{Agent: Agent{Kind: "other", Command: "/bin/true", Available: true}, StateDir: t.TempDir()})
	require.ErrorContains(t, err, "execution_controls")
	_, err = New(Config{Agent: Agent{Kind: "a=b", Command: "/bin/true"}})
	require.ErrorContains(t, err, "kind")
	_, err = New(Config{Agent: Agent{Kind: "k", Command: "/bin/true", Env: []string{"NOVALUE"},
		Controls: func(string, wire.PromptRequest) ([]string, error) { return nil, nil }}})
	require.ErrorContains(t, err, "NAME=value")
}

func TestDeclarationDecidesEveryField(t *testing.T) {
	a, err := New(Config{Agent: Agent{Kind: "k", Command: "/bin/true", Available: true, LoadSession: true,
		Controls: func(string, wire.PromptRequest) ([]string, error) { return nil, nil }}, StateDir: t.TempDir()})
	require.NoError(t, err)
	d := a.Declaration()
	require.NoError(t, d.Validate())
	for _, name := range []string{"streaming", "steering", "durable_turns", "durable_input_receipts", "preparation", "execution_controls", "tool_observations", "resume", "permissions"} {
		f, ok := wire.CapabilityFieldByName(name)
		require.True(t, ok)
		assert.True(t, f.Of(&d.Capabilities).Supports(), name)
	}
	assert.False(t, d.Capabilities.MessageItems.Supports())
	assert.False(t, d.Capabilities.Usage.Supports())
}

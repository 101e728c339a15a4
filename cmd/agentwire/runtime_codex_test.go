package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	claudeadapter "github.com/agentwire/agentwire/runtime/adapters/claude"
	codexadapter "github.com/agentwire/agentwire/runtime/adapters/codex"
)

// --harness codex[=PATH] with the --codex-* flags: the pinned version
// registers available, another one unavailable; the model and base URL are
// required before anything connects.
func TestHarnessFlagCodex(t *testing.T) {
	fake := func(line string) string {
		p := filepath.Join(t.TempDir(), "codex")
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho '"+line+"'\n"), 0o755))
		return p
	}
	hc := harnessConfig{codexModel: "gpt-5.5", codexBaseURL: "http://127.0.0.1:9/v1", codexKeyEnv: "MY_KEY", codexState: t.TempDir()}
	var buf bytes.Buffer
	a, err := adapterWith("codex="+fake("codex-cli "+codexadapter.PinnedVersion), &buf, hc)
	require.NoError(t, err)
	d := a.Declaration()
	assert.Equal(t, "codex", d.Kind)
	assert.True(t, d.Available)
	assert.True(t, d.Capabilities.Steering.Supports())

	a, err = adapterWith("codex="+fake("codex-cli 0.1.0"), &buf, hc)
	require.NoError(t, err)
	assert.False(t, a.Declaration().Available)
	assert.Contains(t, buf.String(), "declared unavailable")

	_, err = adapterWith("codex=/bin/true", &buf, harnessConfig{codexBaseURL: "http://127.0.0.1:9/v1"})
	require.ErrorContains(t, err, "--codex-model")
	_, err = adapter("codex=/bin/true", &buf)
	require.ErrorContains(t, err, "--codex-base-url")
	_, err = adapterWith("codex="+fake("codex-cli "+codexadapter.PinnedVersion), &buf, harnessConfig{codexModel: "m", codexBaseURL: "file:///etc"})
	require.ErrorContains(t, err, "base URL")
}

// --harness claude[=PATH] with the --claude-* flags, as codex.
func TestHarnessFlagClaude(t *testing.T) {
	fake := func(line string) string {
		p := filepath.Join(t.TempDir(), "claude")
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho '"+line+"'\n"), 0o755))
		return p
	}
	hc := harnessConfig{claudeModel: "m", claudeBaseURL: "http://127.0.0.1:9", claudeKeyEnv: "MY_KEY", claudeState: t.TempDir()}
	var buf bytes.Buffer
	a, err := adapterWith("claude="+fake(claudeadapter.PinnedVersion+" (Claude Code)"), &buf, hc)
	require.NoError(t, err)
	d := a.Declaration()
	assert.Equal(t, "claude", d.Kind)
	assert.True(t, d.Available)
	assert.True(t, d.Capabilities.Steering.Supports())

	a, err = adapterWith("claude="+fake("1.0.0 (Claude Code)"), &buf, hc)
	require.NoError(t, err)
	assert.False(t, a.Declaration().Available)
	assert.Contains(t, buf.String(), "declared unavailable")

	_, err = adapterWith("claude=/bin/true", &buf, harnessConfig{})
	require.ErrorContains(t, err, "--claude-model")
	_, err = adapterWith("claude="+fake(claudeadapter.PinnedVersion+" (Claude Code)"), &buf, harnessConfig{claudeModel: "m", claudeBaseURL: "file:///etc"})
	require.ErrorContains(t, err, "base URL")
}

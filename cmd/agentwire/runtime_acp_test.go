package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --harness acp:KIND=COMMAND and gemini[=PATH]: malformed values and kinds
// whose execution controls the adapter cannot honour are refused with the
// reason; a gemini binary of another version registers the kind
// unavailable.
func TestACPHarnessFlag(t *testing.T) {
	var buf bytes.Buffer
	_, err := adapter("acp:other", &buf)
	require.ErrorContains(t, err, "acp:KIND=COMMAND")
	_, err = adapter("acp:other=  ", &buf)
	require.ErrorContains(t, err, "acp:KIND=COMMAND")
	_, err = adapter("acp:other=/bin/true --acp", &buf)
	require.ErrorContains(t, err, "execution_controls", "no way to turn web search off for an unknown agent")
	require.ErrorContains(t, err, "gemini", "the refusal names the agents the adapter knows")

	_, err = adapterWith("gemini=/bin/true", &buf, harnessConfig{})
	require.ErrorContains(t, err, "--gemini-model")
	a, err := adapterWith("acp:gemini=/bin/true", &buf, harnessConfig{geminiModel: "gemini-2.5-pro", acpState: t.TempDir()})
	require.NoError(t, err)
	d := a.Declaration()
	assert.Equal(t, "gemini", d.Kind)
	assert.False(t, d.Available, "/bin/true is not Gemini CLI 0.61.0")
	assert.Contains(t, buf.String(), "declared unavailable")

	_, err = adapterWith("codex-acp=/bin/true", &buf, harnessConfig{codexACPModel: "gpt-5.4"})
	require.ErrorContains(t, err, "--codex-acp-base-url")
	buf.Reset()
	a, err = adapterWith("codex-acp=/bin/true", &buf, harnessConfig{codexACPModel: "gpt-5.4", codexACPBaseURL: "http://127.0.0.1:1/v1", acpState: t.TempDir()})
	require.NoError(t, err)
	d = a.Declaration()
	assert.Equal(t, "codex-acp", d.Kind)
	assert.False(t, d.Available, "/bin/true is not codex-acp 0.16.0")
	assert.True(t, d.Capabilities.Resume.Supports())
	assert.False(t, d.Capabilities.FunctionTools.Supports(), "not measured against codex-acp")
	assert.Contains(t, buf.String(), "declared unavailable")
}

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
)

// TestHarnessDemoCodex runs `agentwire demo --harness codex` as a real
// process with the real Codex CLI (skipped without it, failed under
// AGENTWIRE_REQUIRE_HARNESSES=1) and checks its transcript: a streamed
// answer, the approved command's file read back from the workspace, the
// active input written then accepted mid-Turn, done, and no secret
// anywhere.
func TestHarnessDemoCodex(t *testing.T) {
	install.RequireCodex(t)
	bin := buildAgentwire(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "demo", "--harness", "codex", "--out", out)
	cmd.Dir = filepath.Join("..", "..")
	cmd.WaitDelay = 10 * time.Second
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	t.Logf("agentwire demo --harness codex took %s", time.Since(start).Round(time.Millisecond))
	s := string(b)
	for _, want := range []string{
		"Runtime started with --harness codex",
		`event delta {"item_id":"msg_modeltest_0002","delta":"I will "`,
		"event permission_request",
		`"outcome":"applied"`,
		`"status":"completed","command":"/bin/bash -lc`,
		`"exit_code":0`,
		`"output":"wrote proof.txt\n"`,
		`the workspace's proof.txt, read back through the files API: "written by the agent in the agentwire demo\n"`,
		`event prompt_steer_ack {"input_id":"demo-input-1","accepted":false,"written":true}`,
		`event input_outcome {"input_id":"demo-input-1","outcome":"accepted"}`,
		`"delta":"You also asked which file: "`,
		"Runtime → Core  done",
		`outcome: {"state":"completed"}`,
	} {
		assert.Contains(t, s, want)
	}
	// The input came mid-answer: after the held delta, before the rest of
	// that message.
	held := strings.Index(s, `"delta":"and wrote proof.txt. "`)
	posted := strings.Index(s, `api   POST input "also say which file you wrote"`)
	resumed := strings.Index(s, `"delta":"Waiting for your next message."`)
	assert.True(t, held >= 0 && held < posted && posted < resumed, "the active input was sent while the model's answer was held")

	tr, err := os.ReadFile(filepath.Join(out, "transcript.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(tr), `Runtime → Core  {"type":"prompt_steer_ack"`)
	assert.Contains(t, string(tr), `Core → Runtime  {"type":"workspace_read"`)
	mmd, err := os.ReadFile(filepath.Join(out, "sequence.mmd"))
	require.NoError(t, err)
	assert.Contains(t, string(mmd), "participant Runtime as Runtime (codex, the real CLI)")
	assert.Contains(t, string(mmd), "Core->>Runtime: permission_decision")
	assert.Contains(t, string(mmd), "Runtime->>Core: prompt_steer_ack accepted")
	secret := regexp.MustCompile(`aw[dpa]_[A-Za-z0-9_-]{8,}`)
	for _, text := range []string{s, string(mmd), string(tr)} {
		assert.Empty(t, secret.FindAllString(text, -1))
		assert.NotContains(t, text, demoCodexKey, "the provider key is redacted")
	}
}

// Without the Codex CLI, `demo --harness codex` fails at once with one
// line naming make harnesses.
func TestDemoCodexWithoutTheCLI(t *testing.T) {
	bin := buildAgentwire(t)
	empty := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--harness", "codex", "--out", t.TempDir())
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+empty, install.EnvDir+"="+empty, "PATH="+empty)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", b)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Equal(t, "agentwire: demo --harness codex: the Codex CLI (@openai/codex "+install.CodexVersion+") is not installed: run make harnesses\n", string(b))
}

// The codex demo's hold ends on the Runtime's written (or final) receipt
// for its input, not on a retryable refusal or another input's receipt.
func TestDemoCodexSteerAck(t *testing.T) {
	line := func(dir, payload string) []byte {
		return []byte(`{"at":"2026-12-01T00:00:00Z","device":"demo-device","dir":"` + dir + `","frame":{"type":"prompt_steer_ack","id":"run_1","payload":` + payload + `}}`)
	}
	assert.True(t, steerAckFor(line("in", `{"input_id":"demo-input-1","accepted":false,"written":true}`), demoInputID))
	assert.True(t, steerAckFor(line("in", `{"input_id":"demo-input-1","accepted":true}`), demoInputID))
	assert.True(t, steerAckFor(line("in", `{"input_id":"demo-input-1","accepted":false,"error_code":"rejected"}`), demoInputID))
	assert.False(t, steerAckFor(line("in", `{"input_id":"demo-input-1","accepted":false,"error_code":"busy"}`), demoInputID), "Core sends it again")
	assert.False(t, steerAckFor(line("in", `{"input_id":"other","accepted":false,"written":true}`), demoInputID))
	assert.False(t, steerAckFor(line("out", `{"input_id":"demo-input-1","accepted":false,"written":true}`), demoInputID))
	assert.False(t, steerAckFor([]byte(`not json`), demoInputID))
}

// TestHarnessDemoClaude is TestHarnessDemoCodex with the real Claude Code
// CLI: the approved Bash command's file read back, the active input
// written then accepted mid-Turn (Claude Code takes it as a follow-up of
// the same Turn), done, and no secret anywhere.
func TestHarnessDemoClaude(t *testing.T) {
	install.RequireClaude(t)
	bin := buildAgentwire(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "demo", "--harness", "claude", "--out", out)
	cmd.Dir = filepath.Join("..", "..")
	cmd.WaitDelay = 10 * time.Second
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	t.Logf("agentwire demo --harness claude took %s", time.Since(start).Round(time.Millisecond))
	s := string(b)
	for _, want := range []string{
		"Runtime started with --harness claude",
		"event thinking",
		"event permission_request",
		`"outcome":"applied"`,
		`the workspace's proof.txt, read back through the files API: "written by the agent in the agentwire demo\n"`,
		`event prompt_steer_ack {"input_id":"demo-input-1","accepted":false,"written":true}`,
		`event input_outcome {"input_id":"demo-input-1","outcome":"accepted"}`,
		`"delta":"You also asked which file: "`,
		`outcome: {"state":"completed"}`,
	} {
		assert.Contains(t, s, want)
	}
	mmd, err := os.ReadFile(filepath.Join(out, "sequence.mmd"))
	require.NoError(t, err)
	assert.Contains(t, string(mmd), "participant Runtime as Runtime (claude, the real CLI)")
	tr, err := os.ReadFile(filepath.Join(out, "transcript.txt"))
	require.NoError(t, err)
	secret := regexp.MustCompile(`aw[dpa]_[A-Za-z0-9_-]{8,}`)
	for _, text := range []string{s, string(mmd), string(tr)} {
		assert.Empty(t, secret.FindAllString(text, -1))
		assert.NotContains(t, text, demoClaudeKey, "the provider key is redacted")
	}
}

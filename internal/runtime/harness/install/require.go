package install

import (
	"os"
	"testing"
)

// Required reports whether a missing harness must fail a test
// (AGENTWIRE_REQUIRE_HARNESSES=1, which `make check-harnesses` sets)
// instead of skipping it.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// RequireCodex returns the pinned Codex native binary. When it is not
// installed the test is skipped with "codex 0.171.0 not installed: run
// make harnesses", or fails with that message under
// AGENTWIRE_REQUIRE_HARNESSES=1.
func RequireCodex(t testing.TB) string {
	t.Helper()
	return requireHarness(t, CodexHarness)
}

// RequireClaude is RequireCodex for Claude Code.
func RequireClaude(t testing.TB) string {
	t.Helper()
	return requireHarness(t, ClaudeHarness)
}

func requireHarness(t testing.TB, h Harness) string {
	t.Helper()
	f, err := Find(h)
	if err == nil {
		return f.Path
	}
	if Required() {
		t.Fatalf("%v (%s=1)", err, EnvRequire)
		return ""
	}
	t.Skipf("%s %s not installed: run make harnesses", h.Name, h.Version)
	return ""
}

// RequireGemini is RequireCodex for Gemini CLI (node must be on PATH).
func RequireGemini(t testing.TB) string {
	t.Helper()
	return requireHarness(t, GeminiHarness)
}

// RequireCodexACP is RequireCodex for codex-acp's native binary.
func RequireCodexACP(t testing.TB) string {
	t.Helper()
	return requireHarness(t, CodexACPHarness)
}

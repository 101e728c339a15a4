package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests use fake binaries (shell scripts) in temporary directories
// and a fake npm; they need no network and no real CLI.

// claudeStub is the placeholder @anthropic-ai/claude-code 2.1.332 ships as
// bin/claude.exe (its first lines).
const claudeStub = `echo "Error: claude native binary not installed." >&2
echo "" >&2
echo "Either postinstall did not run (--ignore-scripts, some pnpm configs)" >&2
exit 1
`

// isolate points every lookup at empty temporary places: no
// AGENTWIRE_HARNESS_DIR, a default cache dir under a temp XDG_CACHE_HOME,
// and a PATH holding only a temp bin directory (returned).
func isolate(t *testing.T) (cacheDir, binDir string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake binaries are shell scripts")
	}
	xdg := t.TempDir()
	binDir = t.TempDir()
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", xdg)
	t.Setenv("PATH", binDir)
	return filepath.Join(xdg, "agentwire", "harnesses"), binDir
}

// fakeBinary writes an executable that prints line for --version.
func fakeBinary(t *testing.T, path, line string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = --version ] && echo '%s' && exit 0\nexit 3\n", line)
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
}

func nativePaths(t *testing.T, h Harness) []string {
	t.Helper()
	rels, err := h.native(runtime.GOOS, runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	return rels
}

// fakeInstall lays out dir as npm and the postinstall would: the Codex
// platform package's binary and Claude's bin/claude.exe.
func fakeInstall(t *testing.T, dir string) (codex, claude string) {
	t.Helper()
	codex = filepath.Join(dir, nativePaths(t, CodexHarness)[0])
	claude = filepath.Join(dir, nativePaths(t, ClaudeHarness)[0])
	fakeBinary(t, codex, "codex-cli "+CodexVersion)
	fakeBinary(t, claude, ClaudeVersion+" (Claude Code)")
	return codex, claude
}

func TestNativePathsOfThePublishedPackages(t *testing.T) {
	codex, err := codexNative("linux", "amd64")
	require.NoError(t, err)
	assert.Equal(t, "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", filepath.ToSlash(codex[0]))
	claude, err := claudeNative("linux", "amd64")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"node_modules/@anthropic-ai/claude-code/bin/claude.exe",
		"node_modules/@anthropic-ai/claude-code-linux-x64/claude",
		"node_modules/@anthropic-ai/claude-code-linux-x64-musl/claude",
	}, slash(claude))
	codex, err = codexNative("darwin", "arm64")
	require.NoError(t, err)
	assert.Equal(t, "node_modules/@openai/codex-darwin-arm64/vendor/aarch64-apple-darwin/bin/codex", filepath.ToSlash(codex[0]))
	_, err = codexNative("plan9", "386")
	assert.ErrorContains(t, err, "plan9/386")
}

func slash(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = filepath.ToSlash(p)
	}
	return out
}

func TestPinnedVersions(t *testing.T) {
	assert.Equal(t, "0.171.0", CodexVersion)
	assert.Equal(t, "2.1.332", ClaudeVersion)
	assert.Equal(t, "codex-cli 0.171.0", CodexHarness.VersionLine)
	assert.Equal(t, "2.1.332 (Claude Code)", ClaudeHarness.VersionLine)
	assert.Equal(t, "2.1.400 (Claude Code)", ClaudeHarness.WithVersion("2.1.400").VersionLine)
	assert.Equal(t, "2.1.332 (Claude Code)", ClaudeHarness.VersionLine, "WithVersion copies")
	assert.Equal(t, "0.61.0", GeminiVersion)
	assert.Equal(t, "0.61.0", GeminiHarness.VersionLine, "gemini --version prints the bare version")
	assert.Equal(t, []string{"codex", "claude", "gemini", "codex-acp"},
		[]string{Harnesses()[0].Name, Harnesses()[1].Name, Harnesses()[2].Name, Harnesses()[3].Name})
	assert.Equal(t, "0.16.0", CodexACPVersion)
	assert.Equal(t, []string{"node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"}, slash(nativePaths(t, CodexACPHarness)))
	rels := nativePaths(t, GeminiHarness)
	assert.Equal(t, []string{"node_modules/@google/gemini-cli/bundle/gemini.js"}, slash(rels), "the bundle npm marks executable")
}

func TestDirDefaultAndOverride(t *testing.T) {
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", "")
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	d, err := Dir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".cache", "agentwire", "harnesses"), d)

	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	d, err = Dir()
	require.NoError(t, err)
	assert.Equal(t, filepath.FromSlash("/x/cache/agentwire/harnesses"), d)

	t.Setenv(EnvDir, "/y/h")
	d, err = Dir()
	require.NoError(t, err)
	assert.Equal(t, filepath.FromSlash("/y/h"), d)
}

func TestFindInTheDefaultCacheDir(t *testing.T) {
	cache, _ := isolate(t)
	codex, claude := fakeInstall(t, cache)
	fakeBinary(t, filepath.Join(cache, "node_modules", ".bin", "codex"), "codex-cli "+CodexVersion)

	f, err := Find(CodexHarness)
	require.NoError(t, err)
	assert.Equal(t, codex, f.Path, "the native binary, not the node launcher")
	assert.Equal(t, "cache", f.Source)
	assert.Equal(t, filepath.Join(cache, "node_modules", ".bin", "codex"), f.Launcher)

	p, err := Codex()
	require.NoError(t, err)
	assert.Equal(t, codex, p)
	p, err = Claude()
	require.NoError(t, err)
	assert.Equal(t, claude, p)
}

func TestFindPrefersTheEnvDirThenTheCacheThenPATH(t *testing.T) {
	cache, bin := isolate(t)
	env := t.TempDir()
	t.Setenv(EnvDir, env)
	onPath := filepath.Join(bin, "codex")
	fakeBinary(t, onPath, "codex-cli "+CodexVersion)

	f, err := Find(CodexHarness)
	require.NoError(t, err)
	assert.Equal(t, onPath, f.Path)
	assert.Equal(t, "PATH", f.Source)

	cached, _ := fakeInstall(t, cache)
	f, err = Find(CodexHarness)
	require.NoError(t, err)
	assert.Equal(t, cached, f.Path)
	assert.Equal(t, "cache", f.Source)

	inEnv, _ := fakeInstall(t, env)
	f, err = Find(CodexHarness)
	require.NoError(t, err)
	assert.Equal(t, inEnv, f.Path)
	assert.Equal(t, EnvDir, f.Source)
}

func TestFindPassesOverAnotherVersion(t *testing.T) {
	cache, bin := isolate(t)
	env := t.TempDir()
	t.Setenv(EnvDir, env)
	fakeBinary(t, filepath.Join(env, nativePaths(t, CodexHarness)[0]), "codex-cli 0.170.0")
	fakeBinary(t, filepath.Join(bin, "codex"), "codex-cli 0.999.0")

	_, err := Find(CodexHarness)
	require.ErrorIs(t, err, ErrNotInstalled)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "codex 0.171.0 not installed: run make harnesses"), msg)
	assert.Contains(t, msg, `printed "codex-cli 0.170.0", want "codex-cli 0.171.0"`)
	assert.Contains(t, msg, `printed "codex-cli 0.999.0"`)
	assert.Contains(t, msg, filepath.Join(cache)+": no @openai/codex")

	cached, _ := fakeInstall(t, cache)
	p, err := Codex()
	require.NoError(t, err)
	assert.Equal(t, cached, p)
}

func TestFindNothingAnywhere(t *testing.T) {
	isolate(t)
	p, err := Claude()
	assert.Empty(t, p)
	var nf *NotInstalledError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "claude", nf.Harness.Name)
	assert.Contains(t, err.Error(), "claude 2.1.332 not installed: run make harnesses")
	assert.Contains(t, err.Error(), "PATH: no claude")
}

func TestClaudeStubFallsBackToThePlatformBinary(t *testing.T) {
	cache, _ := isolate(t)
	rels := nativePaths(t, ClaudeHarness)
	stub := filepath.Join(cache, rels[0])
	require.NoError(t, os.MkdirAll(filepath.Dir(stub), 0o755))
	require.NoError(t, os.WriteFile(stub, []byte(claudeStub), 0o755))
	assert.True(t, IsStub(stub))

	// The stub alone: not installed, and the message says why.
	_, err := Find(ClaudeHarness)
	require.ErrorIs(t, err, ErrNotInstalled)
	assert.Contains(t, err.Error(), "placeholder stub (the package's postinstall did not run)")

	platform := filepath.Join(cache, rels[1])
	fakeBinary(t, platform, ClaudeVersion+" (Claude Code)")
	assert.False(t, IsStub(platform))
	f, err := Find(ClaudeHarness)
	require.NoError(t, err)
	assert.Equal(t, platform, f.Path)
	assert.Equal(t, stub, f.SkippedStub)
}

func TestVersionReportsAFailingBinary(t *testing.T) {
	isolate(t)
	p := filepath.Join(t.TempDir(), "broken")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho 'boom' >&2\nexit 1\n"), 0o755))
	_, err := Version(p)
	assert.ErrorContains(t, err, "boom")
}

// fakeNPM writes an npm that logs its arguments to log and, for `install
// --prefix DIR`, lays out DIR/node_modules from DIR/package.json's pins.
// claudeMode: "postinstall" (bin/claude.exe is the binary), "noscripts"
// (bin/claude.exe is the stub, the platform package has the binary) or
// "omit" (only the stub).
func fakeNPM(t *testing.T, claudeMode string) (npm, log string) {
	t.Helper()
	dir := t.TempDir()
	npm = filepath.Join(dir, "npm")
	log = filepath.Join(dir, "npm.log")
	codexRel := nativePaths(t, CodexHarness)[0]
	claudeRels := nativePaths(t, ClaudeHarness)
	geminiRel := nativePaths(t, GeminiHarness)[0]
	codexACPRel := nativePaths(t, CodexACPHarness)[0]
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\nPATH=/usr/bin:/bin\necho \"$*\" >>'%s'\n", log)
	b.WriteString(`prefix=
while [ $# -gt 0 ]; do [ "$1" = --prefix ] && prefix=$2; shift; done
pin() { sed -n "s|.*\"$1\": \"\\(.*\\)\".*|\\1|p" "$prefix/package.json"; }
fake() { mkdir -p "$(dirname "$1")"; printf '#!/bin/sh\necho "%s"\n' "$2" >"$1"; chmod +x "$1"; }
codex=$(pin @openai/codex)
claude=$(pin @anthropic-ai/claude-code)
gemini=$(pin @google/gemini-cli)
codexacp=$(pin @zed-industries/codex-acp)
echo "added 4 packages"
`)
	fmt.Fprintf(&b, "[ -n \"$gemini\" ] && fake \"$prefix/%s\" \"$gemini\"\n", geminiRel)
	// codex-acp has no --version: its platform package's package.json
	// says the version.
	fmt.Fprintf(&b, "[ -n \"$codexacp\" ] && fake \"$prefix/%[1]s\" x && printf '{\"version\": \"%%s\"}' \"$codexacp\" >\"$(dirname \"$prefix/%[1]s\")/../package.json\"\n", codexACPRel)
	fmt.Fprintf(&b, "fake \"$prefix/%s\" \"codex-cli $codex\"\n", codexRel)
	stub := fmt.Sprintf("mkdir -p \"$(dirname \"$prefix/%[1]s\")\"; cat >\"$prefix/%[1]s\" <<'EOF'\n%[2]sEOF\n", claudeRels[0], claudeStub)
	switch claudeMode {
	case "postinstall":
		fmt.Fprintf(&b, "fake \"$prefix/%s\" \"$claude (Claude Code)\"\n", claudeRels[0])
	case "noscripts":
		b.WriteString(stub)
		fmt.Fprintf(&b, "fake \"$prefix/%s\" \"$claude (Claude Code)\"\n", claudeRels[1])
	case "omit":
		b.WriteString(stub)
	}
	require.NoError(t, os.WriteFile(npm, []byte(b.String()), 0o755))
	return npm, log
}

func npmCalls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestInstallIsIdempotentAndReinstallsAChangedPin(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "harnesses")
	npm, log := fakeNPM(t, "postinstall")
	var out strings.Builder
	ctx := context.Background()

	res, err := Install(ctx, Options{Dir: dir, NPM: npm, Out: &out})
	require.NoError(t, err, out.String())
	assert.True(t, res.Installed)
	assert.Equal(t, []string{"install --no-fund --no-audit --prefix " + dir}, npmCalls(t, log))
	require.Len(t, res.Found, 4)
	assert.Equal(t, filepath.Join(dir, nativePaths(t, CodexHarness)[0]), res.Found[0].Path)
	assert.Equal(t, filepath.Join(dir, nativePaths(t, GeminiHarness)[0]), res.Found[2].Path)
	assert.Equal(t, filepath.Join(dir, nativePaths(t, ClaudeHarness)[0]), res.Found[1].Path)
	assert.Positive(t, res.Bytes)
	manifest, err := os.ReadFile(filepath.Join(dir, "package.json"))
	require.NoError(t, err)
	assert.Contains(t, string(manifest), `"@openai/codex": "0.171.0"`)
	assert.Contains(t, string(manifest), `"@anthropic-ai/claude-code": "2.1.332"`)
	assert.Contains(t, out.String(), "added 4 packages", "npm's output is shown")

	// Everything present: no npm.
	out.Reset()
	res, err = Install(ctx, Options{Dir: dir, NPM: npm, Out: &out})
	require.NoError(t, err)
	assert.False(t, res.Installed)
	assert.Len(t, npmCalls(t, log), 1)
	assert.Contains(t, out.String(), "up to date")
	require.Len(t, res.Found, 4)

	// A changed pin reinstalls.
	newer := []Harness{CodexHarness.WithVersion("0.172.0"), ClaudeHarness}
	res, err = Install(ctx, Options{Dir: dir, NPM: npm, Harnesses: newer, Out: &out})
	require.NoError(t, err)
	assert.True(t, res.Installed)
	assert.Len(t, npmCalls(t, log), 2)
	v, err := Version(res.Found[0].Path)
	require.NoError(t, err)
	assert.Equal(t, "codex-cli 0.172.0", v)

	// Back to the pin: reinstalls again, then is up to date.
	_, err = Install(ctx, Options{Dir: dir, NPM: npm, Out: &out})
	require.NoError(t, err)
	res, err = Install(ctx, Options{Dir: dir, NPM: npm, Out: &out})
	require.NoError(t, err)
	assert.False(t, res.Installed)
	assert.Len(t, npmCalls(t, log), 3)

	// --force runs npm anyway.
	_, err = Install(ctx, Options{Dir: dir, NPM: npm, Force: true, Out: &out})
	require.NoError(t, err)
	assert.Len(t, npmCalls(t, log), 4)
}

func TestInstallReinstallsWhenABinaryIsGone(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	npm, log := fakeNPM(t, "postinstall")
	res, err := Install(context.Background(), Options{Dir: dir, NPM: npm})
	require.NoError(t, err)
	require.NoError(t, os.Remove(res.Found[1].Path))
	res, err = Install(context.Background(), Options{Dir: dir, NPM: npm})
	require.NoError(t, err)
	assert.True(t, res.Installed)
	assert.Len(t, npmCalls(t, log), 2)
}

func TestInstallWithoutThePostinstallUsesThePlatformBinary(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	npm, _ := fakeNPM(t, "noscripts")
	res, err := Install(context.Background(), Options{Dir: dir, NPM: npm})
	require.NoError(t, err)
	require.Len(t, res.Found, 4)
	claude := res.Found[1]
	assert.Equal(t, filepath.Join(dir, nativePaths(t, ClaudeHarness)[1]), claude.Path)
	assert.Equal(t, filepath.Join(dir, nativePaths(t, ClaudeHarness)[0]), claude.SkippedStub)
}

func TestInstallFailsClearlyWhenNoClaudeBinaryCameWithIt(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	npm, _ := fakeNPM(t, "omit")
	res, err := Install(context.Background(), Options{Dir: dir, NPM: npm})
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "@anthropic-ai/claude-code@2.1.332 installed into "+dir+", but no working claude binary was found")
	assert.Contains(t, msg, "is the package's placeholder")
	assert.Contains(t, msg, "optional platform dependency")
	require.Len(t, res.Found, 3, "codex, gemini and codex-acp were still found")
	assert.Equal(t, "codex", res.Found[0].Harness.Name)
	assert.Equal(t, "gemini", res.Found[1].Harness.Name)
	assert.Equal(t, "codex-acp", res.Found[2].Harness.Name)
}

func TestInstallReportsAFailingNPM(t *testing.T) {
	isolate(t)
	npm := filepath.Join(t.TempDir(), "npm")
	require.NoError(t, os.WriteFile(npm, []byte("#!/bin/sh\necho 'npm error code E404' >&2\nexit 1\n"), 0o755))
	var out strings.Builder
	_, err := Install(context.Background(), Options{Dir: t.TempDir(), NPM: npm, Out: &out})
	assert.ErrorContains(t, err, "npm install failed")
	assert.Contains(t, out.String(), "npm error code E404")
}

func TestInstallWithoutNPM(t *testing.T) {
	isolate(t) // PATH holds no npm
	_, err := Install(context.Background(), Options{Dir: t.TempDir()})
	assert.ErrorContains(t, err, "npm not found on PATH")
}

// fakeTB records what a Require helper did instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                         {}
func (f *fakeTB) Skipf(format string, a ...any)   { f.skipped = fmt.Sprintf(format, a...) }
func (f *fakeTB) Fatalf(format string, a ...any)  { f.failed = fmt.Sprintf(format, a...) }
func (f *fakeTB) Errorf(format string, a ...any)  { f.failed = fmt.Sprintf(format, a...) }
func (f *fakeTB) Logf(format string, args ...any) {}

func TestRequireSkipsOrFails(t *testing.T) {
	cache, _ := isolate(t)

	t.Setenv(EnvRequire, "")
	tb := &fakeTB{TB: t}
	assert.Empty(t, RequireCodex(tb))
	assert.Equal(t, "codex 0.171.0 not installed: run make harnesses", tb.skipped)
	assert.Empty(t, tb.failed)

	t.Setenv(EnvRequire, "1")
	tb = &fakeTB{TB: t}
	assert.Empty(t, RequireClaude(tb))
	assert.Empty(t, tb.skipped)
	assert.Contains(t, tb.failed, "claude 2.1.332 not installed: run make harnesses")
	assert.Contains(t, tb.failed, "AGENTWIRE_REQUIRE_HARNESSES=1")

	codex, claude := fakeInstall(t, cache)
	tb = &fakeTB{TB: t}
	assert.Equal(t, codex, RequireCodex(tb))
	assert.Equal(t, claude, RequireClaude(tb))
	assert.Empty(t, tb.skipped+tb.failed)
}

// Package install pins the real coding-agent CLIs that agentwire's Harness
// adapters run (OpenAI Codex and Claude Code), installs them from the npm
// registry into a cache directory outside the repository, and finds the
// installed native binaries.
//
// The binaries are looked up, in order, in $AGENTWIRE_HARNESS_DIR (when
// set), in the default cache directory (~/.cache/agentwire/harnesses, or
// $XDG_CACHE_HOME/agentwire/harnesses) and on PATH. A candidate counts only
// when its `--version` prints the pinned version, so a stray newer CLI on
// PATH is reported, not used.
//
// `make harnesses` (go run ./cmd/agentwire-harnesses install) installs them;
// tests that need them call RequireCodex, RequireClaude or RequireGemini.
package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The pinned versions. Changing one here makes the next `make harnesses`
// reinstall that package.
const (
	CodexPackage  = "@openai/codex"
	CodexVersion  = "0.171.0"
	ClaudePackage = "@anthropic-ai/claude-code"
	ClaudeVersion = "2.1.332"
	GeminiPackage = "@google/gemini-cli"
	GeminiVersion = "0.61.0"
	// CodexACPPackage is codex-acp, an ACP agent on Codex's core; its
	// native binary comes in a per-platform package.
	CodexACPPackage = "@zed-industries/codex-acp"
	CodexACPVersion = "0.16.0"
)

// Environment variables.
const (
	// EnvDir overrides the install directory.
	EnvDir = "AGENTWIRE_HARNESS_DIR"
	// EnvRequire, set to 1, makes RequireCodex and RequireClaude fail the
	// test instead of skipping it when a binary is missing
	// (`make check-harnesses` sets it).
	EnvRequire = "AGENTWIRE_REQUIRE_HARNESSES"
)

// VersionTimeout bounds one `--version` run.
const VersionTimeout = 15 * time.Second

// Harness is one pinned CLI: its npm package and how to find its native
// binary under an install directory.
type Harness struct {
	// Name is the command's name: "codex" or "claude".
	Name string
	// Package is the npm package name.
	Package string
	// Version is the pinned package version.
	Version string
	// VersionLine is what `Name --version` prints for Version.
	VersionLine string
	// native lists, for the running platform, the native binary's
	// candidate paths relative to the install directory, best first. A
	// path for which stub reports true is passed over.
	native func(goos, goarch string) ([]string, error)
	// launcher is the node launcher npm links, relative to the install
	// directory.
	launcher string
	// versionManifest, when set, is the package.json (relative to the
	// native binary's directory) whose "version" is the binary's version,
	// for a binary that has no --version.
	versionManifest string
}

// Codex and Claude describe the pinned CLIs.
var (
	CodexHarness = Harness{
		Name:        "codex",
		Package:     CodexPackage,
		Version:     CodexVersion,
		VersionLine: "codex-cli " + CodexVersion,
		native:      codexNative,
		launcher:    filepath.Join("node_modules", ".bin", "codex"),
	}
	ClaudeHarness = Harness{
		Name:        "claude",
		Package:     ClaudePackage,
		Version:     ClaudeVersion,
		VersionLine: ClaudeVersion + " (Claude Code)",
		native:      claudeNative,
		launcher:    filepath.Join("node_modules", ".bin", "claude"),
	}
)

// GeminiHarness is Gemini CLI, which the ACP adapter runs as `gemini
// --acp`. It is a Node program: its "native binary" is the bundle npm
// marks executable (a node shebang), so node must be on PATH at run time.
var GeminiHarness = Harness{
	Name:        "gemini",
	Package:     GeminiPackage,
	Version:     GeminiVersion,
	VersionLine: GeminiVersion,
	native: func(string, string) ([]string, error) {
		return []string{filepath.Join("node_modules", "@google", "gemini-cli", "bundle", "gemini.js")}, nil
	},
	launcher: filepath.Join("node_modules", ".bin", "gemini"),
}

// CodexACPHarness is codex-acp, which the ACP adapter runs as the
// codex-acp kind. The npm launcher (bin/codex-acp.js) runs the platform
// package's binary as a child it does not stop, and the binary does not
// exit on stdin EOF, so the adapter runs the native binary itself, in its
// own process group. The binary has no --version: its package.json says
// the version.
var CodexACPHarness = Harness{
	Name:        "codex-acp",
	Package:     CodexACPPackage,
	Version:     CodexACPVersion,
	VersionLine: CodexACPVersion,
	native: func(goos, goarch string) ([]string, error) {
		var pkg string
		switch goos + "/" + goarch {
		case "linux/amd64":
			pkg = "codex-acp-linux-x64"
		case "linux/arm64":
			pkg = "codex-acp-linux-arm64"
		case "darwin/amd64":
			pkg = "codex-acp-darwin-x64"
		case "darwin/arm64":
			pkg = "codex-acp-darwin-arm64"
		default:
			return nil, fmt.Errorf("codex-acp: no native binary is published for %s/%s", goos, goarch)
		}
		return []string{filepath.Join("node_modules", "@zed-industries", pkg, "bin", "codex-acp")}, nil
	},
	launcher:        filepath.Join("node_modules", ".bin", "codex-acp"),
	versionManifest: filepath.Join("..", "package.json"),
}

// Harnesses is every pinned CLI, in install order.
func Harnesses() []Harness {
	return []Harness{CodexHarness, ClaudeHarness, GeminiHarness, CodexACPHarness}
}

// WithVersion is h pinned at another version (for tests and for trying a
// newer release by hand).
func (h Harness) WithVersion(v string) Harness {
	old := h.Version
	h.Version = v
	h.VersionLine = strings.Replace(h.VersionLine, old, v, 1)
	return h
}

// codexNative: @openai/codex's launcher (bin/codex.js) runs
// vendor/<target triple>/bin/codex from the platform package that its
// optionalDependencies alias as @openai/codex-<platform>, or from its own
// vendor directory.
func codexNative(goos, goarch string) ([]string, error) {
	var triple, pkg string
	switch goos + "/" + goarch {
	case "linux/amd64":
		triple, pkg = "x86_64-unknown-linux-musl", "codex-linux-x64"
	case "linux/arm64":
		triple, pkg = "aarch64-unknown-linux-musl", "codex-linux-arm64"
	case "darwin/amd64":
		triple, pkg = "x86_64-apple-darwin", "codex-darwin-x64"
	case "darwin/arm64":
		triple, pkg = "aarch64-apple-darwin", "codex-darwin-arm64"
	default:
		return nil, fmt.Errorf("codex: no native binary is published for %s/%s", goos, goarch)
	}
	rel := filepath.Join("vendor", triple, "bin", "codex")
	return []string{
		filepath.Join("node_modules", "@openai", pkg, rel),
		filepath.Join("node_modules", "@openai", "codex", rel),
	}, nil
}

// claudeNative: @anthropic-ai/claude-code's postinstall (install.cjs)
// links the platform package's binary over bin/claude.exe, a shell stub
// until then. When the postinstall did not run (npm --ignore-scripts, or a
// later npm that blocks install scripts) the platform package's binary is
// used directly.
func claudeNative(goos, goarch string) ([]string, error) {
	var keys []string
	switch goos + "/" + goarch {
	case "linux/amd64":
		keys = []string{"linux-x64", "linux-x64-musl"}
	case "linux/arm64":
		keys = []string{"linux-arm64", "linux-arm64-musl"}
	case "darwin/amd64":
		keys = []string{"darwin-x64"}
	case "darwin/arm64":
		keys = []string{"darwin-arm64"}
	default:
		return nil, fmt.Errorf("claude: no native binary is published for %s/%s", goos, goarch)
	}
	paths := []string{filepath.Join("node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")}
	for _, k := range keys {
		paths = append(paths, filepath.Join("node_modules", "@anthropic-ai", "claude-code-"+k, "claude"))
	}
	return paths, nil
}

// claudeStubMarker is in the placeholder that @anthropic-ai/claude-code
// ships as bin/claude.exe (a shell script that exits 1).
const claudeStubMarker = "native binary not installed"

// IsStub reports whether the file at path is a placeholder instead of a
// native binary: a small text file saying the native binary is not
// installed, as Claude Code's bin/claude.exe is before its postinstall.
func IsStub(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := f.Read(head)
	return bytes.Contains(head[:n], []byte(claudeStubMarker))
}

// DefaultDir is the install directory when EnvDir is unset:
// $XDG_CACHE_HOME/agentwire/harnesses, else ~/.cache/agentwire/harnesses.
func DefaultDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("harness install directory: %w (set %s)", err, EnvDir)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "agentwire", "harnesses"), nil
}

// Dir is the install directory: $AGENTWIRE_HARNESS_DIR, else DefaultDir.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	return DefaultDir()
}

// Found is an installed binary whose version matched the pin.
type Found struct {
	Harness Harness
	// Path is the native binary to execute.
	Path string
	// Source says where it was found: EnvDir, "cache" or "PATH".
	Source string
	// Dir is the install directory it was found in ("" on PATH).
	Dir string
	// Launcher is npm's node launcher in Dir, when present.
	Launcher string
	// SkippedStub is a placeholder passed over on the way (Claude's
	// bin/claude.exe when its postinstall did not run), or "".
	SkippedStub string
}

// NotInstalledError says where a binary was looked for and what was found.
type NotInstalledError struct {
	Harness Harness
	// Tried has one line per candidate looked at.
	Tried []string
}

func (e *NotInstalledError) Error() string {
	msg := fmt.Sprintf("%s %s not installed: run make harnesses", e.Harness.Name, e.Harness.Version)
	if len(e.Tried) > 0 {
		msg += " (looked at: " + strings.Join(e.Tried, "; ") + ")"
	}
	return msg
}

// ErrNotInstalled matches every NotInstalledError (errors.Is).
var ErrNotInstalled = errors.New("harness not installed")

// Is makes errors.Is(err, ErrNotInstalled) true.
func (e *NotInstalledError) Is(target error) bool { return target == ErrNotInstalled }

// Codex is the path of the pinned Codex native binary.
func Codex() (string, error) {
	f, err := Find(CodexHarness)
	return f.Path, err
}

// Gemini is the path of the pinned Gemini CLI.
func Gemini() (string, error) {
	f, err := Find(GeminiHarness)
	return f.Path, err
}

// Claude is the path of the pinned Claude Code native binary.
func Claude() (string, error) {
	f, err := Find(ClaudeHarness)
	return f.Path, err
}

// Find looks for h in $AGENTWIRE_HARNESS_DIR (when set), the default
// cache directory, then PATH, and returns the first candidate whose
// `--version` prints h.VersionLine. The error is a *NotInstalledError.
func Find(h Harness) (Found, error) {
	nf := &NotInstalledError{Harness: h}
	type place struct{ dir, source string }
	var places []place
	if d := os.Getenv(EnvDir); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		places = append(places, place{abs, EnvDir})
	}
	if d, err := DefaultDir(); err == nil {
		if len(places) == 0 || places[0].dir != d {
			places = append(places, place{d, "cache"})
		}
	} else {
		nf.Tried = append(nf.Tried, err.Error())
	}
	for _, p := range places {
		f, tried, err := FindIn(h, p.dir)
		nf.Tried = append(nf.Tried, tried...)
		if err == nil {
			f.Source = p.source
			return f, nil
		}
	}
	path, err := exec.LookPath(h.Name)
	if err != nil {
		nf.Tried = append(nf.Tried, "PATH: no "+h.Name)
		return Found{Harness: h}, nf
	}
	if err := checkVersion(h, path); err != nil {
		nf.Tried = append(nf.Tried, "PATH: "+err.Error())
		return Found{Harness: h}, nf
	}
	return Found{Harness: h, Path: path, Source: "PATH"}, nil
}

// FindIn looks for h's native binary in the install directory dir only.
// tried has one line per candidate passed over; err is a
// *NotInstalledError when none fits.
func FindIn(h Harness, dir string) (f Found, tried []string, err error) {
	f = Found{Harness: h, Dir: dir}
	rels, err := h.native(runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return f, []string{err.Error()}, &NotInstalledError{Harness: h, Tried: []string{err.Error()}}
	}
	if l := filepath.Join(dir, h.launcher); fileExists(l) {
		f.Launcher = l
	}
	for _, rel := range rels {
		p := filepath.Join(dir, rel)
		if !fileExists(p) {
			continue
		}
		if IsStub(p) {
			f.SkippedStub = p
			tried = append(tried, p+": a placeholder stub (the package's postinstall did not run)")
			continue
		}
		if err := checkVersion(h, p); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		f.Path = p
		return f, tried, nil
	}
	if len(tried) == 0 {
		tried = append(tried, fmt.Sprintf("%s: no %s", dir, h.Package))
	}
	return f, tried, &NotInstalledError{Harness: h, Tried: tried}
}

// Version runs `path --version` and returns its first line of output.
func Version(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), VersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	// Claude Code: no updater, telemetry or other traffic for a version
	// query; harmless for Codex.
	cmd.Env = append(os.Environ(),
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	line = strings.TrimSpace(line)
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && len(ee.Stderr) > 0 {
			first, _, _ := strings.Cut(strings.TrimSpace(string(ee.Stderr)), "\n")
			return line, fmt.Errorf("%s --version: %w: %s", path, err, first)
		}
		return line, fmt.Errorf("%s --version: %w", path, err)
	}
	return line, nil
}

func checkVersion(h Harness, path string) error {
	got, err := versionOf(h, path)
	if err != nil {
		return err
	}
	if got != h.VersionLine {
		return fmt.Errorf("%s --version printed %q, want %q", path, got, h.VersionLine)
	}
	return nil
}

// versionOf is the version line of h's binary at path: its --version, or
// the version in its package manifest.
func versionOf(h Harness, path string) (string, error) {
	if h.versionManifest == "" {
		return Version(path)
	}
	return ManifestVersion(filepath.Join(filepath.Dir(path), h.versionManifest))
}

// ManifestVersion is the "version" of the package.json at path.
func ManifestVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the version: %w", err)
	}
	var m struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Version == "" {
		return "", fmt.Errorf("%s: no version", path)
	}
	return m.Version, nil
}

// CodexACP is the path of the pinned codex-acp native binary.
func CodexACP() (string, error) {
	f, err := Find(CodexACPHarness)
	return f.Path, err
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

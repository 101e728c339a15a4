package claude

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
)

// PinnedVersion is the one Claude Code release whose stream-json and
// control protocol the adapter speaks; any other version is declared
// unavailable.
const PinnedVersion = "2.1.332"

// pinnedVersionLine is what `claude --version` prints for PinnedVersion.
const pinnedVersionLine = PinnedVersion + " (Claude Code)"

// Kind is the agent kind the adapter declares unless Config.Kind says otherwise.
const Kind = "claude"

// Defaults of Config.
const (
	DefaultStartTimeout  = 60 * time.Second
	DefaultInterruptWait = 10 * time.Second
	DefaultCloseGrace    = 3 * time.Second
	DefaultStderrBytes   = 64 << 10
	// DefaultMaxRetries bounds Claude Code's own retries of a failed model
	// call (it retries ten times with backoff, minutes, on its own), so a
	// dead endpoint ends the Run with connection_failed in seconds.
	DefaultMaxRetries = 2
)

// Config configures the adapter: where the binary is, which model
// endpoint Claude Code talks to, and the adapter's own bounds.
type Config struct {
	// Kind is the agent kind ("" = Kind).
	Kind string
	// Binary is the claude binary.
	Binary string
	// Model is the model Claude Code asks for.
	Model string
	// BaseURL is the Anthropic Messages API base URL, e.g.
	// "http://127.0.0.1:8080" ("" = Claude Code's own default).
	BaseURL string
	// APIKeyEnv names the environment variable holding the provider's API
	// key, which the CLI gets as ANTHROPIC_API_KEY; the key itself is never
	// on a command line or in a log.
	APIKeyEnv string
	// StateDir holds the Claude configuration directories the adapter owns
	// (one per Session state key: its transcripts, which a later Executor
	// resumes) and the private empty directories of Environment-none Runs;
	// "" = a directory under the user's cache directory.
	StateDir string
	// StartTimeout bounds starting the CLI and its initialize request.
	StartTimeout time.Duration
	// InterruptWait bounds how long a cancelled Run waits for the CLI to
	// report the aborted result.
	InterruptWait time.Duration
	// CloseGrace is how long the CLI may take to exit after stdin EOF
	// (then SIGTERM, then SIGKILL, each after another grace).
	CloseGrace time.Duration
	// MaxRetries is CLAUDE_CODE_MAX_RETRIES (0 = DefaultMaxRetries; a
	// negative value means none).
	MaxRetries int
	// StderrBytes bounds the CLI's stderr kept for the log.
	StderrBytes int
	// MaxLineBytes bounds one stream-json line.
	MaxLineBytes int
	Logger       *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Kind == "" {
		c.Kind = Kind
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.InterruptWait <= 0 {
		c.InterruptWait = DefaultInterruptWait
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = DefaultCloseGrace
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.StderrBytes <= 0 {
		c.StderrBytes = DefaultStderrBytes
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate checks what New cannot do without.
func (c Config) validate() error {
	if c.Binary == "" {
		return errors.New("claude adapter: the claude binary is required")
	}
	if strings.TrimSpace(c.Model) == "" {
		return errors.New("claude adapter: a model is required")
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return errors.New("claude adapter: the base URL must be an absolute http or https URL without credentials")
		}
	}
	if c.APIKeyEnv != "" && !envName.MatchString(c.APIKeyEnv) {
		// The value is not repeated: a key pasted here by mistake must not
		// reach a log.
		return errors.New("claude adapter: the API key variable is not an environment variable name (give its name, never the key)")
	}
	return nil
}

// stateDir is the adapter's state root.
func (c Config) stateDir() (string, error) {
	if c.StateDir != "" {
		return filepath.Abs(c.StateDir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("claude adapter: no state directory: %w", err)
	}
	return filepath.Join(base, "agentwire", "claude"), nil
}

// checkVersion runs `claude --version` (install.Version, as make
// harnesses does) and compares it with the pin.
func checkVersion(binary string) (string, error) {
	line, err := install.Version(binary)
	if err != nil {
		return "", fmt.Errorf("claude adapter: %w", err)
	}
	if line != pinnedVersionLine {
		return line, fmt.Errorf("claude adapter: %s is %q; this adapter speaks only %q", binary, line, pinnedVersionLine)
	}
	return PinnedVersion, nil
}

// launch is what one Executor's command line says beyond the Config.
type launch struct {
	// session is --session-id (a new native Session the adapter named) or,
	// with resume, --resume (an existing one).
	session string
	resume  bool
	// disallowed are tools the configuration switches off.
	disallowed []string
	// functions adds the adapter's MCP server, which serves Core's
	// function tools (functions.go).
	functions bool
	// mcpFile is the configuration file of Core's HTTP MCP servers
	// (mcphttp.go); "" = none. A path, never its content: the file holds
	// bearer tokens.
	mcpFile string
	// schema is the json_schema output format's schema (--json-schema).
	schema string
	// model is the Agent's model (agent_options.model); "" keeps the
	// adapter's.
	model string
	// instructions are the Agent's (agent_options.system_prompt), appended
	// to Claude Code's own system prompt.
	instructions string
}

// modelOf is the model a launch runs.
func (c Config) modelOf(l launch) string {
	if l.model != "" {
		return l.model
	}
	return c.Model
}

// args is the CLI's command line: stream-json both ways, partial messages,
// the host's user messages replayed (how acceptance of active input is
// seen), permission prompts on the control channel, no settings from the
// machine, and what l says.
func (c Config) args(l launch) []string {
	a := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--include-partial-messages", "--replay-user-messages",
		"--permission-prompt-tool", "stdio", "--permission-mode", "default", "--setting-sources", "",
		"--model", c.modelOf(l)}
	if l.instructions != "" {
		// decision: appended, not replacing: Claude Code's own prompt
		// describes its tools and permission rules, which the adapter's
		// mapping relies on (as the Codex adapter keeps Codex's base
		// instructions).
		a = append(a, "--append-system-prompt", l.instructions)
	}
	if len(l.disallowed) > 0 {
		a = append(a, "--disallowedTools", strings.Join(l.disallowed, ","))
	}
	// decision: only the MCP servers the configuration names
	// (--strict-mcp-config): a workspace's own .mcp.json is not a server
	// Core admitted (daemon-protocol.txt:47), and the Run must not reach
	// servers the Agent never declared.
	a = append(a, "--strict-mcp-config")
	var mcp []string
	if l.functions {
		mcp = append(mcp, mcpConfig())
	}
	if l.mcpFile != "" {
		mcp = append(mcp, l.mcpFile)
	}
	if len(mcp) > 0 {
		// --mcp-config takes several configurations, files or strings.
		a = append(append(a, "--mcp-config"), mcp...)
	}
	if l.schema != "" {
		a = append(a, "--json-schema", l.schema)
	}
	if l.resume {
		return append(a, "--resume", l.session)
	}
	return append(a, "--session-id", l.session)
}

// env is the CLI's environment: the Runtime's own without anything that
// would point it elsewhere, the configuration directory the adapter owns,
// the endpoint and the key (from the variable the configuration names),
// no update checks, telemetry or other traffic, bounded retries.
func (c Config) env(configDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CLAUDE_CONFIG_DIR" || strings.HasPrefix(k, "ANTHROPIC_") || k == "CLAUDE_CODE_MAX_RETRIES" || k == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "CLAUDE_CONFIG_DIR="+configDir, "NO_COLOR=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES="+strconv.Itoa(c.MaxRetries),
		// Function tools are served over the control channel; without this
		// they are deferred behind a tool search the adapter does not offer.
		"ENABLE_TOOL_SEARCH=false",
		"ANTHROPIC_MODEL="+c.Model, "ANTHROPIC_DEFAULT_HAIKU_MODEL="+c.Model,
		"ANTHROPIC_DEFAULT_SONNET_MODEL="+c.Model, "ANTHROPIC_DEFAULT_OPUS_MODEL="+c.Model)
	if c.BaseURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+strings.TrimSuffix(c.BaseURL, "/"))
	}
	if c.APIKeyEnv != "" {
		if key, ok := os.LookupEnv(c.APIKeyEnv); ok {
			env = append(env, "ANTHROPIC_API_KEY="+key)
		}
	}
	return env
}

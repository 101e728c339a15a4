package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
)

// PinnedVersion is the one Codex CLI release whose app-server protocol the
// adapter speaks. The protocol is experimental and changes between
// releases, so any other version is declared unavailable.
const PinnedVersion = "0.171.0"

// pinnedVersionLine is what `codex --version` prints for PinnedVersion.
const pinnedVersionLine = "codex-cli " + PinnedVersion

// Kind is the agent kind the adapter declares unless Config.Kind says otherwise.
const Kind = "codex"

// Defaults of Config.
const (
	DefaultProvider        = "agentwire"
	DefaultConnectDeadline = 30 * time.Second
	DefaultInterruptWait   = 10 * time.Second
	DefaultStartTimeout    = 60 * time.Second
	DefaultCloseGrace      = 3 * time.Second
	DefaultStderrBytes     = 64 << 10
	DefaultStreamIdle      = 300 * time.Second
)

// Config configures the adapter: where the binary is, which model endpoint
// Codex talks to, and the adapter's own bounds.
type Config struct {
	// Kind is the agent kind ("" = Kind).
	Kind string
	// Binary is the native codex binary.
	Binary string
	// Model is the model name Codex asks for (a known slug such as
	// "gpt-5.5" also gives Codex its model metadata, e.g. apply_patch).
	Model string
	// BaseURL is the model provider's base URL (Responses API), e.g.
	// "http://127.0.0.1:8080/v1".
	BaseURL string
	// APIKeyEnv names the environment variable holding the provider's API
	// key; the key itself is never on a command line or in a log. "" means
	// the provider needs no key.
	APIKeyEnv string
	// Provider is the provider's name in Codex's configuration ("" =
	// DefaultProvider).
	Provider string
	// StateDir holds the Codex homes the adapter owns (one per Session
	// state key) and the private empty directories of Environment-none
	// Runs; "" = a directory under the user's cache directory.
	StateDir string
	// ConnectDeadline bounds how long a Run lets Codex retry a failed
	// connection to the provider (it retries forever on its own) before the
	// Run ends with connection_failed.
	ConnectDeadline time.Duration
	// InterruptWait bounds how long a cancelled Run waits for Codex to
	// confirm the interruption.
	InterruptWait time.Duration
	// StartTimeout bounds starting the app-server and its thread.
	StartTimeout time.Duration
	// CloseGrace is how long the app-server may take to exit after stdin
	// EOF (then SIGTERM, then SIGKILL, each after another grace).
	CloseGrace time.Duration
	// StreamIdle is Codex's stream idle timeout for the provider.
	StreamIdle time.Duration
	// StderrBytes bounds the app-server's stderr kept for the log.
	StderrBytes int
	// MaxLineBytes bounds one JSON-RPC line from the app-server.
	MaxLineBytes int
	Logger       *slog.Logger
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Kind == "" {
		c.Kind = Kind
	}
	if c.Provider == "" {
		c.Provider = DefaultProvider
	}
	if c.ConnectDeadline <= 0 {
		c.ConnectDeadline = DefaultConnectDeadline
	}
	if c.InterruptWait <= 0 {
		c.InterruptWait = DefaultInterruptWait
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = DefaultCloseGrace
	}
	if c.StreamIdle <= 0 {
		c.StreamIdle = DefaultStreamIdle
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

var (
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	providerName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// validate checks what New cannot do without.
func (c Config) validate() error {
	if c.Binary == "" {
		return errors.New("codex adapter: the codex binary is required")
	}
	if strings.TrimSpace(c.Model) == "" {
		return errors.New("codex adapter: a model is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("codex adapter: the provider base URL must be an absolute http or https URL without credentials")
	}
	if c.APIKeyEnv != "" && !envName.MatchString(c.APIKeyEnv) {
		// The value is not repeated: a key pasted here by mistake must not
		// reach a log.
		return errors.New("codex adapter: the API key variable is not an environment variable name (give its name, never the key)")
	}
	if !providerName.MatchString(c.Provider) {
		return fmt.Errorf("codex adapter: the provider name %q must match [A-Za-z0-9_-]+", c.Provider)
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
		return "", fmt.Errorf("codex adapter: no state directory: %w", err)
	}
	return filepath.Join(base, "agentwire", "codex"), nil
}

// checkVersion runs `codex --version` (install.Version, as make
// harnesses does) and compares it with the pin.
func checkVersion(binary string) (string, error) {
	line, err := install.Version(binary)
	if err != nil {
		return "", fmt.Errorf("codex adapter: %w", err)
	}
	if line != pinnedVersionLine {
		return line, fmt.Errorf("codex adapter: %s is %q; this adapter speaks only %q", binary, line, pinnedVersionLine)
	}
	return PinnedVersion, nil
}

// tomlString quotes s as a TOML basic string (JSON's string escapes are
// valid TOML, without the HTML escaping).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// args is the app-server's command line: offline, the provider from the
// configuration, nothing secret.
func (c Config) args() []string {
	provider := fmt.Sprintf("{name=%s,base_url=%s,wire_api=\"responses\",request_max_retries=0,stream_max_retries=0,stream_idle_timeout_ms=%d",
		tomlString(c.Provider), tomlString(c.BaseURL), c.StreamIdle.Milliseconds())
	if c.APIKeyEnv != "" {
		provider += ",env_key=" + tomlString(c.APIKeyEnv)
	}
	provider += "}"
	set := func(kv string) []string { return []string{"-c", kv} }
	var a []string
	a = append(a, "app-server")
	a = append(a, set("model_provider="+tomlString(c.Provider))...)
	a = append(a, set("model_providers."+c.Provider+"="+provider)...)
	a = append(a, set("model="+tomlString(c.Model))...)
	a = append(a, set(`approval_policy="on-request"`)...)
	a = append(a, set(`sandbox_mode="workspace-write"`)...)
	a = append(a, set("check_for_update_on_startup=false")...)
	// Offline: no analytics, feedback or telemetry, and no plugin or app
	// sync (which looks up github.com and chatgpt.com).
	a = append(a, set("analytics.enabled=false")...)
	a = append(a, set("feedback.enabled=false")...)
	a = append(a, set(`otel.exporter="none"`)...)
	a = append(a, set("features.plugins=false")...)
	a = append(a, set("features.apps=false")...)
	a = append(a, set("features.remote_plugin=false")...)
	// decision: instant_interrupt makes a steered input abort the message
	// being streamed, whose deltas Core already has (they would never
	// complete); with it off Codex finishes the message, then takes the
	// input (issue 17 §3).
	a = append(a, "--disable", "instant_interrupt")
	return a
}

// env is the app-server's environment: the Runtime's own, with the Codex
// home the adapter owns and no colour codes.
func (c Config) env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CODEX_HOME" || k == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "CODEX_HOME="+home, "NO_COLOR=1")
}

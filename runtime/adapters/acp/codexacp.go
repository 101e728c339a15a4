package acp

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/wire"
)

// The codex-acp kind: codex-acp (an ACP agent on Codex's core), its
// native binary run directly and configured through CODEX_HOME's
// config.toml. The npm launcher is not used: it leaves the native process
// behind when it is stopped, and the binary does not exit on stdin EOF,
// so the adapter runs the binary in its own process group and kills the
// group at close (childproc).

// CodexACPKind is the ready-made kind's name.
const CodexACPKind = "codex-acp"

// CodexACPPinnedVersion is the codex-acp release the kind speaks.
const CodexACPPinnedVersion = install.CodexACPVersion

// codexACPKeyVar is the variable codex-acp reads its API key from (the
// provider's env_key): the key is never on a command line or in a file.
const codexACPKeyVar = "AGENTWIRE_CODEX_ACP_KEY"

// CodexACPConfig configures the codex-acp kind.
type CodexACPConfig struct {
	// Kind is the agent kind ("" = CodexACPKind).
	Kind string
	// Binary is the native codex-acp binary (install.CodexACP).
	Binary string
	// Model is the model codex-acp asks for.
	Model string
	// BaseURL is the Responses API base URL of the model provider, e.g.
	// "http://127.0.0.1:8080/v1".
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string
}

// CodexACP is the Agent of codex-acp. A missing binary or another version
// leaves it unavailable, with the reason in err's place.
func CodexACP(c CodexACPConfig) (Agent, error) {
	if c.Kind == "" {
		c.Kind = CodexACPKind
	}
	if strings.TrimSpace(c.Model) == "" {
		return Agent{}, errors.New("acp adapter: codex-acp: a model is required")
	}
	u, err := url.Parse(c.BaseURL)
	if c.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return Agent{}, errors.New("acp adapter: codex-acp: the base URL must be an absolute http or https URL without credentials (the Responses API's, ending in /v1)")
	}
	if c.APIKeyEnv != "" && !envName.MatchString(c.APIKeyEnv) {
		return Agent{}, errors.New("acp adapter: codex-acp: the API key variable is not an environment variable name (give its name, never the key)")
	}
	if c.Binary == "" {
		return Agent{}, errors.New("acp adapter: codex-acp: the codex-acp binary is required")
	}
	a := Agent{Kind: c.Kind, Command: c.Binary, Version: CodexACPPinnedVersion, Available: true,
		SubagentControl: true, LoadSession: true}
	a.Env = []string{"NO_COLOR=1"}
	if c.APIKeyEnv != "" {
		if key, ok := os.LookupEnv(c.APIKeyEnv); ok {
			a.Env = append(a.Env, codexACPKeyVar+"="+key)
		}
	}
	model, base := c.Model, strings.TrimSuffix(c.BaseURL, "/")
	a.Controls = func(home string, p wire.PromptRequest) ([]string, error) {
		return codexACPSettings(home, model, base, p)
	}
	// The binary has no --version; its platform package says the version.
	v, err := install.ManifestVersion(filepath.Join(filepath.Dir(c.Binary), "..", "package.json"))
	if err != nil || v != CodexACPPinnedVersion {
		a.Available, a.Version = false, v
		if err == nil {
			err = fmt.Errorf("%s is codex-acp %s; the codex-acp kind speaks only %s", c.Binary, v, CodexACPPinnedVersion)
		}
		return a, fmt.Errorf("acp adapter: codex-acp: %w", err)
	}
	return a, nil
}

// codexACPSettings writes home/config.toml for one Executor and returns
// the environment that points codex-acp at it.
//
// decision: the configuration is the adapter's, whole, every time: the
// model and its provider (no retries: a failed request is the Turn's
// error), approvals on request in the read-only sandbox, web search
// disabled (Core sends disabled on every Run, daemon-protocol.txt:54),
// subagents off when the configuration disables them, and no update
// checks, analytics, feedback, telemetry, plugins or goals (an offline
// Runtime must not wait on them, and no frame carries goal state).
//
// decision: codex-acp 0.16.0 cannot sandbox a command here: its Linux
// sandbox needs bubblewrap, which it does not ship, and with bwrap
// installed it still fails to start the codex-linux-sandbox helper Codex
// re-executes itself as (measured). A sandboxed command therefore fails
// (and is reported, failed), and the only way a command runs is the model
// asking to run it outside the sandbox, which under approvals on request
// is always a permission_request Core decides. The read-only sandbox keeps
// that true even where a sandbox works: nothing the agent runs unasked can
// write. Measured against the alternatives: under "untrusted" without a
// working sandbox, codex-acp ran a command that writes a file unasked; a
// full-access sandbox with approvals on request would let every command
// write anywhere unasked.
func codexACPSettings(home, model, base string, p wire.PromptRequest) ([]string, error) {
	if o := p.AgentOptions; o != nil && o.Model != nil && *o.Model != "" {
		model = *o.Model
	}
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "model = %s\nmodel_provider = \"agentwire\"\napproval_policy = \"on-request\"\nsandbox_mode = \"read-only\"\n", q(model))
	b.WriteString("check_for_update_on_startup = false\nweb_search = \"disabled\"\n")
	if o := p.AgentOptions; o != nil && o.SystemPrompt != nil {
		// decision: the Agent's instructions are Codex's developer
		// instructions, as the codex adapter passes them: Codex keeps its
		// own base instructions (its tools and approvals), and "" is an
		// explicit empty value rather than Codex's default.
		fmt.Fprintf(&b, "developer_instructions = %s\n", tomlString(*o.SystemPrompt))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "[model_providers.agentwire]\nname = \"agentwire\"\nbase_url = %s\nwire_api = \"responses\"\nenv_key = %s\n", q(base), q(codexACPKeyVar))
	b.WriteString("request_max_retries = 0\nstream_max_retries = 0\n\n")
	b.WriteString("[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n[otel]\nexporter = \"none\"\n\n")
	b.WriteString("[features]\nplugins = false\napps = false\nremote_plugin = false\ngoals = false\n")
	if p.DisableSubagents {
		b.WriteString("multi_agent = false\n")
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("acp adapter: codex-acp settings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("acp adapter: codex-acp settings: %w", err)
	}
	return []string{"CODEX_HOME=" + home}, nil
}

// tomlString is s as a TOML basic string: quotes, backslashes and control
// characters escaped (strconv.Quote's \x escapes are not TOML).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

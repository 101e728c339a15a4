package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/wire"
)

// The gemini kind: Gemini CLI (`gemini --acp`), configured through its
// own settings file under GEMINI_CLI_HOME.

// GeminiKind is the ready-made kind's name.
const GeminiKind = "gemini"

// GeminiPinnedVersion is the Gemini CLI release whose ACP and settings the
// gemini kind speaks; another version is declared unavailable.
const GeminiPinnedVersion = install.GeminiVersion

// GeminiConfig configures the gemini kind.
type GeminiConfig struct {
	// Kind is the agent kind ("" = GeminiKind).
	Kind string
	// Binary is the gemini executable (the npm launcher: Gemini CLI is a
	// Node program).
	Binary string
	// Model is the model Gemini CLI asks for. A named model also stops
	// its model router's side call, which "auto" makes before each turn.
	Model string
	// BaseURL is the Gemini API base URL (GOOGLE_GEMINI_BASE_URL), e.g.
	// "http://127.0.0.1:8080"; "" = Gemini CLI's default.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key, which
	// the CLI gets as GEMINI_API_KEY; the key is never on a command line.
	APIKeyEnv string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// KnownAgents are the agents whose own settings the adapter knows, so that
// it can honour execution controls for them.
func KnownAgents() []string { return []string{GeminiKind, CodexACPKind} }

// Gemini is the Agent of Gemini CLI. A missing binary or another version
// leaves it unavailable, with the reason in err's place (nil when it is
// available): the kind is declared either way.
func Gemini(c GeminiConfig) (Agent, error) {
	if c.Kind == "" {
		c.Kind = GeminiKind
	}
	if strings.TrimSpace(c.Model) == "" {
		return Agent{}, errors.New("acp adapter: gemini: a model is required (a named model; \"auto\" routes every turn through a side call)")
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return Agent{}, errors.New("acp adapter: gemini: the base URL must be an absolute http or https URL without credentials")
		}
	}
	if c.APIKeyEnv != "" && !envName.MatchString(c.APIKeyEnv) {
		return Agent{}, errors.New("acp adapter: gemini: the API key variable is not an environment variable name (give its name, never the key)")
	}
	if c.Binary == "" {
		return Agent{}, errors.New("acp adapter: gemini: the gemini binary is required")
	}
	a := Agent{Kind: c.Kind, Command: c.Binary, Args: []string{"--acp"}, Version: GeminiPinnedVersion, Available: true,
		SubagentControl: true, LoadSession: true, FunctionTools: true, MCPHTTP: true, MCPToolName: geminiMCPToolName}
	a.beforeLoad = geminiBeforeLoad
	// Gemini CLI 0.61.0 starts its history replay without awaiting it and
	// answers session/load at once (measured: the replay reached the first
	// Run of a resumed Session).
	a.replaysAfterLoad = true
	a.Env = []string{"NO_COLOR=1", "NO_BROWSER=1"}
	if c.BaseURL != "" {
		a.Env = append(a.Env, "GOOGLE_GEMINI_BASE_URL="+strings.TrimSuffix(c.BaseURL, "/"))
	}
	if c.APIKeyEnv != "" {
		if key, ok := os.LookupEnv(c.APIKeyEnv); ok {
			a.Env = append(a.Env, "GEMINI_API_KEY="+key)
		}
	}
	model := c.Model
	a.Controls = func(home string, p wire.PromptRequest) ([]string, error) {
		return geminiSettings(home, model, p)
	}
	line, err := install.Version(c.Binary)
	if err != nil || line != GeminiPinnedVersion {
		a.Available, a.Version = false, line
		if err == nil {
			err = fmt.Errorf("%s --version printed %q; the gemini kind speaks only %s", c.Binary, line, GeminiPinnedVersion)
		}
		return a, fmt.Errorf("acp adapter: gemini: %w", err)
	}
	return a, nil
}

// geminiSettings writes home/.gemini/settings.json for one Executor and
// returns the environment that points Gemini CLI at home.
//
// decision: the settings are the adapter's, whole, every time: the model
// (no router), web search and web fetch excluded (Core sends web search
// disabled on every Run and the CLI has no other switch for them,
// daemon-protocol.txt:54), the subagent tool excluded when the
// configuration disables subagents, no telemetry, usage statistics or
// update checks (an offline Runtime must not wait on them), and the
// Agent's model when it names one.
func geminiSettings(home, model string, p wire.PromptRequest) ([]string, error) {
	if o := p.AgentOptions; o != nil && o.Model != nil && *o.Model != "" {
		model = *o.Model
	}
	exclude := []string{"google_web_search", "web_fetch"}
	if p.DisableSubagents {
		exclude = append(exclude, "invoke_agent")
	}
	sort.Strings(exclude)
	tools := map[string]any{"exclude": exclude}
	// decision: Core's function tools run without Gemini CLI asking
	// permission. A call is answered by Core itself (its function_result
	// is the decision that counts), so a permission_request in front of
	// it would ask Core twice and stall the Turn; and Gemini CLI's request
	// names neither the server nor the tool (its toolCallId is the
	// model's call ID), so the adapter could not tell it apart to answer
	// it alone. tools.allowed makes each function an allow rule of Gemini
	// CLI's policy engine, by the exact name the model calls.
	var allowed []string
	for _, f := range p.FunctionTools {
		name, err := geminiMCPToolName(fnServerName, f.Name)
		if err != nil {
			return nil, fmt.Errorf("acp adapter: gemini settings: function %q: %w", f.Name, err)
		}
		allowed = append(allowed, name)
	}
	if len(allowed) > 0 {
		sort.Strings(allowed)
		tools["allowed"] = allowed
	}
	settings := map[string]any{
		"model":     map[string]any{"name": model},
		"tools":     tools,
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general": map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true,
			"defaultApprovalMode": "default"},
		"ui":       map[string]any{"hideTips": true},
		"security": map[string]any{"disableYoloMode": true},
		"advanced": map[string]any{"ignoreLocalEnv": true},
	}
	if servers := geminiMCPServers(p); len(servers) > 0 {
		// decision: Gemini CLI connects no MCP server (not even one named
		// in session/new) in a folder it does not trust, and the adapter
		// cannot add the workspace to its trusted folders without also
		// letting the workspace's own .gemini/settings.json apply. So the
		// folder-trust check is switched off only for an Executor that has
		// MCP servers, and the settings below are the system settings too
		// (GEMINI_CLI_SYSTEM_SETTINGS_PATH): system settings win over a
		// workspace's for every key the adapter sets, the approval mode
		// stays "default" (no YOLO: every tool asks or is Core's), hooks
		// are off, no .env of the workspace is read, and mcp.allowed lets
		// only the adapter's and Core's servers connect, never a server the
		// workspace names.
		settings["security"] = map[string]any{"disableYoloMode": true, "folderTrust": map[string]any{"enabled": false}}
		settings["mcp"] = map[string]any{"allowed": servers}
		settings["hooksConfig"] = map[string]any{"enabled": false}
	}
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("acp adapter: gemini settings: %w", err)
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		return nil, fmt.Errorf("acp adapter: gemini settings: %w", err)
	}
	if err := geminiPolicies(dir, p); err != nil {
		return nil, err
	}
	if err := geminiInstructions(dir, p); err != nil {
		return nil, err
	}
	return []string{"GEMINI_CLI_HOME=" + home, "GEMINI_CLI_SYSTEM_SETTINGS_PATH=" + filepath.Join(dir, "settings.json")}, nil
}

// geminiMCPServers is the names of the MCP servers an Executor of p
// names in session/new, sorted.
func geminiMCPServers(p wire.PromptRequest) []string {
	var out []string
	if len(p.FunctionTools) > 0 {
		out = append(out, fnServerName)
	}
	if p.MCPHTTPServers != nil {
		for _, s := range *p.MCPHTTPServers {
			out = append(out, s.ServerLabel)
		}
	}
	sort.Strings(out)
	return out
}

// geminiPolicyFile is the adapter's policy file in Gemini CLI's user
// policies directory.
const geminiPolicyFile = "agentwire.toml"

// geminiPolicies writes (or removes, when p has no HTTP MCP servers) the
// policy rules for Core's servers.
//
// decision: every tool of Core's servers is asked (a permission_request
// Core decides), as the Claude adapter asks for them; mcp.allowed, which
// keeps a workspace's own servers out, would otherwise allow their tools
// unasked. A server's allowed_tools restricts which tools may run at all
// (wire.MCPHTTPServer): the others are denied by Gemini CLI's policy
// engine, which tells the model so, without asking Core, since no
// decision of Core's could allow them. User-tier rules rank above the
// settings' own (tools.allowed, mcp.allowed), and a narrower rule ranks
// above the server-wide one.
func geminiPolicies(dir string, p wire.PromptRequest) error {
	path := filepath.Join(dir, "policies", geminiPolicyFile)
	if p.MCPHTTPServers == nil || len(*p.MCPHTTPServers) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("acp adapter: gemini policies: %w", err)
		}
		return nil
	}
	var b strings.Builder
	rule := func(server string, tools []string, decision string, priority int) {
		q := make([]string, len(tools))
		for i, t := range tools {
			q[i] = strconv.Quote(t)
		}
		fmt.Fprintf(&b, "[[rule]]\nmcpName = %s\ntoolName = [%s]\ndecision = %q\npriority = %d\n\n", strconv.Quote(server), strings.Join(q, ", "), decision, priority)
	}
	// With mcpName, a rule's toolName is the server's own tool name ("*":
	// every tool); Gemini CLI qualifies it as mcp_<server>_<tool>.
	for _, s := range *p.MCPHTTPServers {
		if s.AllowedTools == nil {
			rule(s.ServerLabel, []string{"*"}, "ask_user", 900)
			continue
		}
		rule(s.ServerLabel, []string{"*"}, "deny", 900)
		if len(*s.AllowedTools) > 0 {
			for _, t := range *s.AllowedTools {
				if _, err := geminiMCPToolName(s.ServerLabel, t); err != nil {
					return fmt.Errorf("acp adapter: gemini policies: %w", err)
				}
			}
			rule(s.ServerLabel, *s.AllowedTools, "ask_user", 950)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("acp adapter: gemini policies: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("acp adapter: gemini policies: %w", err)
	}
	return nil
}

// geminiBeforeLoad keeps a saved Gemini CLI session out of the way of the
// recording its own session/load starts.
//
// decision: Gemini CLI 0.61.0 names a session's recording
// chats/session-<minute>-<first 8 of the ID>.jsonl. On session/load it
// starts the new recording (appending a header and a "$set messages" of
// its session context to that file name) before it reads the saved
// session, so a load within the minute the session was saved in replaces
// the saved history with an empty one and fails with "No previous
// sessions found for this project" (measured: most loads in a test).
// Renaming the saved files to a name no recording uses keeps them whole:
// Gemini CLI lists every chats/session-*.jsonl and finds a session by the
// ID inside, and continues the loaded session's recording in the file it
// read. Strict resume (daemon-protocol.txt:60) needs the history intact.
func geminiBeforeLoad(home, id string) error {
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return fmt.Errorf("gemini: %q is not a session ID", id)
	}
	matches, err := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	if err != nil {
		return err
	}
	for _, m := range matches {
		kept := strings.TrimSuffix(m, ".jsonl") + fmt.Sprintf("-kept%d.jsonl", time.Now().UnixNano())
		if err := os.Rename(m, kept); err != nil {
			return fmt.Errorf("gemini: keeping the saved session: %w", err)
		}
	}
	return nil
}

// geminiToolName is what Gemini CLI keeps of an MCP tool's qualified name
// unchanged: other characters it replaces with '_'.
var geminiToolName = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// geminiMaxToolName is the longest MCP tool name Gemini CLI 0.61.0 leaves
// whole (it cuts longer ones to 30 + "..." + 30 characters).
const geminiMaxToolName = 63

// geminiMCPToolName is the name Gemini CLI shows its model for tool of
// the MCP server server: mcp_<server>_<tool>. A name it would rewrite or
// cut is refused, since the model would call another name than the Agent
// declared; a server name with '_' is refused too, since Gemini CLI's
// policy rules split the qualified name at the first '_' after "mcp_".
func geminiMCPToolName(server, tool string) (string, error) {
	name := "mcp_" + server + "_" + tool
	switch {
	case server == "" || strings.Contains(server, "_") || !geminiToolName.MatchString(server):
		return "", fmt.Errorf("gemini: the MCP server name %q must be letters, digits, '.', ':' or '-' (Gemini CLI names its tools mcp_<server>_<tool>)", server)
	case tool == "" || !geminiToolName.MatchString(tool):
		return "", fmt.Errorf("gemini: the tool name %q has characters Gemini CLI rewrites (it keeps letters, digits, '_', '.', ':' and '-')", tool)
	case len(name) > geminiMaxToolName:
		return "", fmt.Errorf("gemini: the tool name %q is too long: Gemini CLI cuts %s to %d characters", tool, name, geminiMaxToolName)
	}
	return name, nil
}

// geminiInstructions writes the Agent's instructions (agent_options
// .system_prompt) as Gemini CLI's global context file, dir/GEMINI.md,
// which it loads into the model's system instruction beside its own.
//
// decision: instructions are added to the Harness's own, as the Claude
// (--append-system-prompt) and Codex (developer instructions) adapters
// add them; replacing Gemini CLI's system prompt (GEMINI_SYSTEM_MD) would
// also drop what it says about its tools and approvals. An explicit empty
// prompt and an absent one both leave no file: Gemini CLI has nothing of
// the Agent's to add then. A workspace's own GEMINI.md files are the
// workspace's, loaded as Gemini CLI always does.
func geminiInstructions(dir string, p wire.PromptRequest) error {
	path := filepath.Join(dir, "GEMINI.md")
	o := p.AgentOptions
	if o == nil || o.SystemPrompt == nil || *o.SystemPrompt == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("acp adapter: gemini instructions: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(path, []byte(*o.SystemPrompt), 0o600); err != nil {
		return fmt.Errorf("acp adapter: gemini instructions: %w", err)
	}
	return nil
}

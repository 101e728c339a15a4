package codex

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

// fakeCodex writes a shell script that answers --version with line.
func fakeCodex(t *testing.T, line string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codex")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho '"+line+"'\n"), 0o755))
	return p
}

func testConfig(bin string) Config {
	return Config{Binary: bin, Model: "gpt-5.5", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "AW_TEST_KEY"}
}

func TestNewDeclaresThePinnedVersionAvailable(t *testing.T) {
	cfg := testConfig(fakeCodex(t, "codex-cli "+PinnedVersion))
	cfg.StateDir = t.TempDir()
	a, err := New(cfg)
	require.NoError(t, err)
	d := a.Declaration()
	assert.True(t, d.Available)
	assert.Equal(t, Kind, d.Kind)
	assert.Equal(t, PinnedVersion, d.Version)
	require.NoError(t, d.Validate())
}

func TestNewDeclaresAnotherVersionUnavailable(t *testing.T) {
	var logs bytes.Buffer
	cfg := testConfig(fakeCodex(t, "codex-cli 0.172.0"))
	cfg.StateDir = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	a, err := New(cfg)
	require.NoError(t, err)
	d := a.Declaration()
	assert.False(t, d.Available)
	assert.Equal(t, "codex-cli 0.172.0", d.Version)
	require.NoError(t, d.Validate(), "an unavailable kind still declares every capability")
	assert.Contains(t, logs.String(), "declared unavailable")
	assert.Contains(t, logs.String(), "codex-cli 0.172.0")
	_, err = a.NewExecutor(t.Context(), hcfg(a, ""))
	require.ErrorIs(t, err, ErrUnavailable)
}

func TestNewDeclaresAMissingBinaryUnavailable(t *testing.T) {
	cfg := testConfig(filepath.Join(t.TempDir(), "nope"))
	cfg.StateDir = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	a, err := New(cfg)
	require.NoError(t, err)
	assert.False(t, a.Declaration().Available)
}

func TestConfigValidation(t *testing.T) {
	bin := fakeCodex(t, "codex-cli "+PinnedVersion)
	for name, mut := range map[string]func(*Config){
		"no binary":       func(c *Config) { c.Binary = "" },
		"no model":        func(c *Config) { c.Model = " " },
		"relative url":    func(c *Config) { c.BaseURL = "/v1" },
		"ftp url":         func(c *Config) { c.BaseURL = "ftp://127.0.0.1/v1" },
		"credentials url": func(c *Config) { c.BaseURL = "http://user:pw@127.0.0.1/v1" },
		"bad key name":    func(c *Config) { c.APIKeyEnv = "sk-secret value" },
		"bad provider":    func(c *Config) { c.Provider = "a.b" },
	} {
		t.Run(name, func(t *testing.T) {
			c := testConfig(bin)
			mut(&c)
			_, err := New(c)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "sk-secret", "an error never repeats a would-be secret")
		})
	}
}

// The command line is offline and carries no secret; the key reaches
// Codex only through the environment variable the configuration names.
func TestArgsAndEnv(t *testing.T) {
	t.Setenv("AW_TEST_KEY", "sk-very-secret")
	t.Setenv("CODEX_HOME", "/somewhere/else")
	c := testConfig("codex").withDefaults()
	args := strings.Join(c.args(), " ")
	assert.NotContains(t, args, "sk-very-secret")
	for _, want := range []string{
		`model_provider="agentwire"`,
		`model_providers.agentwire={name="agentwire",base_url="http://127.0.0.1:1/v1",wire_api="responses",request_max_retries=0,stream_max_retries=0,stream_idle_timeout_ms=300000,env_key="AW_TEST_KEY"}`,
		`model="gpt-5.5"`, "features.plugins=false", "features.apps=false", "features.remote_plugin=false",
		"analytics.enabled=false", "feedback.enabled=false", "--disable instant_interrupt",
	} {
		assert.Contains(t, args, want)
	}
	env := c.env("/state/home")
	assert.Contains(t, env, "CODEX_HOME=/state/home")
	assert.Contains(t, env, "AW_TEST_KEY=sk-very-secret")
	assert.NotContains(t, env, "CODEX_HOME=/somewhere/else")
}

func TestTOMLStringQuotes(t *testing.T) {
	assert.Equal(t, `"a\"b\\c<d>"`, tomlString(`a"b\c<d>`))
}

func TestCheckConfigurationRefusesWhatIsNotHonoured(t *testing.T) {
	servers := []wire.MCPHTTPServer{{ServerLabel: "x"}}
	model := "x"
	for name, p := range map[string]wire.PromptRequest{
		"mcp":            {MCPHTTPServers: &servers},
		"ptc disable":    {ExecutionControls: &wire.ExecutionControls{DisableProgrammaticToolCalling: true}},
		"recovery":       {RequireExistingNativeSession: true},
		"subagent ids":   {ObserveSubagentIdentities: true},
		"provider":       {AgentOptions: &wire.AgentOptions{Model: &model, ModelProvider: wire.NativeJSON(`{}`)}},
		"harness config": {AgentOptions: &wire.AgentOptions{HarnessConfig: wire.NativeJSON(`{"sandbox_mode":"danger-full-access"}`)}},
	} {
		assert.Error(t, checkConfiguration(p), name)
	}
	empty := []wire.MCPHTTPServer{}
	assert.NoError(t, checkConfiguration(wire.PromptRequest{MCPHTTPServers: &empty, AgentOptions: &wire.AgentOptions{Model: &model}}))
}

// Every thread asks for /tmp and $TMPDIR out of the sandbox's writable
// roots, whatever the controls say.
func TestThreadConfigConfinesTheSandbox(t *testing.T) {
	for name, p := range map[string]wire.PromptRequest{
		"no controls": {},
		"controls":    {ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityLow}},
	} {
		c := threadConfig(p)
		assert.Equal(t, true, c["sandbox_workspace_write.exclude_slash_tmp"], name)
		assert.Equal(t, true, c["sandbox_workspace_write.exclude_tmpdir_env_var"], name)
	}
}

// Only a workspace-write sandbox confined to the workspace passes; the
// policy Codex reports back is checked, not the one asked for.
func TestCheckSandbox(t *testing.T) {
	ok := sandboxPolicy{Type: "workspaceWrite", NetworkAccess: false, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}
	require.NoError(t, checkSandbox(ok))
	for name, mut := range map[string]func(*sandboxPolicy){
		"slash tmp writable": func(p *sandboxPolicy) { p.ExcludeSlashTmp = false },
		"TMPDIR writable":    func(p *sandboxPolicy) { p.ExcludeTmpdirEnvVar = false },
		"extra roots":        func(p *sandboxPolicy) { p.WritableRoots = []string{"/srv"} },
		"network":            func(p *sandboxPolicy) { p.NetworkAccess = true },
		"full access":        func(p *sandboxPolicy) { *p = sandboxPolicy{Type: "dangerFullAccess"} },
		"unknown":            func(p *sandboxPolicy) { *p = sandboxPolicy{} },
	} {
		p := ok
		mut(&p)
		assert.Error(t, checkSandbox(p), name)
	}
}

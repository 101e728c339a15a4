package install_test

// The real-harness smoke tests: they run the installed CLIs. Without them
// (no `make harnesses`) they skip, and under AGENTWIRE_REQUIRE_HARNESSES=1
// (`make check-harnesses`) they fail. Every test here is named
// TestHarness* so that `go test -run Harness ./runtime/...` selects it.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
)

func TestHarnessCodexVersion(t *testing.T) {
	codex := install.RequireCodex(t)
	out := run(t, codex, nil, "--version")
	assert.Equal(t, "codex-cli "+install.CodexVersion, strings.TrimSpace(out))
}

func TestHarnessClaudeVersion(t *testing.T) {
	claude := install.RequireClaude(t)
	out := run(t, claude, []string{"CLAUDE_CONFIG_DIR=" + t.TempDir(), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, "--version")
	assert.Equal(t, install.ClaudeVersion+" (Claude Code)", strings.TrimSpace(out))
}

// The app-server protocol methods agentwire's Codex adapter will use, by
// the schema file that lists them. `codex app-server generate-json-schema`
// writes one file per direction; each is a oneOf of messages whose
// properties.method is a one-value enum, and whose params (when present)
// refer to a definition in the same file.
var codexMethods = map[string][]string{
	"ClientRequest.json": {
		"initialize", "thread/start", "thread/resume",
		"turn/start", "turn/steer", "turn/interrupt",
	},
	"ClientNotification.json": {"initialized"},
	"ServerNotification.json": {
		"item/agentMessage/delta", "item/started", "item/completed",
		"item/reasoning/summaryTextDelta", "thread/tokenUsage/updated",
		"turn/completed", "error", "serverRequest/resolved",
	},
	"ServerRequest.json": {
		"item/commandExecution/requestApproval", "item/fileChange/requestApproval",
		"item/tool/requestUserInput", "item/tool/call",
	},
}

func TestHarnessCodexAppServerSchema(t *testing.T) {
	codex := install.RequireCodex(t)
	out := t.TempDir()
	run(t, codex, nil, "app-server", "generate-json-schema", "--out", out)

	for file, want := range codexMethods {
		t.Run(file, func(t *testing.T) {
			methods := schemaMethods(t, filepath.Join(out, file))
			for _, m := range want {
				params, ok := methods[m]
				if !assert.Truef(t, ok, "%s does not list method %q (codex %s changed its protocol?)", file, m, install.CodexVersion) {
					continue
				}
				assert.Truef(t, params, "%s: the params of %q refer to no definition in the file", file, m)
			}
		})
	}
}

// schemaMethods reads one generated schema file: method name → whether its
// params are absent or resolve to a definition of the file.
func schemaMethods(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
		OneOf       []struct {
			Properties struct {
				Method struct {
					Enum  []string `json:"enum"`
					Const string   `json:"const"`
				} `json:"method"`
				Params *struct {
					Ref string `json:"$ref"`
				} `json:"params"`
			} `json:"properties"`
		} `json:"oneOf"`
	}
	require.NoError(t, json.Unmarshal(b, &doc), path)
	require.NotEmptyf(t, doc.OneOf, "%s has no oneOf of messages", path)
	methods := map[string]bool{}
	for _, m := range doc.OneOf {
		names := m.Properties.Method.Enum
		if c := m.Properties.Method.Const; c != "" {
			names = append(names, c)
		}
		ok := true
		if p := m.Properties.Params; p != nil && p.Ref != "" {
			_, ok = doc.Definitions[strings.TrimPrefix(p.Ref, "#/definitions/")]
		}
		for _, n := range names {
			methods[n] = ok
		}
	}
	return methods
}

// run executes bin with args and extra environment in a fresh CODEX_HOME,
// bounded in time, and returns its stdout; a failure fails the test with
// stderr.
func run(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoErrorf(t, err, "%s %s: %s", bin, strings.Join(args, " "), stderr.String())
	return string(out)
}

// The reader of the generated schema, on a file of its layout.
func TestSchemaMethodsReadsTheGeneratedLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ServerRequest.json")
	require.NoError(t, os.WriteFile(path, []byte(`{
  "definitions": {"DynamicToolCallParams": {"type": "object"}},
  "oneOf": [
    {"properties": {"method": {"enum": ["item/tool/call"]}, "params": {"$ref": "#/definitions/DynamicToolCallParams"}}},
    {"properties": {"method": {"const": "item/gone"}, "params": {"$ref": "#/definitions/Missing"}}},
    {"properties": {"method": {"enum": ["initialized"]}}}
  ]
}`), 0o644))
	assert.Equal(t, map[string]bool{"item/tool/call": true, "item/gone": false, "initialized": true}, schemaMethods(t, path))
}

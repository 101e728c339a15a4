package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentCommands: an Agent written with the CLI, versioned, and run by
// a Session whose Turn calls the Agent's function tool, answered by
// turn run --functions; real Core and Runtime processes.
func TestAgentCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, core, proj, _, rtLogs := startScriptSetup(t, `{"steps":[{"function":{"call_id":"call-1","name":"lookup","arguments":{"city":"Paris"}}}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	cli := func(args ...string) (string, string, error) {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret, "AGENTWIRE_CORE="+core.base)
		var stderr strings.Builder
		c.Stderr = &stderr
		out, err := c.Output()
		return string(out), stderr.String(), err
	}

	// A definition Core refuses names the field at fault and writes nothing.
	_, stderr, err := cli("agent", "create", write("bad.json", `{"agent_kind":"script","function_tools":[{"name":"lookup"}]}`))
	require.Error(t, err)
	assert.Contains(t, stderr, "function_tools[0].parameters")
	out, _, err := cli("agent", "list", "--json")
	require.NoError(t, err)
	assert.JSONEq(t, `{"agents":[]}`, out)

	v1 := write("v1.json", `{"name":"weather","agent_kind":"script","instructions":"be brief",
		"function_tools":[{"name":"lookup","description":"the weather","parameters":{"type":"object"}}]}`)
	out, _, err = cli("agent", "create", "-quiet", v1)
	require.NoError(t, err)
	id := strings.TrimSpace(out)
	require.True(t, strings.HasPrefix(id, "agent"), "the new Agent's ID alone: %q", out)

	// A Session keeps the version it was created with.
	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--agent", id)
	assert.Equal(t, "script", ses["agent_kind"])
	assert.EqualValues(t, 1, ses["agent_version"])
	upd := cliJSON(t, bin, proj.Secret, "agent", "update", "--core", core.base, id, write("v2.json", `{"name":"weather","agent_kind":"script","instructions":"be terse"}`))
	assert.EqualValues(t, 2, upd["version"])
	first := cliJSON(t, bin, proj.Secret, "agent", "show", "--core", core.base, "--version", "1", id)
	assert.Equal(t, "be brief", first["agent"].(map[string]any)["instructions"])
	out, _, err = cli("agent", "list", "--json")
	require.NoError(t, err)
	assert.Contains(t, out, `"version": 2`)
	out, _, err = cli("agent", "list")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^ID\s+VERSION\s+NAME\s+AGENT KIND\s+CREATED AT$`, out, "a table by default")
	assert.Regexp(t, `(?m)^`+id+`\s+2\s+weather\s+script\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`, out)
	out, _, err = cli("devices")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^dev-1\s+demo\s+yes\s+script\s+`, out, "the device, its project, connected, its kinds")

	run := exec.CommandContext(ctx, bin, "turn", "run", "--core", core.base, "--session", ses["id"].(string), "--functions", `printf 'sunny in '; grep -o Paris`, "weather?")
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
	got, err := run.Output()
	require.NoError(t, err, "turn run: %s\ncore logs: %s\nruntime logs: %s", got, core.logs.String(), rtLogs.String())
	assert.Contains(t, string(got), `function_call {"interaction_id":`)
	assert.Contains(t, string(got), `sunny in Paris`, "the Run saw the command's output as the result")
	assert.Contains(t, string(got), `status {"state":"completed"}`)

	// The Vault: a value from standard input, never shown again.
	put := exec.CommandContext(ctx, bin, "vault", "put", "docs-token")
	put.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret, "AGENTWIRE_CORE="+core.base)
	put.Stdin = strings.NewReader("tok-123\n")
	got, err = put.CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.NotContains(t, string(got), "tok-123")
	out, _, err = cli("vault", "list")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^NAME\s+CREATED AT\s+UPDATED AT$`, out)
	assert.Regexp(t, `(?m)^docs-token\s+\d{4}-`, out)
	assert.NotContains(t, out, "tok-123")
	_, stderr, err = cli("vault", "put", "--value-file", write("empty", "\n"), "docs-token")
	require.Error(t, err)
	assert.Contains(t, stderr, "the secret's value is empty")

	// A Session cannot run another project's Agent, nor a made-up one.
	_, stderr, err = cli("session", "create", "--agent", "agent-missing")
	require.Error(t, err)
	assert.Contains(t, stderr, "agent_id")
}

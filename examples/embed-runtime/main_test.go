package main

// The example as an embedder runs it: a real `agentwire core serve`, this
// Runtime as a process of its own, and a Turn through Core's public API.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/exampletest"
)

func issue(t *testing.T, bin, data string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"core", "credential", "issue", "--data", data}, args...)...).Output()
	require.NoError(t, err)
	var c struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(out, &c))
	require.NotEmpty(t, c.Secret)
	return c.Secret
}

func TestShoutCompletesATurnOnARealCore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs agentwire and the example")
	}
	dir := t.TempDir()
	agentwire := exampletest.Build(t, dir, "agentwire", "github.com/agentwire/agentwire/cmd/agentwire")
	example := exampletest.Build(t, dir, "embed-runtime", ".")
	data := filepath.Join(dir, "data")
	key := issue(t, agentwire, data, "--kind", "project", "--project", "embed")
	cred := filepath.Join(dir, "device-credential")
	require.NoError(t, os.WriteFile(cred, []byte(issue(t, agentwire, data, "--kind", "device", "--device", "dev-1", "--project", "embed")), 0o600))
	base, coreLogs := exampletest.Start(t, nil, "agentwire core: listening on ", agentwire, "core", "serve", "--listen", "127.0.0.1:0", "--data", data)
	_, rtLogs := exampletest.Start(t, nil, "", example, "--core", base, "--device-id", "dev-1", "--credential-file", cred)
	c := exampletest.API{T: t, Base: base, Key: key}

	exampletest.Poll(t, "dev-1 to connect and declare shout", func() bool {
		_, v := c.Do("GET", "/api/v1/devices", nil)
		b, _ := json.Marshal(v)
		return strings.Contains(string(b), `"connected":true`) && strings.Contains(string(b), `"shout"`)
	})
	code, ses := c.Do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "shout"})
	require.Equal(t, 201, code, "%v", ses)
	code, turn := c.Do("POST", "/api/v1/sessions/"+ses["id"].(string)+"/turns",
		map[string]any{"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "hello loud world"}}}}})
	require.Equal(t, 201, code, "%v", turn)
	var deltas, done, status []string
	for _, e := range c.Events(turn["id"].(string)) {
		switch e[0] {
		case "delta":
			deltas = append(deltas, e[1])
		case "done":
			done = append(done, e[1])
		case "status":
			status = append(status, e[1])
		}
	}
	require.Equal(t, []string{`{"content":"HELLO LOUD WORLD"}`}, done, "core: %s\nruntime: %s", coreLogs, rtLogs)
	assert.Equal(t, []string{`{"delta":"HELLO","sequence":0}`, `{"delta":" LOUD","sequence":0}`, `{"delta":" WORLD","sequence":0}`}, deltas)
	assert.Equal(t, []string{`{"state":"completed"}`}, status)
}

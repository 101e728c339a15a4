package main

// The example as an embedder runs it: this Core as a process of its own,
// a real `agentwire runtime` connected to it, and a Turn through the
// public API; its store passes Core's conformance suite.

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/exampletest"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestAuditStoreConforms(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store {
		return auditStore{Store: memory.New(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	})
}

func TestEmbeddedCoreServesARealRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs agentwire and the example")
	}
	dir := t.TempDir()
	agentwire := exampletest.Build(t, dir, "agentwire", "github.com/agentwire/agentwire/cmd/agentwire")
	example := exampletest.Build(t, dir, "embed-core", ".")
	const projectKey, deviceKey = "project-key-of-embed", "device-key-of-dev-1"
	base, coreLogs := exampletest.Start(t, []string{"EMBED_PROJECT_KEY=" + projectKey, "EMBED_DEVICE_KEY=" + deviceKey},
		"embed-core: listening on ", example, "--listen", "127.0.0.1:0")
	cred := filepath.Join(dir, "device-credential")
	require.NoError(t, os.WriteFile(cred, []byte(deviceKey), 0o600))
	script := filepath.Join(dir, "steps.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[{"delta":"hello "},{"delta":"from the runtime"}]}`), 0o600))
	_, rtLogs := exampletest.Start(t, nil, "", agentwire, "runtime", "--core", base, "--device-id", "dev-1", "--credential-file", cred, "--harness", "script="+script)
	c := exampletest.API{T: t, Base: base, Key: projectKey}

	// The embedder's own route sits beside Core's on its mux.
	resp, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	// A key the authenticator does not know opens nothing.
	code, _ := exampletest.API{T: t, Base: base, Key: "guess"}.Do("GET", "/api/v1/devices", nil)
	assert.Equal(t, 401, code)

	exampletest.Poll(t, "dev-1 to connect and declare script", func() bool {
		_, v := c.Do("GET", "/api/v1/devices", nil)
		b, _ := json.Marshal(v)
		return strings.Contains(string(b), `"connected":true`) && strings.Contains(string(b), `"script"`)
	})
	code, ses := c.Do("POST", "/api/v1/sessions", map[string]any{"agent_kind": "script"})
	require.Equal(t, 201, code, "%v", ses)
	code, turn := c.Do("POST", "/api/v1/sessions/"+ses["id"].(string)+"/turns",
		map[string]any{"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}}})
	require.Equal(t, 201, code, "%v", turn)
	var deltas, status []string
	for _, e := range c.Events(turn["id"].(string)) {
		switch e[0] {
		case "delta":
			deltas = append(deltas, e[1])
		case "status":
			status = append(status, e[1])
		}
	}
	require.Equal(t, []string{`{"state":"completed"}`}, status, "core: %s\nruntime: %s", coreLogs, rtLogs)
	assert.Len(t, deltas, 2)
	exampletest.Poll(t, "the audit line", func() bool {
		return strings.Contains(coreLogs.String(), `msg="audit: turn ended" turn=`+turn["id"].(string)+" state=completed")
	})

	// Revoking the device goes through the embedder's authenticator: its
	// key is dropped and the Runtime's connection is closed.
	code, v := c.Do("POST", "/api/v1/devices/dev-1/revoke", nil)
	require.Equal(t, 200, code, "%v", v)
	assert.Equal(t, []any{"key-dev-1"}, v["revoked"])
	exampletest.Poll(t, "dev-1 to be disconnected", func() bool {
		_, v := c.Do("GET", "/api/v1/devices", nil)
		b, _ := json.Marshal(v)
		return strings.Contains(string(b), `"connected":false`)
	})
}

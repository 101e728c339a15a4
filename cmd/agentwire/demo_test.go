package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemo runs `agentwire demo` as a real process from the repository
// root (it builds the example agent and starts Core and the Runtime) and
// checks its transcript, its diagram, and that no secret leaks.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := buildAgentwire(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--out", out)
	cmd.Dir = filepath.Join("..", "..")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	s := string(b)
	for _, want := range []string{
		`event delta {"delta":"hello "`,
		"event permission_request",
		`"outcome":"applied"`,
		`"accepted":true`,
		`event input_outcome {"input_id":"demo-input-1","outcome":"accepted"}`,
		"Runtime → Core  done",
		`outcome: {"state":"completed"}`,
	} {
		assert.Contains(t, s, want)
	}
	mmd, err := os.ReadFile(filepath.Join(out, "sequence.mmd"))
	require.NoError(t, err)
	assert.Contains(t, string(mmd), "sequenceDiagram")
	assert.Contains(t, string(mmd), "Core->>Runtime: prompt_steer")
	assert.Contains(t, string(mmd), "Runtime->>Core: prompt_steer_ack accepted")
	assert.Contains(t, string(mmd), "Core->>Runtime: permission_decision")
	tr, err := os.ReadFile(filepath.Join(out, "transcript.txt"))
	require.NoError(t, err)
	// transcript.txt holds every frame whole, in the order Core recorded them.
	prev := ""
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(string(tr)), "\n") {
		at, rest, ok := strings.Cut(line, "  ")
		require.True(t, ok, line)
		assert.GreaterOrEqual(t, at, prev, "frames in recorded order")
		prev = at
		_, frame, ok := strings.Cut(rest, "  ")
		require.True(t, ok, line)
		var env struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(frame), &env), "a whole frame: %s", line)
		types = append(types, env.Type)
	}
	assert.Contains(t, types, "prompt_steer_ack")
	// Every secret the issuer makes starts awd_, awp_ or awa_ (by kind).
	secret := regexp.MustCompile(`aw[dpa]_[A-Za-z0-9_-]{8,}`)
	for _, text := range []string{s, string(mmd), string(tr)} {
		assert.Empty(t, secret.FindAllString(text, -1))
	}
}

// The terminal summary keeps the members two frames differ in: scalars
// come before nested values, which are shortened, so a tool_call's stage
// survives the cut however large its observation is.
func TestSummaryKeepsScalarsBeforeTheCut(t *testing.T) {
	before := summary(json.RawMessage(`{"call_id":"call-1","name":"shell","arguments":{"command":"` + strings.Repeat("x", 300) + `"},"stage":"before"}`))
	after := summary(json.RawMessage(`{"call_id":"call-1","name":"shell","arguments":{"command":"` + strings.Repeat("x", 300) + `"},"observation":{"kind":"command","status":"completed","output":"` + strings.Repeat("y", 400) + `"},"stage":"after"}`))
	assert.NotEqual(t, before, after)
	assert.Contains(t, before, `"stage":"before"`)
	assert.Contains(t, after, `"stage":"after"`)
	assert.LessOrEqual(t, len([]rune(after)), 161)
	assert.Equal(t, `{"a":1,"b":"x","c":[1,2]}`, summary(json.RawMessage(`{"c":[1,2],"b":"x","a":1}`)), "small nested values stay whole")
	assert.Equal(t, `[1,2]`, summary(json.RawMessage(`[1,2]`)))
}

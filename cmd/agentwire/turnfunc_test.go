package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A function call end to end with both real binaries: the script adapter's
// Run calls lookup; `turn run --functions` answers it with a shell
// command that reads the call on its standard input; Core sends
// function_result, the Runtime applies it and the Turn completes with the
// result in its output.
func TestTurnRunAnswersFunctionCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, core, proj, _, rtLogs := startScriptSetup(t, `{"steps":[{"function":{"call_id":"call-1","name":"lookup","arguments":{"city":"Paris"}}}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "script")
	// The command sees the call's name in the environment and the call's
	// JSON on its standard input.
	tool := `printf '%s:' "$AGENTWIRE_FUNCTION"; grep -o Paris`
	run := exec.CommandContext(ctx, bin, "turn", "run", "--core", core.base, "--session", ses["id"].(string), "--functions", tool, "weather?")
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
	out, err := run.Output()
	require.NoError(t, err, "turn run: %s\ncore logs: %s\nruntime logs: %s", out, core.logs.String(), rtLogs.String())
	assert.Contains(t, string(out), `function_call {"interaction_id":`)
	assert.Contains(t, string(out), `"success":true`)
	assert.Contains(t, string(out), `interaction_outcome`)
	assert.Contains(t, string(out), `"outcome":"applied"`)
	assert.Contains(t, string(out), `[call-1:lookup:Paris`, "the Run saw the command's output as the result")
	assert.Contains(t, string(out), `status {"state":"completed"}`)
}

// A command that fails answers the call with success false and what it
// wrote; the call's JSON reaches it.
func TestFunctionResultFromACommand(t *testing.T) {
	data := `{"interaction_id":"int-1","kind":"function","request":{"call_id":"c1","name":"lookup","arguments":{"q":"x"}}}`
	id, body, err := functionResult(`cat; exit 3`, data)
	require.NoError(t, err)
	assert.Equal(t, "int-1", id)
	assert.Equal(t, false, body["success"])
	assert.Equal(t, []map[string]any{{"type": "input_text", "text": `{"call_id":"c1","name":"lookup","arguments":{"q":"x"}}`}}, body["content"])

	_, body, err = functionResult(`echo nothing here >&2; exit 1`, data)
	require.NoError(t, err)
	assert.Equal(t, []map[string]any{{"type": "input_text", "text": "nothing here"}}, body["content"], "stderr when stdout is empty")

	_, _, err = functionResult(`true`, `{"kind":"function"}`)
	assert.Error(t, err, "an event without interaction_id")
}

// turn answer --result answers a function call from another terminal:
// the Turn that waits for it goes on with the text as the result.
func TestTurnAnswerResult(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, core, proj, _, rtLogs := startScriptSetup(t, `{"steps":[{"function":{"call_id":"call-1","name":"lookup","arguments":{"city":"Paris"}}}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "script")
	run := exec.CommandContext(ctx, bin, "turn", "run", "--json", "--core", core.base, "--session", ses["id"].(string), "weather?")
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
	stdout, err := run.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, run.Start())
	sc := bufio.NewScanner(stdout)
	var lines []string
	answered := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var rec struct {
			Event string `json:"event"`
			Data  struct {
				InteractionID string `json:"interaction_id"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		if rec.Event == "turn" {
			continue
		}
		if rec.Event == "function_call" && !answered {
			answered = true
			turnID := turnOf(t, lines)
			ans := exec.CommandContext(ctx, bin, "turn", "answer", "--core", core.base, "--result", "sunny", turnID, rec.Data.InteractionID)
			ans.Env = run.Env
			out, err := ans.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), `"delivery_id"`)
		}
	}
	require.NoError(t, run.Wait(), "turn run: %s\nruntime logs: %s", strings.Join(lines, "\n"), rtLogs.String())
	all := strings.Join(lines, "\n")
	assert.True(t, answered, "a function call was shown: %s", all)
	assert.Contains(t, all, `[call-1:sunny]`, "the Run saw the answer as the result")
	assert.Contains(t, all, `{"event":"status","data":{"state":"completed"}}`)
}

// turnOf finds the Turn ID turn run --json printed.
func turnOf(t *testing.T, lines []string) string {
	t.Helper()
	for _, l := range lines {
		var rec struct {
			Event string `json:"event"`
			Data  struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Event == "turn" && rec.Data.ID != "" {
			return rec.Data.ID
		}
	}
	t.Fatalf("no Turn ID in %v", lines)
	return ""
}

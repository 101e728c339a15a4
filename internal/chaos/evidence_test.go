package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/sqlite"
)

// LoadEvidence reads a real store, transcript and agent log as the run
// leaves them, and the checker ties them together: a Turn the store says
// completed whose agent never logged done is caught from the files alone.
func TestLoadEvidenceFromARealStore(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(t, os.MkdirAll(data, 0o700))
	st, err := sqlite.Open(ctx, data)
	require.NoError(t, err)
	now := time.Now()
	require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses-1", Project: "p1", AgentKind: "echo", CreatedAt: now}))
	input := json.RawMessage(`[{"content":[{"type":"input_text","text":"t0001 hello"}]}]`)
	require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: "turn-1", SessionID: "ses-1", Input: input, State: store.TurnQueued, CreatedAt: now, UpdatedAt: now}))
	require.NoError(t, st.MoveTurn(ctx, store.TurnMove{TurnID: "turn-1", RunID: "run-1", From: store.TurnQueued, To: store.TurnClaimed,
		Claim: &store.Claim{DeviceID: "dev-1", OwnerEpoch: 1, RunID: "run-1", At: now}, At: now}))
	require.NoError(t, st.MoveTurn(ctx, store.TurnMove{TurnID: "turn-1", RunID: "run-1", From: store.TurnClaimed, To: store.TurnStarting, At: now}))
	require.NoError(t, st.MoveTurn(ctx, store.TurnMove{TurnID: "turn-1", RunID: "run-1", From: store.TurnStarting, To: store.TurnRunning, At: now}))
	for _, e := range []store.Event{
		{TurnID: "turn-1", RunID: "run-1", Type: "delta", Payload: json.RawMessage(`{"delta":"t0001 hello","sequence":1}`), At: now},
		{TurnID: "turn-1", RunID: "run-1", Type: "done", Payload: json.RawMessage(`{"content":"t0001 hello"}`), At: now},
	} {
		_, err := st.AppendEvent(ctx, e)
		require.NoError(t, err)
	}
	require.NoError(t, st.MoveTurn(ctx, store.TurnMove{TurnID: "turn-1", RunID: "run-1", From: store.TurnRunning, To: store.TurnCompleted, Outcome: &store.Outcome{}, At: now}))
	require.NoError(t, st.Close())

	frame := `{"at":"2026-01-01T00:00:00Z","device":"dev-1","dir":"out","frame":{"type":"execution_start","id":"p1","payload":{"run_id":"run-1","input":[{"content":[{"type":"input_text","text":"t0001 hello"}]}]}}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "frames-1.jsonl"), []byte(frame), 0o600))
	start := `{"ev":"start","run_id":"run-1","session_id":"ses-1","pid":7,"text":"t0001 hello"}` + "\n"
	done := `{"ev":"done","run_id":"run-1","stopped":false,"failed":false,"content":"t0001 hello"}` + "\n"
	agentLog := filepath.Join(dir, "agent-dev-1.log")
	require.NoError(t, os.WriteFile(agentLog, []byte(start+done), 0o600))

	e, err := LoadEvidence(ctx, dir, data, []string{"ses-1"}, map[string][]string{"turn-1": {"completed"}})
	require.NoError(t, err)
	require.Len(t, e.Turns, 1)
	assert.Len(t, e.Turns[0].Events, 2)
	assert.Len(t, e.Frames, 1)
	assert.Equal(t, []AgentRecord{
		{Device: "dev-1", Ev: "start", RunID: "run-1", SessionID: "ses-1", PID: 7, Text: "t0001 hello"},
		{Device: "dev-1", Ev: "done", RunID: "run-1", Content: "t0001 hello"},
	}, e.Agent)
	assert.Empty(t, Check(e))

	require.NoError(t, os.WriteFile(agentLog, []byte(start), 0o600))
	e, err = LoadEvidence(ctx, dir, data, []string{"ses-1"}, nil)
	require.NoError(t, err)
	got := Check(e)
	require.Len(t, got, 1)
	assert.Equal(t, Violation{TurnID: "turn-1", Property: PropAgentTruth, Detail: `completed, but no agent logged a done for Run "run-1"`}, got[0])
}

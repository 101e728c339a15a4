package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// testProjectUsage: a project's Sessions, queued Turns and the bytes of
// its options, inputs and journal, and nothing of another project's.
func testProjectUsage(t *testing.T, s store.Store) {
	u, err := s.ProjectUsage(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, store.Usage{}, u, "a project with nothing")

	seed(t, s, 3) // options {"model":"m"} (13 bytes), three inputs of 50 bytes
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "env-q", Project: "q", Type: "none", Binding: raw(`{}`), CreatedAt: T0}))
	require.NoError(t, s.CreateSession(ctx, store.Session{ID: "ses-q", Project: "q", AgentKind: "codex", EnvironmentID: "env-q", Options: raw(`{"x":"yyyyyyyy"}`), CreatedAt: T0}))
	require.NoError(t, s.CreateTurn(ctx, store.Turn{ID: "turn-q", SessionID: "ses-q", Input: raw(`[]`), CreatedAt: T0}))

	require.NoError(t, s.MoveTurn(ctx, ClaimMove("turn-0", store.Claim{DeviceID: "d", OwnerEpoch: 1, RunID: "run-0", At: T0})))
	_, err = s.AppendInput(ctx, store.Input{TurnID: "turn-0", ID: "in-1", Content: raw(`"0123456789"`), CreatedAt: T0})
	require.NoError(t, err)
	_, err = s.AppendEvent(ctx, store.Event{TurnID: "turn-0", RunID: "run-0", Type: "delta", Payload: raw(`{"delta":"abcdefghij"}`), At: T0})
	require.NoError(t, err)
	_, err = s.AppendEvent(ctx, store.Event{TurnID: "turn-q", RunID: "run-q", Type: "delta", Payload: raw(`{"delta":"not p's"}`), At: T0})
	require.NoError(t, err)

	u, err = s.ProjectUsage(ctx, "p")
	require.NoError(t, err)
	in := int64(len(`[{"content":[{"type":"input_text","text":"hi"}]}]`))
	assert.Equal(t, store.Usage{Sessions: 1, QueuedTurns: 2, Bytes: 13 + 3*in + 12 + 22}, u)
	u, err = s.ProjectUsage(ctx, "q")
	require.NoError(t, err)
	assert.Equal(t, store.Usage{Sessions: 1, QueuedTurns: 1, Bytes: int64(len(`{"x":"yyyyyyyy"}`) + 2 + len(`{"delta":"not p's"}`))}, u)
}

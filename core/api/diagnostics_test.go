package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/storetest"
)

// Diagnostics list a Session's failed Turns with Core's error; the engine's
// classification only for engine_failed, and no completed Turn.
func TestDiagnosticsShowEngineCodesOnlyForEngineFailed(t *testing.T) {
	e := newEnv(t)
	_, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"}}`)
	sid := s["id"].(string)
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	finish := func(id string, to store.TurnState, o store.Outcome) {
		require.NoError(t, e.store.CreateTurn(ctx, store.Turn{ID: id, SessionID: sid, Input: []byte(`[]`), CreatedAt: at}))
		require.NoError(t, storetest.Start(e.store, id, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-" + id, At: at}))
		require.NoError(t, e.store.MoveTurn(ctx, storetest.FinishMove(id, "run-"+id, store.TurnRunning, to, o, at)))
	}
	finish("t-engine", store.TurnFailed, store.Outcome{Reason: store.ReasonEngineFailed, EngineErrorCode: "rate_limited", EngineHTTPStatus: 429})
	finish("t-lost", store.TurnFailed, store.Outcome{Reason: store.ReasonEventStreamIncomplete, EngineErrorCode: "ignored", EngineHTTPStatus: 500})
	finish("t-ok", store.TurnCompleted, store.Outcome{})

	resp, d := e.do(e.key, "GET", "/api/v1/sessions/"+sid+"/diagnostics", "")
	require.Equal(t, 200, resp.StatusCode)
	failed := d["failed_turns"].([]any)
	require.Len(t, failed, 2)
	byID := map[string]map[string]any{}
	for _, f := range failed {
		m := f.(map[string]any)
		byID[m["turn_id"].(string)] = m
	}
	assert.Equal(t, "engine_failed", byID["t-engine"]["reason"])
	assert.Equal(t, "rate_limited", byID["t-engine"]["engine_error_code"])
	assert.Equal(t, float64(429), byID["t-engine"]["engine_http_status"])
	assert.Equal(t, "event_stream_incomplete", byID["t-lost"]["reason"])
	assert.NotContains(t, byID["t-lost"], "engine_error_code", "the engine's category is shown for engine_failed only")

	resp, _ = e.do(e.other, "GET", "/api/v1/sessions/"+sid+"/diagnostics", "")
	assert.Equal(t, 404, resp.StatusCode, "another project sees nothing")
}

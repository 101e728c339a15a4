package api_test

import (
	"context"
	"strings"
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

// A Turn shows its last usage snapshot: each frame replaces the one
// before, done's final one replaces them, a done without usage leaves the
// last frame standing, and a Turn with no measurement shows none.
func TestTurnShowsItsLastUsageSnapshot(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	usageOf := func(input string, frames ...string) any {
		// A Session per Turn: the fixture leaves each one running, and a
		// Session runs one Turn at a time.
		_, s := e.do(e.key, "POST", "/api/v1/sessions", `{"agent_kind":"codex","environment":{"type":"none"}}`)
		_, tr := e.do(e.key, "POST", "/api/v1/sessions/"+s["id"].(string)+"/turns", input)
		id := tr["id"].(string)
		at := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
		require.NoError(t, storetest.Start(e.store, id, store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-" + id, At: at}))
		for _, f := range frames {
			typ, payload, _ := strings.Cut(f, " ")
			_, err := e.journal.Append(ctx, store.Event{TurnID: id, RunID: "run-" + id, Type: typ, Payload: []byte(payload), At: at})
			require.NoError(t, err)
		}
		_, v := e.do(e.key, "GET", "/api/v1/turns/"+id, "")
		return v["usage"]
	}
	assert.Nil(t, usageOf(input, `delta {"delta":"a"}`), "no measurement: unknown, not zero")
	assert.Equal(t, map[string]any{"input_tokens": float64(7)}, usageOf(input,
		`usage {"input_tokens":3}`, `usage {"input_tokens":7}`), "the last frame replaces the first")
	assert.Equal(t, map[string]any{"input_tokens": float64(7)}, usageOf(input,
		`usage {"input_tokens":7}`, `done {"content":"x"}`), "a done without usage leaves the frame's")
	assert.Equal(t, map[string]any{"input_tokens": float64(9), "output_tokens": float64(2)}, usageOf(input,
		`usage {"input_tokens":7}`, `done {"content":"x","usage":{"input_tokens":9,"output_tokens":2}}`), "done's final snapshot wins")
}

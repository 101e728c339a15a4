package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/core/server"
	"github.com/agentwire/agentwire/internal/peer"
)

// recorded is a request the owner replica (a recorder standing in for
// it) received.
type recorded struct {
	method, path, query, body, auth, hop string
}

// TestReplicaForwardsToTheDeviceOwner: a request that needs the device's
// connection, arriving at a replica that does not hold the device's
// lease, reaches the replica that does, as it came and marked with the
// hop header; a request that only reads the store, and one already
// forwarded, are served where they arrive.
func TestReplicaForwardsToTheDeviceOwner(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := clock.Now()

	var mu sync.Mutex
	var got []recorded
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, recorded{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Get("Authorization"), r.Header.Get(server.ForwardedHeader)})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer owner.Close()

	// The owner replica holds dev-1, which runs a Turn and hosts an
	// Environment.
	require.NoError(t, st.RegisterReplica(ctx, store.Replica{ID: "rep-owner", URL: owner.URL, StartedAt: now}))
	epoch, err := st.AcquireLease(ctx, "dev-1", "rep-owner", now, now.Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env-1", Project: "p", Type: "self_hosted", DeviceID: "dev-1", CreatedAt: now}))
	require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses-1", Project: "p", AgentKind: "codex", EnvironmentID: "env-1", CreatedAt: now}))
	require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: "turn-1", SessionID: "ses-1", Input: []byte(`[]`), CreatedAt: now}))
	require.NoError(t, storetest.Start(st, "turn-1", store.Claim{DeviceID: "dev-1", OwnerEpoch: epoch, RunID: "run-1", At: now}))

	here := server.New(server.Config{Store: st, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Replica: gateway.Replica{URL: "http://127.0.0.1:1", Shared: true, RenewInterval: time.Hour}})
	defer here.Close()
	srv := httptest.NewServer(here)
	defer srv.Close()

	do := func(method, path, body string, hop bool) int {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer key-of-the-caller")
		if hop {
			req.Header.Set(server.ForwardedHeader, "rep-other")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		return res.StatusCode
	}
	forwarded := []recorded{
		{"POST", "/api/v1/turns/turn-1/input", "", `{"input":[]}`, "Bearer key-of-the-caller", here.Gateway().ReplicaID()},
		{"POST", "/api/v1/turns/turn-1/cancel", "", ``, "Bearer key-of-the-caller", here.Gateway().ReplicaID()},
		{"POST", "/api/v1/turns/turn-1/interactions/int-1", "", `{"decision":"approve"}`, "Bearer key-of-the-caller", here.Gateway().ReplicaID()},
		{"GET", "/api/v1/sessions/ses-1/files/content", "path=a.txt", ``, "Bearer key-of-the-caller", here.Gateway().ReplicaID()},
		{"POST", "/api/v1/environments/env-1/suspend", "", `{}`, "Bearer key-of-the-caller", here.Gateway().ReplicaID()},
	}
	for _, f := range forwarded {
		path := f.path
		if f.query != "" {
			path += "?" + f.query
		}
		assert.Equal(t, http.StatusAccepted, do(f.method, path, f.body, false), f.path)
	}
	// Served here: a store read, and a request already forwarded once.
	assert.NotEqual(t, http.StatusAccepted, do("GET", "/api/v1/turns/turn-1", "", false))
	assert.NotEqual(t, http.StatusAccepted, do("POST", "/api/v1/turns/turn-1/cancel", "", true))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, forwarded, got)

	// Once the device's lease is the replica's own (the device
	// reconnected here), nothing is forwarded.
	got = nil
	mu.Unlock()
	_, err = st.AcquireLease(ctx, "dev-1", here.Gateway().ReplicaID(), now, now.Add(time.Hour))
	require.NoError(t, err)
	assert.NotEqual(t, http.StatusAccepted, do("GET", "/api/v1/sessions/ses-1/files/content?path=a.txt", "", false))
	mu.Lock()
	assert.Empty(t, got)
}

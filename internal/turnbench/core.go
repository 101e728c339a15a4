package turnbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/sqlite"
	"github.com/agentwire/agentwire/internal/core/server"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
)

// ThroughCore is a real Core (core/server on a SQLite store in a
// temporary directory) with the real daemon connected to it, the adapter
// the daemon's only Harness: a Turn goes in through the public API and
// comes out of the Turn's event stream, as a user of Core sees it.
type ThroughCore struct {
	tb      testing.TB
	url     string
	key     string
	session string
	created *atomic.Int64 // Executors the adapter made
}

// countingAdapter counts the Executors the daemon asks for, so that a
// Turn can tell whether the Session's idle Executor served it.
type countingAdapter struct {
	harness.Adapter
	created *atomic.Int64
}

func (a countingAdapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	a.created.Add(1)
	return a.Adapter.NewExecutor(ctx, cfg)
}

// StartThroughCore starts Core on SQLite, the daemon with adapter a
// connected to it, and one Session of agentKind whose Turns the benchmark
// runs one after another.
func StartThroughCore(ctx context.Context, tb testing.TB, a harness.Adapter, agentKind string) *ThroughCore {
	st, err := sqlite.Open(ctx, tb.TempDir())
	require.NoError(tb, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	srv := server.New(server.Config{Store: st, PublicURL: hs.URL, Logger: quiet})
	mux.Handle("/", srv)
	is := credential.Issuer{Store: st, Now: time.Now}
	_, key, err := is.Issue(ctx, store.KindProject, "", "bench")
	require.NoError(tb, err)
	const device = "bench-device"
	_, secret, err := is.Issue(ctx, store.KindDevice, device, "bench")
	require.NoError(tb, err)
	now := time.Now()
	require.NoError(tb, st.CreateEnvironment(ctx, store.Environment{ID: "env-bench", Project: "bench", Type: "none", CreatedAt: now}))
	require.NoError(tb, st.CreateSession(ctx, store.Session{ID: "ses-bench", Project: "bench", AgentKind: agentKind, EnvironmentID: "env-bench", CreatedAt: now}))

	created := &atomic.Int64{}
	reg := harness.NewRegistry()
	require.NoError(tb, reg.Register(countingAdapter{Adapter: a, created: created}))
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(dctx, daemon.Config{
			CoreURL: hs.URL, DeviceID: device, Credential: daemon.NewCredential(secret.Reveal()),
			Registry: reg, Logger: quiet, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		})
	}()
	tb.Cleanup(func() {
		stop()
		require.NoError(tb, <-done)
		srv.Close()
		hs.Close()
		_ = st.Close()
	})
	// The daemon is ready once Core stored its declaration.
	for {
		d, err := st.GetDevice(ctx, device)
		if err == nil && d.Connected && len(d.Declaration) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			tb.Fatal("the daemon did not connect to Core")
		case <-time.After(2 * time.Millisecond):
		}
	}
	return &ThroughCore{tb: tb, url: hs.URL, key: key.Reveal(), session: "ses-bench", created: created}
}

func (c *ThroughCore) request(ctx context.Context, method, path, body string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, strings.NewReader(body))
	require.NoError(c.tb, err)
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.tb, err)
	return resp
}

// Turn submits one Turn of the Session and reads its event stream to the
// final status: the wall time runs from the submission to the status, and
// each delta is timed at its arrival on the stream.
func (c *ThroughCore) Turn(ctx context.Context) Timing {
	before := c.created.Load()
	began := time.Now()
	resp := c.request(ctx, "POST", "/api/v1/sessions/"+c.session+"/turns", `{"input":[{"content":[{"type":"input_text","text":"hi"}]}]}`)
	var turn struct {
		ID string `json:"id"`
	}
	err := json.NewDecoder(resp.Body).Decode(&turn)
	resp.Body.Close()
	require.NoError(c.tb, err)
	require.Equal(c.tb, http.StatusCreated, resp.StatusCode)

	events := c.request(ctx, "GET", "/api/v1/turns/"+turn.ID+"/events", "")
	defer events.Body.Close()
	var t Timing
	sc := bufio.NewScanner(events.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	event := ""
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(line[len("event: "):])
		case bytes.HasPrefix(line, []byte("data: ")) && event == "delta":
			t.Delta(began)
		case bytes.HasPrefix(line, []byte("data: ")) && event == "status":
			t.Wall = time.Since(began)
			t.Reused = c.created.Load() == before
			require.Contains(c.tb, string(line), `"state":"completed"`, "Turn %s", turn.ID)
			return t
		}
	}
	c.tb.Fatalf("the event stream of Turn %s ended without a status: %v", turn.ID, sc.Err())
	return t
}

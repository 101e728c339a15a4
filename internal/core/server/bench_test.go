package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/sqlite"
	"github.com/agentwire/agentwire/internal/core/server"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// countingStore tells the benchmarks when Core finished a Turn and how
// many heartbeats it persisted, without polling.
type countingStore struct {
	store.Store
	finished     chan string
	declarations atomic.Int64
	// commits counts the store writes Core made for Turns (each one
	// commit): claims, starts, finishes, appends and batches.
	commits atomic.Int64
}

func (s *countingStore) MoveTurn(ctx context.Context, m store.TurnMove) error {
	s.commits.Add(1)
	err := s.Store.MoveTurn(ctx, m)
	if err == nil && m.To.Terminal() {
		s.finished <- m.TurnID
	}
	return err
}

func (s *countingStore) AppendEvent(ctx context.Context, e store.Event) (store.Event, error) {
	s.commits.Add(1)
	return s.Store.AppendEvent(ctx, e)
}

// Commit signals the finishes it applied (Core finishes a Run's Turn in
// its connection's batch).
func (s *countingStore) Commit(ctx context.Context, b store.Batch) (store.BatchResult, error) {
	if !b.Empty() {
		s.commits.Add(1)
	}
	res, err := s.Store.Commit(ctx, b)
	for i, ferr := range res.Finishes {
		if ferr == nil {
			s.finished <- b.Finishes[i].TurnID
		}
	}
	return res, err
}

func (s *countingStore) RecordDeclaration(ctx context.Context, deviceID string, epoch uint64, decl json.RawMessage, at time.Time) error {
	err := s.Store.RecordDeclaration(ctx, deviceID, epoch, decl, at)
	if err == nil && decl != nil {
		s.declarations.Add(1)
	}
	return err
}

// benchCore is a real Core (server.New on the system clock) on loopback.
type benchCore struct {
	st   *countingStore
	srv  *server.Server
	http *httptest.Server
	is   credential.Issuer
	key  string // a project API key
}

func openBenchStore(b *testing.B, kind string) store.Store {
	switch kind {
	case "memory":
		return memory.New()
	case "sqlite":
		st, err := sqlite.Open(context.Background(), b.TempDir())
		require.NoError(b, err)
		return st
	}
	b.Fatalf("unknown store %s", kind)
	return nil
}

func newBenchCore(b *testing.B, st store.Store, finished int) *benchCore {
	c := &benchCore{st: &countingStore{Store: st, finished: make(chan string, finished)}}
	mux := http.NewServeMux()
	c.http = httptest.NewServer(mux)
	keys := st.(store.Credentials) // the counting wrapper hides the credential half
	c.srv = server.New(server.Config{Store: c.st, Credentials: keys, PublicURL: c.http.URL, Logger: slog.New(slog.NewTextHandler(benchLog, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	mux.Handle("/", c.srv)
	c.is = credential.Issuer{Store: keys, Devices: c.st, Now: time.Now}
	_, key, err := c.is.Issue(context.Background(), store.KindProject, "", "bench")
	require.NoError(b, err)
	c.key = key.Reveal()
	b.Cleanup(func() {
		c.srv.Close()
		c.http.Close()
		_ = st.Close()
	})
	return c
}

// benchRuntime is a scripted Runtime on one WebSocket: it answers every
// execution_prepare with preparing and ready and every execution_start
// with started, deltas deltas and done, or hands the start to onStart.
type benchRuntime struct {
	ws      *websocket.Conn
	mu      sync.Mutex
	deltas  int
	onStart func(runID string)
}

func (c *benchCore) runtime(b *testing.B, device string, deltas int, onStart func(string)) *benchRuntime {
	_, secret, err := c.is.Issue(context.Background(), store.KindDevice, device, "bench")
	require.NoError(b, err)
	ws, err := dialCore(context.Background(), c.http.URL, device, secret.Reveal())
	require.NoError(b, err)
	r := &benchRuntime{ws: ws, deltas: deltas, onStart: onStart}
	b.Cleanup(func() { _ = ws.CloseNow() })
	r.send("", fullHeartbeat())
	go r.serve()
	// Wait for the declaration without sleeping a fixed time.
	for c.st.declarations.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	return r
}

func dialCore(ctx context.Context, base, device, secret string) (*websocket.Conn, error) {
	url := "ws" + strings.TrimPrefix(base, "http") + "/api/v1/agent-daemon/ws?device_id=" + device + "&version=" + wire.Version
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + secret}}})
	return ws, err
}

func fullHeartbeat() wire.Heartbeat {
	yes := true
	return wire.Heartbeat{TS: time.Now().Unix(), SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()}}}
}

func (r *benchRuntime) send(id string, p wire.Payload) {
	b, err := wire.Encode(id, p, "")
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.ws.Write(context.Background(), websocket.MessageText, b)
}

func (r *benchRuntime) serve() {
	for {
		_, b, err := r.ws.Read(context.Background())
		if err != nil {
			return
		}
		m, err := wire.Decode(b, wire.CoreToRuntime)
		if err != nil {
			continue
		}
		switch p := m.Payload.(type) {
		case wire.ExecutionPrepare:
			r.send(m.ID, wire.PreparationStatus{ExecutorID: "ex", Handle: "h-" + m.ID, Revision: 1, State: wire.PreparationPreparing})
			r.send(m.ID, wire.PreparationStatus{ExecutorID: "ex", Handle: "h-" + m.ID, Revision: 2, State: wire.PreparationReady, ExpiresAt: time.Now().Add(5 * time.Minute).UnixMilli()})
		case wire.ExecutionStart:
			r.send(m.ID, wire.PreparationStatus{ExecutorID: "ex", Handle: p.Handle, Revision: 3, State: wire.PreparationStarted, RunID: p.RunID})
			if r.onStart != nil {
				go r.onStart(p.RunID)
				continue
			}
			for i := 1; i <= r.deltas; i++ {
				r.send(p.RunID, wire.Delta{Delta: "some output text ", Sequence: uint64(i)})
			}
			r.send(p.RunID, wire.Done{Content: "done"})
		}
	}
}

// seedSessions creates n Sessions (one Turn runs per Session at a time).
func (c *benchCore) seedSessions(b *testing.B, n int) []string {
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ses-%d", i)
		require.NoError(b, c.st.CreateEnvironment(ctx, store.Environment{ID: "env-" + ids[i], Project: "bench", Type: "none", CreatedAt: time.Now()}))
		require.NoError(b, c.st.CreateSession(ctx, store.Session{ID: ids[i], Project: "bench", AgentKind: "codex", EnvironmentID: "env-" + ids[i], CreatedAt: time.Now()}))
	}
	return ids
}

var benchInput = json.RawMessage(`[{"content":[{"type":"input_text","text":"hello"}]}]`)

// BenchmarkTurnsThroughCore: end-to-end Turns through a real Core over a
// real WebSocket, each prepare → ready → start → 20 deltas → done with
// its journal persisted, against the SQLite store and the memory store.
// Every Turn is in its own Session, so up to 64 run at once.
func BenchmarkTurnsThroughCore(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			c := newBenchCore(b, openBenchStore(b, kind), b.N)
			c.runtime(b, "dev-1", 20, nil)
			sessions := c.seedSessions(b, b.N)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				require.NoError(b, c.st.CreateTurn(ctx, store.Turn{ID: fmt.Sprintf("turn-%d", i), SessionID: sessions[i], Input: benchInput, CreatedAt: time.Now()}))
				c.srv.Gateway().Kick()
			}
			for i := 0; i < b.N; i++ {
				<-c.st.finished
			}
			rate := float64(b.N) / time.Since(start).Seconds()
			b.ReportMetric(rate, "turns/s")
			b.ReportMetric(float64(c.st.commits.Load())/float64(b.N), "commits/turn")
			if kind == "sqlite" {
				b.StopTimer()
				// The same rows per Turn, group-committed 64 Turns at a
				// time with no protocol around them, on the same disk.
				ceiling, err := sqlite.DurableCeiling(ctx, b.TempDir(), max(b.N, 256), 23, 64)
				require.NoError(b, err)
				b.ReportMetric(ceiling, "ceiling-turns/s")
				b.ReportMetric(100*rate/ceiling, "%-of-ceiling")
			}
		})
	}
}

// BenchmarkDeltaLatencyToSSE: the time from the Runtime writing a delta
// to a public API subscriber reading it on the Turn's Server-Sent Events
// stream (the journal append, the wake-up and the HTTP write). Deltas go
// one at a time: the next leaves once the previous arrived, so the figure
// is latency, not queueing.
func BenchmarkDeltaLatencyToSSE(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			c := newBenchCore(b, openBenchStore(b, kind), 1)
			started := make(chan string, 1)
			r := c.runtime(b, "dev-1", 0, func(runID string) { started <- runID })
			sessions := c.seedSessions(b, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			require.NoError(b, c.st.CreateTurn(ctx, store.Turn{ID: "turn-0", SessionID: sessions[0], Input: benchInput, CreatedAt: time.Now()}))
			c.srv.Gateway().Kick()
			runID := <-started

			req, err := http.NewRequestWithContext(ctx, "GET", c.http.URL+"/api/v1/turns/turn-0/events", nil)
			require.NoError(b, err)
			req.Header.Set("Authorization", "Bearer "+c.key)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(b, err)
			defer resp.Body.Close()
			arrived := make(chan time.Duration, 1)
			go func() {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					data, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok {
						continue
					}
					var d wire.Delta
					if json.Unmarshal([]byte(data), &d) != nil || d.Delta == "" {
						continue
					}
					sent, _ := strconv.ParseInt(d.Delta, 10, 64)
					arrived <- time.Since(time.Unix(0, sent))
				}
			}()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				r.send(runID, wire.Delta{Delta: strconv.FormatInt(time.Now().UnixNano(), 10), Sequence: uint64(i)})
				lat = append(lat, <-arrived)
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds()), "p99-µs")
			r.send(runID, wire.Done{})
			<-c.st.finished
		})
	}
}

var benchLog io.Writer = io.Discard

package codex

// What agentwire adds to a real Codex Turn. One op is a pair of Turns on
// the same scripted model endpoint, one through the Runtime daemon and this
// adapter (driven by a scripted Core over a loopback WebSocket, as the
// daemon benchmarks are) and one through a minimal direct app-server
// client (the same command line and environment, plain pipes, no
// decoding beyond finding the lines it waits for). The order alternates
// from pair to pair, so that neither side always runs on a machine the
// other just warmed. Both sides run on a warm app-server whose thread
// already holds a few Turns: the daemon's Executor is the idle one it
// reuses for the Session (ready says reused), the direct client keeps its
// one process.
//
//	go test -run '^$' -bench CodexTurnOverhead -benchtime 40x ./runtime/adapters/codex/
//
// reports, beside ns/op (one pair), the medians of each side's wall time
// per Turn, the median of the paired differences (overhead-ms, and as a
// percentage of the direct Turn), and the p50 of the added latency of each
// text delta, measured from the request that starts the native turn
// (execution_start on the daemon side, turn/start on the direct one) to
// the delta's arrival. Without the pinned CLI it skips (install.RequireCodex).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	osexec "os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// benchDeltaCount text deltas per Turn, benchDeltaGap apart: a model's
// token stream, each delta its own SSE event and its own frame.
const (
	benchDeltaCount = 16
	benchDeltaGap   = 2 * time.Millisecond
	benchWarmTurns  = 3
)

func BenchmarkCodexTurnOverhead(b *testing.B) {
	bin := install.RequireCodex(b)
	b.Setenv(keyEnv, testKey)
	deltas := make([]string, benchDeltaCount)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("word%02d ", i)
	}
	reply := modeltest.Reply(modeltest.SlowText(benchDeltaGap, deltas...))
	srv := modeltest.New(b, modeltest.WithFallback(func(*modeltest.Request) modeltest.Turn {
		lastRequest.Store(time.Now().UnixNano())
		return reply
	}))
	a, err := New(Config{Binary: bin, Model: "gpt-5.5", BaseURL: srv.OpenAIBaseURL(), APIKeyEnv: keyEnv,
		StateDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(b, err)
	require.True(b, a.Declaration().Available)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	via := startBenchCore(ctx, b, a)
	direct := startDirect(ctx, b, a.cfg)
	for range benchWarmTurns {
		via.turn(ctx)
		direct.turn(ctx)
	}

	var viaT, directT []turnTiming
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			viaT = append(viaT, via.turn(ctx))
			directT = append(directT, direct.turn(ctx))
		} else {
			directT = append(directT, direct.turn(ctx))
			viaT = append(viaT, via.turn(ctx))
		}
	}
	b.StopTimer()

	var diffs, viaWall, directWall, viaReq, directReq, added []float64
	for i := range viaT {
		v, d := viaT[i], directT[i]
		require.True(b, v.reused, "pair %d: the daemon prepared a new Executor instead of reusing the idle one", i)
		require.Len(b, v.deltas, benchDeltaCount, "pair %d: deltas through the daemon", i)
		require.Len(b, d.deltas, benchDeltaCount, "pair %d: deltas of the direct client", i)
		viaWall = append(viaWall, ms(v.wall))
		directWall = append(directWall, ms(d.wall))
		diffs = append(diffs, ms(v.wall-d.wall))
		viaReq, directReq = append(viaReq, ms(v.request)), append(directReq, ms(d.request))
		for k := range v.deltas {
			// From the model's stream to the delta's arrival, through the
			// daemon and Core's socket against through the direct pipe.
			added = append(added, float64(((v.deltas[k] - v.request) - (d.deltas[k] - d.request)).Microseconds()))
		}
	}
	b.ReportMetric(median(viaWall), "agentwire-ms/turn")
	b.ReportMetric(median(directWall), "direct-ms/turn")
	b.ReportMetric(median(diffs), "overhead-ms")
	b.ReportMetric(100*median(diffs)/median(directWall), "overhead-%")
	b.ReportMetric(median(added), "delta-added-p50-µs")
	b.ReportMetric(median(viaReq), "agentwire-to-model-ms")
	b.ReportMetric(median(directReq), "direct-to-model-ms")
	require.Empty(b, srv.Problems())
}

// lastRequest is when the scripted endpoint last received a request
// (UnixNano): the Turns run one at a time, so at a Turn's first delta it is
// the request that Turn's model stream answers.
var lastRequest atomic.Int64

// turnTiming is one Turn: its wall time (from the first request to the
// Turn's end), when Codex's model request arrived and each text delta's
// arrival, both after the request that starts the native turn.
type turnTiming struct {
	wall    time.Duration
	request time.Duration
	deltas  []time.Duration
	reused  bool
}

// delta notes a delta's arrival, and at the first one the model request's.
func (t *turnTiming) delta(started time.Time) {
	if len(t.deltas) == 0 {
		t.request = time.Unix(0, lastRequest.Load()).Sub(started)
	}
	t.deltas = append(t.deltas, time.Since(started))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// benchCore is a scripted Core with the real daemon behind it, the adapter
// the daemon's only Harness. It writes Core's frames as JSON text and
// finds the frames it waits for by their first bytes.
type benchCore struct {
	tb      testing.TB
	ws      *websocket.Conn
	n       int
	session string // the native Session done reported, resumed by the next Turn
}

func startBenchCore(ctx context.Context, tb testing.TB, a *Adapter) *benchCore {
	accepted := make(chan *websocket.Conn, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(daemon.BootstrapPath, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(daemon.Bootstrap{WSURL: "ws://" + r.Host + daemon.WSPath, HeartbeatSeconds: 3600, ProtocolVersion: wire.Version})
	})
	mux.HandleFunc(daemon.WSPath, func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(wire.MaxFrameBytes)
		accepted <- ws
	})
	hs := httptest.NewServer(mux)
	reg := harness.NewRegistry()
	require.NoError(tb, reg.Register(a))
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(dctx, daemon.Config{
			CoreURL: hs.URL, DeviceID: "bench", Credential: daemon.NewCredential("bench-credential"),
			Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		})
	}()
	var ws *websocket.Conn
	select {
	case ws = <-accepted:
	case <-ctx.Done():
		stop()
		tb.Fatal("the daemon did not connect")
	}
	tb.Cleanup(func() {
		ws.CloseRead(context.Background())
		stop()
		require.NoError(tb, <-done)
		_ = ws.CloseNow()
		hs.Close()
	})
	c := &benchCore{tb: tb, ws: ws}
	c.await(ctx, "heartbeat", "", "")
	return c
}

func (c *benchCore) write(ctx context.Context, typ, id, payload string) {
	frame := `{"type":"` + typ + `","id":"` + id + `","payload":` + payload + `}`
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		c.tb.Fatalf("core: write %s: %v", typ, err)
	}
}

// await reads until a frame of typ for id (with "state":state when state
// is set) arrives; deltas of id meanwhile are timed into at. A rejection,
// a failure or an error frame of id ends the benchmark.
func (c *benchCore) await(ctx context.Context, typ, id, state string) []byte {
	prefix := []byte(`{"type":"` + typ + `"`)
	if id != "" {
		prefix = []byte(`{"type":"` + typ + `","id":"` + id + `"`)
	}
	for {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			c.tb.Fatalf("core: read: %v", err)
		}
		if id != "" && (bytes.Contains(b, []byte(`"state":"rejected"`)) || bytes.Contains(b, []byte(`"state":"failed"`)) ||
			bytes.HasPrefix(b, []byte(`{"type":"error","id":"`+id+`"`))) {
			c.tb.Fatalf("core: %s: %.400s", id, b)
		}
		if bytes.HasPrefix(b, prefix) && (state == "" || bytes.Contains(b, []byte(`"state":"`+state+`"`))) {
			return b
		}
	}
}

// turn is one Turn of the Session: prepare (resuming the native Session
// the last done reported, as Core does), start, every delta, done.
func (c *benchCore) turn(ctx context.Context) turnTiming {
	c.n++
	pid, runID := fmt.Sprintf("prepare-%d", c.n), fmt.Sprintf("run-%d", c.n)
	resume := ""
	if c.session != "" {
		resume = fmt.Sprintf(`"agent_session_id":%q,`, c.session)
	}
	began := time.Now()
	c.write(ctx, "execution_prepare", pid, `{"session_id":"3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b","configuration":{"agent_kind":"codex",`+resume+
		`"execution_controls":{"web_search":"disabled","text_verbosity":"medium"},"agent_state_key":"agents-api-3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b","strict_resume":true,"observe_tool_observations":true}}`)
	var ready struct {
		Payload struct {
			Handle     string `json:"handle"`
			ExecutorID string `json:"executor_id"`
			Reused     bool   `json:"reused"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(c.await(ctx, "preparation_status", pid, "ready"), &ready); err != nil {
		c.tb.Fatalf("core: ready: %v", err)
	}
	started := time.Now()
	c.write(ctx, "execution_start", pid, fmt.Sprintf(`{"executor_id":%q,"handle":%q,"run_id":%q,"input":[{"content":[{"type":"input_text","text":"hi"}]}]}`,
		ready.Payload.ExecutorID, ready.Payload.Handle, runID))
	t := turnTiming{reused: ready.Payload.Reused}
	deltaPrefix := []byte(`{"type":"delta","id":"` + runID + `"`)
	donePrefix := []byte(`{"type":"done","id":"` + runID + `"`)
	var done []byte
	for done == nil {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			c.tb.Fatalf("core: read: %v", err)
		}
		switch {
		case bytes.HasPrefix(b, deltaPrefix):
			t.delta(started)
		case bytes.HasPrefix(b, donePrefix):
			done = b
		case bytes.HasPrefix(b, []byte(`{"type":"error","id":"`+runID+`"`)):
			c.tb.Fatalf("core: %s: %.400s", runID, b)
		}
	}
	t.wall = time.Since(began)
	// Outside the Turn's time: Core's strict reading of done.
	m, err := wire.Decode(done, wire.RuntimeToCore)
	if err != nil {
		c.tb.Fatalf("core: done: %v: %.300s", err, done)
	}
	if md := m.Payload.(wire.Done).Metadata; md != nil && md.AgentSessionID != "" {
		c.session = md.AgentSessionID
	}
	return t
}

// directClient is the baseline: one app-server with one thread, driven
// over plain pipes with the adapter's own command line and environment.
type directClient struct {
	tb     testing.TB
	in     io.Writer
	out    *bufio.Reader
	thread string
	nextID int
}

func startDirect(ctx context.Context, tb testing.TB, cfg Config) *directClient {
	home := tb.TempDir()
	cmd := osexec.Command(cfg.Binary, cfg.args()...)
	cmd.Dir, cmd.Env = tb.TempDir(), cfg.env(home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	require.NoError(tb, err)
	out, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	tb.Cleanup(func() {
		_ = in.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	c := &directClient{tb: tb, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	c.call(ctx, "initialize", `{"clientInfo":{"name":"bench","version":"0"},"capabilities":{"experimentalApi":true}}`)
	c.send(`{"jsonrpc":"2.0","method":"initialized"}`)
	var res struct {
		Result struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		} `json:"result"`
	}
	params := fmt.Sprintf(`{"cwd":%q,"approvalPolicy":"on-request","sandbox":"workspace-write","config":{"web_search":"disabled","features.goals":false,"model_verbosity":"medium"}}`, cmd.Dir)
	require.NoError(tb, json.Unmarshal(c.call(ctx, "thread/start", params), &res))
	require.NotEmpty(tb, res.Result.Thread.ID, "thread/start answered no thread")
	c.thread = res.Result.Thread.ID
	return c
}

func (c *directClient) send(line string) {
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.tb.Fatalf("direct: write: %v", err)
	}
}

// call sends a request and returns its response line; notifications
// before it are passed over.
func (c *directClient) call(ctx context.Context, method, params string) []byte {
	c.nextID++
	id := fmt.Sprintf(`"id":%d`, c.nextID)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0",%s,"method":%q,"params":%s}`, id, method, params))
	for {
		line := c.line(ctx)
		if bytes.Contains(line, []byte(id)) && !bytes.Contains(line, []byte(`"method"`)) {
			if bytes.Contains(line, []byte(`"error":{`)) {
				c.tb.Fatalf("direct: %s: %s", method, line)
			}
			return line
		}
	}
}

func (c *directClient) line(ctx context.Context) []byte {
	if ctx.Err() != nil {
		c.tb.Fatalf("direct: %v", ctx.Err())
	}
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		c.tb.Fatalf("direct: read: %v", err)
	}
	return line
}

// turn is one turn/start on the thread, read until turn/completed.
func (c *directClient) turn(ctx context.Context) turnTiming {
	c.nextID++
	began := time.Now()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"turn/start","params":{"threadId":%q,"input":[{"type":"text","text":"hi","text_elements":[]}]}}`,
		c.nextID, c.thread))
	var t turnTiming
	for {
		line := c.line(ctx)
		switch {
		case bytes.Contains(line, []byte(`"method":"item/agentMessage/delta"`)):
			t.delta(began)
		case bytes.Contains(line, []byte(`"method":"turn/completed"`)):
			t.wall = time.Since(began)
			if !bytes.Contains(line, []byte(`"status":"completed"`)) {
				c.tb.Fatalf("direct: the turn did not complete: %.400s", line)
			}
			return t
		case bytes.Contains(line, []byte(`"error":{`)) && !bytes.Contains(line, []byte(`"method"`)):
			c.tb.Fatalf("direct: turn/start: %s", line)
		}
	}
}

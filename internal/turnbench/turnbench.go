// Package turnbench measures what agentwire adds to a real Harness's Turn:
// the same Turn through the Runtime daemon (driven by a scripted Core over
// a loopback WebSocket) and through a minimal direct client of the CLI,
// in alternating pairs against one scripted model endpoint. The adapters'
// overhead benchmarks share it; each brings its own direct client.
package turnbench

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
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// Timing is one Turn: its wall time (from the first request to the Turn's
// end), when the CLI's model request arrived and each text delta's
// arrival, both after the request that starts the native turn.
type Timing struct {
	Wall    time.Duration
	Request time.Duration
	Deltas  []time.Duration
	// Reused: the daemon served the Turn with the Session's idle Executor.
	Reused bool
}

// lastRequest is when the scripted endpoint last received a request
// (UnixNano): the Turns run one at a time, so at a Turn's first delta it is
// the request that Turn's model stream answers.
var lastRequest atomic.Int64

// MarkRequest notes a model request's arrival; the endpoint's responder
// calls it.
func MarkRequest() { lastRequest.Store(time.Now().UnixNano()) }

// Delta notes a delta's arrival, and at the first one the model request's.
func (t *Timing) Delta(started time.Time) {
	if len(t.Deltas) == 0 {
		t.Request = time.Unix(0, lastRequest.Load()).Sub(started)
	}
	t.Deltas = append(t.Deltas, time.Since(started))
}

// Pairs runs b.N pairs after warm Turns of each side, alternating which
// side goes first, and reports the medians (Report).
func Pairs(b *testing.B, warm, deltas int, via, direct func() Timing) {
	for range warm {
		via()
		direct()
	}
	var viaT, directT []Timing
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			viaT = append(viaT, via())
			directT = append(directT, direct())
		} else {
			directT = append(directT, direct())
			viaT = append(viaT, via())
		}
	}
	b.StopTimer()
	Report(b, viaT, directT, deltas)
}

// Report checks each pair and reports, beside ns/op (one pair), the
// medians of each side's wall time per Turn, the median of the paired
// differences (overhead-ms, and as a percentage of the direct Turn), the
// p50 of the added latency of each text delta, and each side's time from
// starting the native turn to the model request.
func Report(b *testing.B, viaT, directT []Timing, deltas int) {
	var diffs, viaWall, directWall, viaReq, directReq, added []float64
	for i := range viaT {
		v, d := viaT[i], directT[i]
		require.True(b, v.Reused, "pair %d: the daemon prepared a new Executor instead of reusing the idle one", i)
		require.Len(b, v.Deltas, deltas, "pair %d: deltas through the daemon", i)
		require.Len(b, d.Deltas, deltas, "pair %d: deltas of the direct client", i)
		viaWall = append(viaWall, ms(v.Wall))
		directWall = append(directWall, ms(d.Wall))
		diffs = append(diffs, ms(v.Wall-d.Wall))
		viaReq, directReq = append(viaReq, ms(v.Request)), append(directReq, ms(d.Request))
		for k := range v.Deltas {
			// From the model's stream to the delta's arrival, through the
			// daemon and Core's socket against through the direct pipe.
			added = append(added, float64(((v.Deltas[k] - v.Request) - (d.Deltas[k] - d.Request)).Microseconds()))
		}
	}
	b.ReportMetric(Median(viaWall), "agentwire-ms/turn")
	b.ReportMetric(Median(directWall), "direct-ms/turn")
	b.ReportMetric(Median(diffs), "overhead-ms")
	b.ReportMetric(100*Median(diffs)/Median(directWall), "overhead-%")
	b.ReportMetric(Median(added), "delta-added-p50-µs")
	b.ReportMetric(Median(viaReq), "agentwire-to-model-ms")
	b.ReportMetric(Median(directReq), "direct-to-model-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Median is the median of xs (0 for none).
func Median(xs []float64) float64 {
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

// Core is a scripted Core with the real daemon behind it, the adapter the
// daemon's only Harness. It writes Core's frames as JSON text and finds
// the frames it waits for by their first bytes.
type Core struct {
	tb      testing.TB
	ws      *websocket.Conn
	config  map[string]any
	n       int
	session string // the native Session done reported, resumed by the next Turn
}

// StartCore starts the daemon with adapter a against a scripted Core;
// configuration is every Turn's execution_prepare configuration (its
// agent_session_id is set from the previous done, as Core does).
func StartCore(ctx context.Context, tb testing.TB, a harness.Adapter, configuration map[string]any) *Core {
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
	c := &Core{tb: tb, ws: ws, config: configuration}
	c.await(ctx, "heartbeat", "", "")
	return c
}

func (c *Core) write(ctx context.Context, typ, id, payload string) {
	frame := `{"type":"` + typ + `","id":"` + id + `","payload":` + payload + `}`
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		c.tb.Fatalf("core: write %s: %v", typ, err)
	}
}

// await reads until a frame of typ for id (with "state":state when state
// is set) arrives. A rejection, a failure or an error frame of id ends
// the benchmark.
func (c *Core) await(ctx context.Context, typ, id, state string) []byte {
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

// benchSession is the Session every Turn belongs to.
const benchSession = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"

// Turn is one Turn of the Session: prepare (resuming the native Session
// the last done reported, as Core does), start, every delta, done.
func (c *Core) Turn(ctx context.Context) Timing {
	c.n++
	pid, runID := fmt.Sprintf("prepare-%d", c.n), fmt.Sprintf("run-%d", c.n)
	config := map[string]any{"agent_state_key": "agents-api-" + benchSession, "strict_resume": true}
	for k, v := range c.config {
		config[k] = v
	}
	if c.session != "" {
		config["agent_session_id"] = c.session
	}
	prepare, err := json.Marshal(map[string]any{"session_id": benchSession, "configuration": config})
	require.NoError(c.tb, err)
	began := time.Now()
	c.write(ctx, "execution_prepare", pid, string(prepare))
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
	t := Timing{Reused: ready.Payload.Reused}
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
			t.Delta(started)
		case bytes.HasPrefix(b, donePrefix):
			done = b
		case bytes.HasPrefix(b, []byte(`{"type":"error","id":"`+runID+`"`)):
			c.tb.Fatalf("core: %s: %.400s", runID, b)
		}
	}
	t.Wall = time.Since(began)
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

// The Turn both sides run: DeltaCount text deltas, DeltaGap apart (a
// model's token stream, each delta its own SSE event and its own frame),
// after WarmTurns Turns of each side.
const (
	DeltaCount = 16
	DeltaGap   = 2 * time.Millisecond
	WarmTurns  = 3
)

// Model starts the scripted endpoint both sides talk to: every request is
// answered with the benchmark's Turn and marked (MarkRequest).
func Model(tb testing.TB) *modeltest.Server {
	deltas := make([]string, DeltaCount)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("word%02d ", i)
	}
	reply := modeltest.Reply(modeltest.SlowText(DeltaGap, deltas...))
	return modeltest.New(tb, modeltest.WithFallback(func(*modeltest.Request) modeltest.Turn {
		MarkRequest()
		return reply
	}))
}

// Pipe is a direct client's CLI process: plain pipes, one JSON line each
// way, its process group killed when the benchmark ends.
type Pipe struct {
	tb  testing.TB
	in  io.Writer
	out *bufio.Reader
}

// StartPipe starts cmd in its own process group with its stdin and stdout
// piped.
func StartPipe(tb testing.TB, cmd *exec.Cmd) *Pipe {
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
	return &Pipe{tb: tb, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

// Send writes one line.
func (p *Pipe) Send(line string) {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.tb.Fatalf("direct: write: %v", err)
	}
}

// Line reads one line.
func (p *Pipe) Line(ctx context.Context) []byte {
	if ctx.Err() != nil {
		p.tb.Fatalf("direct: %v", ctx.Err())
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		p.tb.Fatalf("direct: read: %v", err)
	}
	return line
}

// Fatalf ends the benchmark with what the direct client saw.
func (p *Pipe) Fatalf(format string, args ...any) {
	p.tb.Helper()
	p.tb.Fatalf(format, args...)
}

package daemon_test

// The Core side and the raw baselines of the daemon benchmarks
// (bench_test.go). Core here is a scripted Core, as in the contract suite:
// it writes Core's frames as JSON text and reads what the daemon sends over
// a real loopback WebSocket, so every nanosecond and byte it does not spend
// is the daemon's (daemon-protocol.txt:194: neither side imports the
// other's implementation).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// benchDelta is the text of every delta the benchmarks stream: a small
// frame, as a model's token stream produces.
const benchDelta = "a few words of output"

// benchSession is one daemon connected to a scripted Core.
type benchSession struct {
	tb      testing.TB
	ws      *websocket.Conn // Core's end
	adapter *script.Adapter
	ctx     context.Context
	stop    func()
}

// close stops the daemon and waits for it; Cleanup calls it too.
func (s *benchSession) close() { s.stop() }

// startBench runs the daemon with the script adapter playing s against a
// scripted Core on loopback and returns once its first heartbeat was read.
// maxActive is the daemon's MaxActive (0: the default, 4); the turn setup
// sets it high enough that the capacity bound never refuses a Turn whose
// Executor is still closing.
func startBench(tb testing.TB, s script.Script, maxActive int) *benchSession {
	tb.Helper()
	accepted := make(chan *websocket.Conn, 4)
	mux := http.NewServeMux()
	mux.HandleFunc(daemon.BootstrapPath, func(w http.ResponseWriter, r *http.Request) {
		// An interval far beyond the benchmark keeps periodic heartbeats out.
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
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)

	adapter := script.New(s)
	reg := harness.NewRegistry()
	require.NoError(tb, reg.Register(adapter))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{
			CoreURL: srv.URL, DeviceID: "bench", Credential: daemon.NewCredential("bench-credential"),
			Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, MaxActive: maxActive,
		})
	}()
	var ws *websocket.Conn
	select {
	case ws = <-accepted:
	case <-time.After(10 * time.Second):
		cancel()
		tb.Fatal("the daemon did not connect")
	}
	stop := sync.OnceFunc(func() {
		// Core keeps reading (and answers the close handshake) while the
		// daemon shuts down, so its close does not wait for a timeout.
		ws.CloseRead(context.Background())
		cancel()
		require.NoError(tb, <-done)
		_ = ws.CloseNow()
		srv.Close()
	})
	tb.Cleanup(stop)
	bs := &benchSession{tb: tb, ws: ws, adapter: adapter, ctx: ctx, stop: stop}
	_, first, err := ws.Read(ctx)
	require.NoError(tb, err)
	require.True(tb, bytes.HasPrefix(first, []byte(`{"type":"heartbeat"`)), "the first frame is the heartbeat: %.80s", first)
	return bs
}

// write sends one of Core's frames.
func (s *benchSession) write(typ, id, payload string) {
	frame := `{"type":"` + typ + `","id":"` + id + `","payload":` + payload + `}`
	if err := s.ws.Write(s.ctx, websocket.MessageText, []byte(frame)); err != nil {
		s.tb.Fatalf("core: write %s: %v", typ, err)
	}
}

// readRaw returns the next frame the daemon sent.
func (s *benchSession) readRaw() []byte {
	_, b, err := s.ws.Read(s.ctx)
	if err != nil {
		s.tb.Fatalf("core: read: %v", err)
	}
	return b
}

// await reads until a frame of type typ for id arrives (for a
// preparation_status, one in state; a rejection or failure of id ends the
// benchmark) and returns it decoded. Other frames (the done of an earlier
// Turn, a heartbeat) are passed over. Core matches frames by their first
// bytes and decodes only the one it awaited: the baseline's Core decodes
// nothing, and what is measured is the daemon.
func (s *benchSession) await(typ, id, state string) wire.Message {
	return s.decode(s.awaitRaw(typ, id, state))
}

// awaitRaw is await without the decoding: a timed section keeps the frame
// and decodes it (strictly, with decode) once the watch is stopped.
func (s *benchSession) awaitRaw(typ, id, state string) []byte {
	prefix := []byte(`{"type":"` + typ + `","id":"` + id + `",`)
	for {
		b := s.readRaw()
		if !bytes.HasPrefix(b, prefix) {
			continue
		}
		if state != "" && !bytes.Contains(b, []byte(`"state":"`+state+`"`)) {
			if bytes.Contains(b, []byte(`"state":"rejected"`)) || bytes.Contains(b, []byte(`"state":"failed"`)) {
				s.tb.Fatalf("core: %s: %.300s", id, b)
			}
			continue
		}
		return b
	}
}

// decode is Core's strict reading of a frame the daemon sent.
func (s *benchSession) decode(b []byte) wire.Message {
	m, err := wire.Decode(b, wire.RuntimeToCore)
	if err != nil {
		s.tb.Fatalf("core: the daemon sent an invalid frame: %v: %.200s", err, b)
	}
	return m
}

// grantOf reads the handle and the Executor ID of a ready status: all
// Core needs of it to send execution_start. The frame is decoded strictly
// (decode) outside the timed section.
func (s *benchSession) grantOf(b []byte) wire.PreparationStatus {
	var f struct {
		Payload struct {
			Handle     string `json:"handle"`
			ExecutorID string `json:"executor_id"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		s.tb.Fatalf("core: ready: %v: %.200s", err, b)
	}
	return wire.PreparationStatus{State: wire.PreparationReady, Handle: f.Payload.Handle, ExecutorID: f.Payload.ExecutorID}
}

// prepare admits a handle for request id and returns the ready status.
func (s *benchSession) prepare(id string) wire.PreparationStatus {
	s.write("execution_prepare", id, prepare)
	st := s.await("preparation_status", id, wire.PreparationReady).Payload.(wire.PreparationStatus)
	require.Equal(s.tb, wire.PreparationReady, st.State)
	return st
}

// start starts the Run runID on the ready handle of request id.
func (s *benchSession) start(id, runID string, ready wire.PreparationStatus) {
	s.write("execution_start", id, fmt.Sprintf(`{"executor_id":%q,"handle":%q,"run_id":%q,"input":[{"content":[{"type":"input_text","text":"hi"}]}]}`,
		ready.ExecutorID, ready.Handle, runID))
}

// rawPair dials a loopback WebSocket with coder/websocket and returns
// (server side, client side): the baseline's Core and Runtime.
func rawPair(tb testing.TB) (*websocket.Conn, *websocket.Conn) {
	tb.Helper()
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c
	}))
	tb.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
	require.NoError(tb, err)
	s := <-accepted
	tb.Cleanup(func() {
		_ = c.CloseNow()
		_ = s.CloseNow()
	})
	return s, c
}

// span is the wall time and the process's CPU time of a measured section.
type span struct {
	wall time.Duration
	cpu  int64
}

func (s *span) add(o span) { s.wall += o.wall; s.cpu += o.cpu }

type stopwatch struct {
	t0 time.Time
	c0 int64
}

func startWatch() stopwatch { return stopwatch{t0: time.Now(), c0: cpuClock()} }

func (w stopwatch) stop() span { return span{wall: time.Since(w.t0), cpu: cpuClock() - w.c0} }

// rawOneWay is the delta baseline: the client writes n copies of frame,
// the server reads them; nothing is encoded, decoded or routed. It
// measures from the first write to the last read.
func rawOneWay(tb testing.TB, s, c *websocket.Conn, frame []byte, n int) span {
	ctx := context.Background()
	errc := make(chan error, 1)
	w := startWatch()
	go func() {
		for range n {
			if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range n {
		if _, _, err := s.Read(ctx); err != nil {
			tb.Fatalf("raw read: %v", err)
		}
	}
	elapsed := w.stop()
	require.NoError(tb, <-errc)
	return elapsed
}

// rawEcho answers every frame the client side reads with reply, until the
// connection closes.
func rawEcho(c *websocket.Conn, reply []byte) {
	ctx := context.Background()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		if err := c.Write(ctx, websocket.MessageText, reply); err != nil {
			return
		}
	}
}

// rawRoundTrips is the turn setup baseline: n times, two round trips of
// Core's request frame and a status-sized answer.
func rawRoundTrips(tb testing.TB, s *websocket.Conn, request []byte, n int) span {
	ctx := context.Background()
	w := startWatch()
	for range 2 * n {
		if err := s.Write(ctx, websocket.MessageText, request); err != nil {
			tb.Fatalf("raw write: %v", err)
		}
		if _, _, err := s.Read(ctx); err != nil {
			tb.Fatalf("raw read: %v", err)
		}
	}
	return w.stop()
}

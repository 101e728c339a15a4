package peer_test

// Benchmarks of the driver against raw coder/websocket on loopback, in the
// same run (see BENCHMARKS.md):
//
//	go test -run '^$' -bench . -benchmem -count 5 ./peer/
//
// Every op is one delta frame from the Runtime to Core.

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/transcript"
	"github.com/agentwire/agentwire/wire"
)

// rawPair dials a loopback WebSocket and returns (server side, client side).
var rawPair = peer.RawWebSocketPair

func deltaFrame(tb testing.TB, seq uint64) []byte {
	tb.Helper()
	f, err := wire.Encode(runID, wire.Delta{Delta: "a few words of output", Sequence: seq}, "")
	require.NoError(tb, err)
	return f
}

// BenchmarkRawWebSocket: the baseline. One goroutine writes the bytes of a
// delta frame, the other reads them; nothing is decoded.
func BenchmarkRawWebSocket(b *testing.B) {
	s, c := rawPair(b)
	frame := deltaFrame(b, 1)
	ctx := context.Background()
	done := make(chan error, 1)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	go func() {
		for i := 0; i < b.N; i++ {
			if _, _, err := c.Read(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < b.N; i++ {
		if err := s.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// counter is a Core app that counts the deltas its Run accepted; the
// scenario Recorder does the rest without allocating.
type counter struct {
	transcript.Recorder
	deltas atomic.Int64
	want   int64
	done   chan struct{}
}

func (c *counter) Stepped(ev *peer.Event, s fsm.Step) {
	c.Recorder.Stepped(ev, s)
	if ev.Msg != nil && ev.Msg.Type == "delta" && s.Disposition() != fsm.Rejected {
		if c.deltas.Add(1) == c.want {
			close(c.done)
		}
	}
}

// BenchmarkDriverWebSocket: the full path. The Runtime's driver checks,
// encodes, writes and fires each delta; Core's driver reads, decodes,
// routes, steps and performs record_output. The Runtime queues its sends
// from its own loop in batches, as a Harness adapter's event pump does.
func BenchmarkDriverWebSocket(b *testing.B) {
	ts := tables(b)
	s, c := rawPair(b)
	coreApp := &counter{done: make(chan struct{})}
	rtApp := transcript.Recorder{}
	mk := func(role fsm.Role, a peer.App) *peer.Driver {
		d, err := peer.New(peer.Config{Role: role, Tables: ts, Router: peer.MustCatalogRouter(ts), App: a, Logger: quietLogger()})
		require.NoError(b, err)
		return d
	}
	core := peer.NewConn(mk(fsm.RoleCore, coreApp), peer.WebSocket(s), peer.ConnConfig{})
	runtime := peer.NewConn(mk(fsm.RoleRuntime, rtApp), peer.WebSocket(c), peer.ConnConfig{})
	coreDone, rtDone := make(chan error, 1), make(chan error, 1)
	go func() { coreDone <- core.Run(context.Background()) }()
	go func() { rtDone <- runtime.Run(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(b, core.Send(ctx, peer.Outbound{ID: prepID, Payload: prepare(b)}))
	waitStateTB(ctx, b, runtime, "preparation", prepID, "requested")
	for rev, st := range []string{"preparing", "ready"} {
		require.NoError(b, runtime.Send(ctx, peer.Outbound{ID: prepID, Payload: wire.PreparationStatus{
			Revision: uint64(rev + 1), State: st, Handle: "handle-1", ExecutorID: "executor-1", ExpiresAt: 1}}))
	}
	waitStateTB(ctx, b, core, "preparation", prepID, "ready")
	require.NoError(b, core.Send(ctx, peer.Outbound{ID: prepID, Payload: start()}))
	waitStateTB(ctx, b, runtime, "run", runID, "requested")

	coreApp.want = int64(b.N)
	payload := wire.Delta{Delta: "a few words of output"}
	b.ReportAllocs()
	b.SetBytes(int64(len(deltaFrame(b, 1))))
	b.ResetTimer()
	const batch = 64
	for sent := 0; sent < b.N; {
		n := min(batch, b.N-sent)
		first := sent
		require.NoError(b, runtime.Do(ctx, func(d *peer.Driver) {
			for i := range n {
				p := payload
				p.Sequence = uint64(first + i + 1)
				d.Send(peer.Outbound{ID: runID, Payload: p}, nil)
			}
		}))
		sent += n
	}
	select {
	case <-coreApp.done:
	case <-ctx.Done():
		b.Fatalf("Core saw %d of %d deltas", coreApp.deltas.Load(), b.N)
	}
	b.StopTimer()
	require.NoError(b, core.Close())
	<-coreDone
	<-rtDone
}

func waitStateTB(ctx context.Context, tb testing.TB, c *peer.Conn, machine, id, want string) {
	tb.Helper()
	for {
		var got string
		require.NoError(tb, c.Do(ctx, func(d *peer.Driver) { got = state(tb, d, machine, id) }))
		if got == want {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("%s/%s: state %s, want %s", machine, id, got, want)
		case <-time.After(time.Millisecond):
		}
	}
}

// streamingCore returns a Core driver whose run-1 is streaming, with the
// scenario Recorder as its app (it keeps its records without allocating per
// frame), so that what is measured is the driver.
func streamingCore(tb testing.TB) *peer.Driver {
	tb.Helper()
	ts := tables(tb)
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: peer.MustCatalogRouter(ts), App: transcript.Recorder{},
		Logger: quietLogger()})
	require.NoError(tb, err)
	own := func(o peer.Outbound) {
		d.Send(o, func(err error) { require.NoError(tb, err) })
		w, ok := d.NextWrite()
		require.True(tb, ok)
		d.Written(w, nil)
	}
	deliver := func(id string, p wire.Payload) {
		f, err := wire.Encode(id, p, "")
		require.NoError(tb, err)
		require.NoError(tb, d.Deliver(f))
	}
	own(peer.Outbound{ID: prepID, Payload: prepare(tb)})
	deliver(prepID, wire.PreparationStatus{Revision: 1, State: "preparing", Handle: "handle-1", ExecutorID: "executor-1"})
	deliver(prepID, wire.PreparationStatus{Revision: 2, State: "ready", Handle: "handle-1", ExecutorID: "executor-1", ExpiresAt: 1})
	own(peer.Outbound{ID: prepID, Payload: start()})
	deliver(runID, wire.Delta{Delta: "x", Sequence: 1})
	require.Equal(tb, "streaming", state(tb, d, "run", runID))
	return d
}

// BenchmarkDeliverMessage: route, step and effects of one decoded delta.
func BenchmarkDeliverMessage(b *testing.B) {
	d := streamingCore(b)
	msg, err := wire.Decode(deltaFrame(b, 2), wire.RuntimeToCore)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.DeliverMessage(&msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeliver: the same with the JSON decode of the frame.
func BenchmarkDeliver(b *testing.B) {
	d := streamingCore(b)
	frame := deltaFrame(b, 2)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := d.Deliver(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDriverStepAllocatesNothing(t *testing.T) {
	d := streamingCore(t)
	msg, err := wire.Decode(deltaFrame(t, 2), wire.RuntimeToCore)
	require.NoError(t, err)
	require.NoError(t, d.DeliverMessage(&msg))
	allocs := testing.AllocsPerRun(200, func() {
		if err := d.DeliverMessage(&msg); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs, "routing and stepping a decoded frame allocates nothing")
}

package server_test

// Workspace transfers end to end through Core and a real Runtime (issue 11):
//
//	go test -run '^$' -bench 'WorkspaceTransfer' -benchmem -count 3 ./core/server/
//
// write-50MiB: one 50 MiB body through Core's internal client
// (Gateway.WriteWorkspace; the public API bounds bodies at 5 MiB): durable
// reservation, begin, 800 acknowledged 64 KiB chunks, the commit attempt
// recorded, commit, completed, the reservation released; the Runtime daemon
// runs in this process with its real workspace installer.
// read-1MiB: one 1 MiB file read through Gateway.ReadWorkspace: the Session's
// reservation, a read-only execution_prepare, one workspace_read, the release
// and its confirmed close. raw-50MiB and raw-1MiB are the baselines in the
// same run: a bare coder/websocket connection carrying the same bytes as
// JSON frames of 64 KiB, stop and wait, answered by a reader that decodes
// nothing. AGENTWIRE_BENCH_DIR puts the workspace on another file system (a
// tmpfs takes the disk's fsync out of the figure).
//
// paired-write-50MiB and paired-read-1MiB (issue 25) run the same op and
// its raw baseline alternately on every iteration, so that on a shared
// machine both see the same load, and report core-MB/s, raw-MB/s,
// ratio-%, the process's CPU per op of each, allocs/chunk and (writes)
// the peak heap; ns/op is not meaningful there and is reported as 0.

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

func benchPayload(n int) []byte {
	body := make([]byte, n)
	for i := range body {
		body[i] = byte(i * 7)
	}
	return body
}

func BenchmarkWorkspaceTransfer(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"50MiB", wire.MaxTransferBytes}, {"1MiB", wire.MaxReadBytes}} {
		b.Run("raw-"+size.name, func(b *testing.B) { benchRaw(b, size.n) })
	}
	b.Run("write-50MiB", func(b *testing.B) { benchThroughCore(b, true) })
	b.Run("read-1MiB", func(b *testing.B) { benchThroughCore(b, false) })
	b.Run("paired-write-50MiB", func(b *testing.B) { benchPaired(b, true) })
	b.Run("paired-read-1MiB", func(b *testing.B) { benchPaired(b, false) })
}

// benchRaw: Core's side writes the body as workspace_write chunk frames
// (base64 in JSON, as on the wire) and reads one fixed acknowledgement
// after each.
func benchRaw(b *testing.B, n int) {
	op, stop := rawSetup(b, n)
	defer stop()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op()
	}
	b.StopTimer()
}

// rawSetup connects the bare baseline and returns one op (the body's
// frames, stop and wait) and its teardown.
func rawSetup(b *testing.B, n int) (op func(), stop func()) {
	body := benchPayload(n)
	var frames [][]byte
	for off := 0; off < n; off += wire.ChunkBytes {
		f, err := wire.Encode("00000000-0000-4000-8000-000000000001", wire.WorkspaceWrite{Step: wire.StepChunk, Offset: int64(off), Data: body[off:min(off+wire.ChunkBytes, n)]}, "")
		require.NoError(b, err)
		frames = append(frames, f)
	}
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err == nil {
			accepted <- c
		}
	}))
	ctx := context.Background()
	rt, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(b, err)
	core := <-accepted
	core.SetReadLimit(wire.MaxFrameBytes)
	rt.SetReadLimit(wire.MaxFrameBytes)
	ack := []byte(`{"type":"workspace_write_result","id":"00000000-0000-4000-8000-000000000001","payload":{"outcome":"received","offset":65536}}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, _, err := rt.Read(ctx); err != nil {
				return
			}
			if err := rt.Write(ctx, websocket.MessageText, ack); err != nil {
				return
			}
		}
	}()
	op = func() {
		for _, f := range frames {
			if err := core.Write(ctx, websocket.MessageText, f); err != nil {
				b.Fatal(err)
			}
			if _, _, err := core.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	return op, func() {
		_ = core.CloseNow()
		_ = rt.CloseNow()
		<-done
		srv.Close()
	}
}

// benchEnvironment is the registered Environment the benchmark's Runtime
// serves.
const benchEnvironment = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"

// benchThroughCore runs a real Core (memory store) and the real Runtime
// daemon in this process, and writes 50 MiB or reads 1 MiB per op.
func benchThroughCore(b *testing.B, write bool) {
	op, n, stop := coreSetup(b, write)
	defer stop()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op()
	}
	b.StopTimer()
}

// coreSetup starts the Core and the Runtime and returns one op (the write
// or the read), its size and the teardown.
func coreSetup(b *testing.B, write bool) (op func(), n int, stop func()) {
	c := newBenchCore(b, memory.New(), 1)
	dir := b.TempDir()
	var cleanup []func()
	if parent := os.Getenv("AGENTWIRE_BENCH_DIR"); parent != "" {
		var err error
		dir, err = os.MkdirTemp(parent, "agentwire-bench-")
		require.NoError(b, err)
		cleanup = append(cleanup, func() { os.RemoveAll(dir) })
	}
	body := benchPayload(wire.MaxTransferBytes)
	if !write {
		body = body[:wire.MaxReadBytes]
		require.NoError(b, os.WriteFile(filepath.Join(dir, "read.bin"), body, 0o600))
	}
	bindings := daemon.NewBindings()
	require.NoError(b, bindings.Add(benchEnvironment, dir))
	cleanup = append(cleanup, func() { bindings.Close() })
	reg := harness.NewRegistry()
	require.NoError(b, reg.Register(script.New(script.Script{})))
	_, secret, err := c.is.Issue(context.Background(), store.KindDevice, "dev-bench", "bench")
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = daemon.Run(ctx, daemon.Config{CoreURL: c.http.URL, DeviceID: "dev-bench", Credential: daemon.NewCredential(secret.Reveal()),
			Registry: reg, Environments: bindings, Logger: slog.New(slog.NewTextHandler(benchLog, &slog.HandlerOptions{Level: slog.LevelWarn})),
			MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	}()
	cleanup = append(cleanup, func() { cancel(); <-stopped })
	stop = func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	for c.st.declarations.Load() == 0 {
		time.Sleep(time.Millisecond) // the declaration, as newBenchCore's runtime waits for it
	}
	now := time.Now()
	require.NoError(b, c.st.CreateEnvironment(ctx, store.Environment{ID: benchEnvironment, Project: "bench", Type: "self_hosted",
		Binding: json.RawMessage(`{"id":"` + benchEnvironment + `"}`), DeviceID: "dev-bench", CreatedAt: now}))
	require.NoError(b, c.st.CreateSession(ctx, store.Session{ID: "ses-bench", Project: "bench", AgentKind: script.Kind, EnvironmentID: benchEnvironment, CreatedAt: now}))
	gw := c.srv.Gateway()
	op = func() {
		if write {
			res, err := gw.WriteWorkspace(ctx, "ses-bench", "bench/body.bin", body, gateway.WriteOptions{})
			if err != nil || res.Outcome != "completed" {
				b.Fatalf("write: %+v %v", res, err)
			}
			return
		}
		d, err := gw.ReadWorkspace(ctx, "ses-bench", gateway.ReadQuery{Path: "read.bin", MaxBytes: wire.MaxReadBytes})
		if err != nil || !bytes.Equal(d.Data, body) {
			b.Fatalf("read: %d bytes, %v", len(d.Data), err)
		}
	}
	return op, len(body), stop
}

// benchPaired alternates the through-Core op with the raw baseline of the
// same size on every iteration (issue 25), so that both see the same load
// on a shared machine, and reports each one's MB/s, the ratio, the
// through-Core op's allocations per 64 KiB chunk (its size over
// ChunkBytes; for a read, per 64 KiB of data) and, for writes, the peak
// heap in use while it ran (sampled every millisecond).
func benchPaired(b *testing.B, write bool) {
	op, n, stop := coreSetup(b, write)
	defer stop()
	raw, rawStop := rawSetup(b, n)
	defer rawStop()
	op() // warm: the first write or read pays for the connection's setup
	raw()
	var coreT, rawT time.Duration
	var coreCPU, rawCPU int64
	var allocs uint64
	// The sampler keeps the largest heap (live and not yet collected
	// objects) it sees while a through-Core op runs; each op starts after
	// a collection, so the figure is the op's own footprint on top of what
	// the benchmark keeps live (the body, the baseline's frames).
	var peak atomic.Uint64
	var sampling atomic.Bool
	quit, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			if sampling.Load() {
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > peak.Load() {
					peak.Store(v)
				}
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	live := ms.HeapAlloc
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0, t0 := processCPU(), time.Now()
		raw()
		t1, c1 := time.Now(), processCPU()
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		sampling.Store(true)
		b.StartTimer()
		c2, t2 := processCPU(), time.Now()
		op()
		t3, c3 := time.Now(), processCPU()
		b.StopTimer()
		sampling.Store(false)
		runtime.ReadMemStats(&ms)
		allocs += ms.Mallocs - before
		b.StartTimer()
		rawT += t1.Sub(t0)
		coreT += t3.Sub(t2)
		rawCPU += c1 - c0
		coreCPU += c3 - c2
	}
	b.StopTimer()
	close(quit)
	<-sampled
	mb := func(d time.Duration) float64 { return float64(n) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(mb(coreT), "core-MB/s")
	b.ReportMetric(mb(rawT), "raw-MB/s")
	b.ReportMetric(100*rawT.Seconds()/coreT.Seconds(), "ratio-%")
	// CPU per op of the process (Core and the in-process Runtime), which
	// the machine's load moves far less than wall time.
	b.ReportMetric(float64(coreCPU)/float64(b.N)/1e6, "core-cpu-ms/op")
	b.ReportMetric(float64(rawCPU)/float64(b.N)/1e6, "raw-cpu-ms/op")
	b.ReportMetric(float64(allocs)/float64(b.N)/float64((n+wire.ChunkBytes-1)/wire.ChunkBytes), "allocs/chunk")
	if write {
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(live)/(1<<20), "live-before-MiB")
	}
}

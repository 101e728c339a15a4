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

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
}

// benchRaw: Core's side writes the body as workspace_write chunk frames
// (base64 in JSON, as on the wire) and reads one fixed acknowledgement
// after each.
func benchRaw(b *testing.B, n int) {
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
	defer srv.Close()
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
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, f := range frames {
			if err := core.Write(ctx, websocket.MessageText, f); err != nil {
				b.Fatal(err)
			}
			if _, _, err := core.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	_ = core.CloseNow()
	_ = rt.CloseNow()
	<-done
}

// benchEnvironment is the registered Environment the benchmark's Runtime
// serves.
const benchEnvironment = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"

// benchThroughCore runs a real Core (memory store) and the real Runtime
// daemon in this process, and writes 50 MiB or reads 1 MiB per op.
func benchThroughCore(b *testing.B, write bool) {
	c := newBenchCore(b, memory.New(), 1)
	dir := b.TempDir()
	if parent := os.Getenv("AGENTWIRE_BENCH_DIR"); parent != "" {
		var err error
		dir, err = os.MkdirTemp(parent, "agentwire-bench-")
		require.NoError(b, err)
		defer os.RemoveAll(dir)
	}
	body := benchPayload(wire.MaxTransferBytes)
	if !write {
		body = body[:wire.MaxReadBytes]
		require.NoError(b, os.WriteFile(filepath.Join(dir, "read.bin"), body, 0o600))
	}
	bindings := daemon.NewBindings()
	require.NoError(b, bindings.Add(benchEnvironment, dir))
	defer bindings.Close()
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
	defer func() { cancel(); <-stopped }()
	for c.st.declarations.Load() == 0 {
		time.Sleep(time.Millisecond) // the declaration, as newBenchCore's runtime waits for it
	}
	now := time.Now()
	require.NoError(b, c.st.CreateEnvironment(ctx, store.Environment{ID: benchEnvironment, Project: "bench", Type: "self_hosted",
		Binding: json.RawMessage(`{"id":"` + benchEnvironment + `"}`), DeviceID: "dev-bench", CreatedAt: now}))
	require.NoError(b, c.st.CreateSession(ctx, store.Session{ID: "ses-bench", Project: "bench", AgentKind: script.Kind, EnvironmentID: benchEnvironment, CreatedAt: now}))
	gw := c.srv.Gateway()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if write {
			res, err := gw.WriteWorkspace(ctx, "ses-bench", "bench/body.bin", body, gateway.WriteOptions{})
			if err != nil || res.Outcome != "completed" {
				b.Fatalf("write: %+v %v", res, err)
			}
			continue
		}
		d, err := gw.ReadWorkspace(ctx, "ses-bench", gateway.ReadQuery{Path: "read.bin", MaxBytes: wire.MaxReadBytes})
		if err != nil || !bytes.Equal(d.Data, body) {
			b.Fatalf("read: %d bytes, %v", len(d.Data), err)
		}
	}
	b.StopTimer()
}

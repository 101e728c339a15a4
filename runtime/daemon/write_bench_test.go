package daemon_test

// The workspace write benchmark of issue 9 (see BENCHMARKS.md):
//
//	go test -run '^$' -bench 'WorkspaceWrite' -benchmem -count 5 ./runtime/daemon/
//
// One op is one 50 MiB body sent as 800 acknowledged 64 KiB frames, stop
// and wait, over a real loopback WebSocket. Both benchmarks share Core's
// side (writeBody): the same frames, written the same way, each followed
// by reading one acknowledgement. Only the other end differs: a raw
// coder/websocket reader that answers every frame with a fixed
// acknowledgement, or the real daemon, which decodes and validates each
// frame, steps the workspace_write machine, stages and hashes the bytes,
// and at commit checks the digest and installs the file.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/wire"
)

const benchBodyBytes = wire.MaxTransferBytes // 50 MiB

// benchEnv is the Environment the benchmark's daemon binds and writes into.
const benchEnv = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"

// benchBody is the body and Core's encoded frame payloads: begin, the
// chunks, commit. Payloads are encoded once; each op wraps them in an
// envelope with its own mutation ID.
type benchBody struct {
	typ           string // the frames' message type
	begin, commit []byte
	chunks        [][]byte
}

func newBenchBody(tb testing.TB) *benchBody {
	body := make([]byte, benchBodyBytes)
	for i := range body {
		body[i] = byte(i * 7)
	}
	sum := sha256.Sum256(body)
	size := int64(len(body))
	enc := func(p wire.WorkspaceWrite) []byte {
		b, err := json.Marshal(p)
		require.NoError(tb, err)
		return b
	}
	bb := &benchBody{typ: wire.TypeWorkspaceWrite,
		begin: enc(wire.WorkspaceWrite{Step: wire.StepBegin, EnvironmentID: benchEnv,
			SessionID: "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b", Path: "bench/body.bin", SizeBytes: &size, SHA256: hex.EncodeToString(sum[:])}),
		commit: enc(wire.WorkspaceWrite{Step: wire.StepCommit}),
	}
	for off := 0; off < len(body); off += wire.ChunkBytes {
		bb.chunks = append(bb.chunks, enc(wire.WorkspaceWrite{Step: wire.StepChunk, Offset: int64(off), Data: body[off : off+wire.ChunkBytes]}))
	}
	return bb
}

// writeBody is Core's side of one write: each frame is written and its one
// acknowledgement read before the next (stop and wait). check, when set,
// sees every acknowledgement.
func writeBody(ctx context.Context, c *websocket.Conn, id string, bb *benchBody, buf *bytes.Buffer, check func(step string, ack []byte) error) error {
	one := func(step string, payload []byte) error {
		buf.Reset()
		buf.WriteString(`{"type":"`)
		buf.WriteString(bb.typ)
		buf.WriteString(`","id":"`)
		buf.WriteString(id)
		buf.WriteString(`","payload":`)
		buf.Write(payload)
		buf.WriteByte('}')
		if err := c.Write(ctx, websocket.MessageText, buf.Bytes()); err != nil {
			return err
		}
		for {
			_, ack, err := c.Read(ctx)
			if err != nil {
				return err
			}
			if bytes.Contains(ack, []byte(`"type":"heartbeat"`)) {
				continue
			}
			if check != nil {
				return check(step, ack)
			}
			return nil
		}
	}
	if err := one("begin", bb.begin); err != nil {
		return err
	}
	for _, ch := range bb.chunks {
		if err := one("chunk", ch); err != nil {
			return err
		}
	}
	return one("commit", bb.commit)
}

func mutationID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012x", n+1) }

// BenchmarkWorkspaceWriteRaw: the baseline. The reader answers each frame
// with a fixed acknowledgement of the same shape as the daemon's, without
// decoding anything.
func BenchmarkWorkspaceWriteRaw(b *testing.B) {
	bb := newBenchBody(b)
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c
	}))
	defer srv.Close()
	ctx := context.Background()
	rt, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
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
	var buf bytes.Buffer
	b.SetBytes(benchBodyBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := writeBody(ctx, core, mutationID(i), bb, &buf, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = core.CloseNow()
	_ = rt.CloseNow()
	<-done
}

// BenchmarkWorkspaceWriteDaemon: the daemon's real path, from the
// WebSocket through the driver and the workspace_write machine to the
// installer (temporary file, fsync, rename, directory fsync) in a temporary
// directory, against the same Core side. Every acknowledgement is checked
// (received for each chunk, completed at commit).
//
// AGENTWIRE_BENCH_DIR puts the workspace under another directory: a tmpfs
// (/dev/shm) takes the disk's fsync of 50 MiB out of the figure, leaving
// the protocol path.
func BenchmarkWorkspaceWriteDaemon(b *testing.B) {
	bb := newBenchBody(b)
	dir := b.TempDir()
	if parent := os.Getenv("AGENTWIRE_BENCH_DIR"); parent != "" {
		var err error
		dir, err = os.MkdirTemp(parent, "agentwire-bench-")
		require.NoError(b, err)
		defer os.RemoveAll(dir)
	}
	envs := daemon.NewBindings()
	require.NoError(b, envs.Add(benchEnv, dir))
	defer envs.Close()

	accepted := make(chan *websocket.Conn, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(daemon.BootstrapPath, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"ws_url": "ws://" + r.Host + "/api/v1/agent-daemon/ws", "heartbeat_seconds": 3600})
	})
	mux.HandleFunc("/api/v1/agent-daemon/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = daemon.Run(ctx, daemon.Config{
			CoreURL: srv.URL, DeviceID: "bench", Credential: daemon.NewCredential("bench-credential"),
			Registry: registry(b, script.Script{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Environments: envs,
		})
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	var core *websocket.Conn
	select {
	case core = <-accepted:
	case <-time.After(10 * time.Second):
		b.Fatal("the daemon did not connect")
	}
	core.SetReadLimit(wire.MaxFrameBytes)
	defer core.CloseNow()

	want := map[string][]byte{"begin": []byte(`"outcome":"ready"`), "chunk": []byte(`"outcome":"received"`),
		"commit": []byte(fmt.Sprintf(`"outcome":"completed","size_bytes":%d`, benchBodyBytes))}
	check := func(step string, ack []byte) error {
		if !bytes.Contains(ack, want[step]) {
			return fmt.Errorf("%s answered %s", step, ack)
		}
		return nil
	}
	var buf bytes.Buffer
	b.SetBytes(benchBodyBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := writeBody(ctx, core, mutationID(i), bb, &buf, check); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	got, err := os.ReadFile(filepath.Join(dir, "bench", "body.bin"))
	require.NoError(b, err)
	require.Len(b, got, benchBodyBytes)
}

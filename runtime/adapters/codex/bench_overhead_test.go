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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	osexec "os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/internal/turnbench"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

func BenchmarkCodexTurnOverhead(b *testing.B) {
	a, srv := benchAdapter(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	via := turnbench.StartCore(ctx, b, a, map[string]any{"agent_kind": "codex",
		"execution_controls": map[string]any{"web_search": "disabled", "text_verbosity": "medium"}, "observe_tool_observations": true})
	direct := startDirect(ctx, b, a.cfg)
	turnbench.Pairs(b, turnbench.WarmTurns, turnbench.DeltaCount, func() turnbench.Timing { return via.Turn(ctx) }, func() turnbench.Timing { return direct.turn(ctx) })
	require.Empty(b, srv.Problems())
}

// benchAdapter is the adapter both benchmarks run, on the pinned CLI and a
// scripted model endpoint; it skips without the CLI.
func benchAdapter(b *testing.B) (*Adapter, *modeltest.Server) {
	bin := install.RequireCodex(b)
	b.Setenv(keyEnv, testKey)
	srv := turnbench.Model(b)
	a, err := New(Config{Binary: bin, Model: "gpt-5.5", BaseURL: srv.OpenAIBaseURL(), APIKeyEnv: keyEnv,
		StateDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(b, err)
	require.True(b, a.Declaration().Available)
	return a, srv
}

// directClient is the baseline: one app-server with one thread, driven
// over plain pipes with the adapter's own command line and environment.
type directClient struct {
	*turnbench.Pipe
	thread string
	nextID int
}

func startDirect(ctx context.Context, tb testing.TB, cfg Config) *directClient {
	home := tb.TempDir()
	cmd := osexec.Command(cfg.Binary, cfg.args()...)
	cmd.Dir, cmd.Env = tb.TempDir(), cfg.env(home)
	c := &directClient{Pipe: turnbench.StartPipe(tb, cmd)}
	c.call(ctx, "initialize", `{"clientInfo":{"name":"bench","version":"0"},"capabilities":{"experimentalApi":true}}`)
	c.Send(`{"jsonrpc":"2.0","method":"initialized"}`)
	var res struct {
		Result struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		} `json:"result"`
	}
	params := fmt.Sprintf(`{"cwd":%q,"approvalPolicy":"on-request","sandbox":"workspace-write","config":{"web_search":"disabled","features.goals":false,"model_verbosity":"medium","sandbox_workspace_write.exclude_slash_tmp":true,"sandbox_workspace_write.exclude_tmpdir_env_var":true}}`, cmd.Dir)
	require.NoError(tb, json.Unmarshal(c.call(ctx, "thread/start", params), &res))
	require.NotEmpty(tb, res.Result.Thread.ID, "thread/start answered no thread")
	c.thread = res.Result.Thread.ID
	return c
}

// call sends a request and returns its response line; notifications
// before it are passed over.
func (c *directClient) call(ctx context.Context, method, params string) []byte {
	c.nextID++
	id := fmt.Sprintf(`"id":%d`, c.nextID)
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0",%s,"method":%q,"params":%s}`, id, method, params))
	for {
		line := c.Line(ctx)
		if bytes.Contains(line, []byte(id)) && !bytes.Contains(line, []byte(`"method"`)) {
			if bytes.Contains(line, []byte(`"error":{`)) {
				c.Fatalf("direct: %s: %s", method, line)
			}
			return line
		}
	}
}

// turn is one turn/start on the thread, read until turn/completed.
func (c *directClient) turn(ctx context.Context) turnbench.Timing {
	c.nextID++
	began := time.Now()
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"turn/start","params":{"threadId":%q,"input":[{"type":"text","text":"hi","text_elements":[]}]}}`,
		c.nextID, c.thread))
	var t turnbench.Timing
	for {
		line := c.Line(ctx)
		switch {
		case bytes.Contains(line, []byte(`"method":"item/agentMessage/delta"`)):
			t.Delta(began)
		case bytes.Contains(line, []byte(`"method":"turn/completed"`)):
			t.Wall = time.Since(began)
			if !bytes.Contains(line, []byte(`"status":"completed"`)) {
				c.Fatalf("direct: the turn did not complete: %.400s", line)
			}
			return t
		case bytes.Contains(line, []byte(`"error":{`)) && !bytes.Contains(line, []byte(`"method"`)):
			c.Fatalf("direct: turn/start: %s", line)
		}
	}
}

// BenchmarkCodexTurnThroughCore is the same pairing with a real Core in
// front of the daemon: Core on SQLite (the default store), the Turn
// submitted through the public API and read back from its event stream,
// against the same direct app-server client. It is what a user of Core
// pays for the protocol, the journal and the durable store on a real
// Codex Turn.
//
//	go test -run '^$' -bench CodexTurnThroughCore -benchtime 40x ./runtime/adapters/codex/
func BenchmarkCodexTurnThroughCore(b *testing.B) {
	a, srv := benchAdapter(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	via := turnbench.StartThroughCore(ctx, b, a, "codex")
	direct := startDirect(ctx, b, a.cfg)
	turnbench.Pairs(b, turnbench.WarmTurns, turnbench.DeltaCount, func() turnbench.Timing { return via.Turn(ctx) }, func() turnbench.Timing { return direct.turn(ctx) })
	require.Empty(b, srv.Problems())
}

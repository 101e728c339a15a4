package claude

// What agentwire adds to a real Claude Code Turn, measured as for Codex
// (internal/turnbench): one op is a pair of Turns on the same
// scripted model endpoint, one through the Runtime daemon and this adapter
// (a scripted Core over a loopback WebSocket) and one through a minimal
// direct stream-json client (the adapter's own command line and
// environment, plain pipes, a user message written and its result read).
// The order alternates from pair to pair; both sides run warm (the
// daemon reuses the Session's idle Executor, the direct client keeps its
// one process).
//
//	go test -run '^$' -bench ClaudeTurnOverhead -benchtime 40x ./runtime/adapters/claude/
//
// Without the pinned CLI it skips (install.RequireClaude).

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
)

func BenchmarkClaudeTurnOverhead(b *testing.B) {
	bin := install.RequireClaude(b)
	b.Setenv(keyEnv, testKey)
	srv := turnbench.Model(b)
	a, err := New(Config{Binary: bin, Model: "scripted-model", BaseURL: srv.URL(), APIKeyEnv: keyEnv,
		StateDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(b, err)
	require.True(b, a.Declaration().Available)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	via := turnbench.StartCore(ctx, b, a, map[string]any{"agent_kind": Kind,
		"execution_controls": map[string]any{"web_search": "disabled", "text_verbosity": "medium"}, "observe_tool_observations": true})
	direct := startDirect(ctx, b, a.cfg)
	turnbench.Pairs(b, turnbench.WarmTurns, turnbench.DeltaCount, func() turnbench.Timing { return via.Turn(ctx) }, func() turnbench.Timing { return direct.turn(ctx) })
	require.Empty(b, srv.Problems())
}

// directClient is the baseline: one claude process holding one native
// Session, driven over plain pipes with the adapter's command line and
// environment (web search and fetch off, as Core asks).
type directClient struct {
	*turnbench.Pipe
	n int
}

func startDirect(ctx context.Context, tb testing.TB, cfg Config) *directClient {
	cmd := osexec.Command(cfg.Binary, cfg.args(launch{session: newSessionID(), disallowed: []string{"WebSearch", "WebFetch"}})...)
	cmd.Dir, cmd.Env = tb.TempDir(), cfg.env(tb.TempDir())
	c := &directClient{Pipe: turnbench.StartPipe(tb, cmd)}
	c.Send(`{"type":"control_request","request_id":"direct-1","request":{"subtype":"initialize"}}`)
	for {
		line := c.Line(ctx)
		if bytes.HasPrefix(line, []byte(`{"type":"control_response"`)) && bytes.Contains(line, []byte(`"direct-1"`)) {
			return c
		}
	}
}

// turn is one user message, read until its result.
func (c *directClient) turn(ctx context.Context) turnbench.Timing {
	c.n++
	began := time.Now()
	c.Send(fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"parent_tool_use_id":null,"session_id":"","uuid":"direct-%d"}`, c.n))
	var t turnbench.Timing
	for {
		line := c.Line(ctx)
		switch {
		case bytes.HasPrefix(line, []byte(`{"type":"stream_event"`)) && bytes.Contains(line, []byte(`"text_delta"`)):
			t.Delta(began)
		case bytes.Contains(line, []byte(`"type":"result"`)):
			// The result's members come in no fixed order: it is the one
			// line decoded.
			var r struct {
				Type    string `json:"type"`
				IsError bool   `json:"is_error"`
			}
			if json.Unmarshal(line, &r) != nil || r.Type != "result" {
				continue
			}
			t.Wall = time.Since(began)
			if r.IsError {
				c.Fatalf("direct: the turn failed: %.400s", line)
			}
			return t
		}
	}
}

package codex

// End-to-end tests against the REAL Codex CLI (the pinned 0.171.0 that
// `make harnesses` installs) and the scripted model endpoint on 127.0.0.1.
// They are named TestHarness* so that `make check-harnesses` selects them;
// without the CLI they skip (install.RequireCodex), and fail under
// AGENTWIRE_REQUIRE_HARNESSES=1.

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// keyEnv is the variable the tests' provider key lives in.
const keyEnv = "AGENTWIRE_TEST_CODEX_KEY"

// testKey is the dummy key: the endpoint's recorded requests show it
// redacted, and it must appear in no log and no command line.
const testKey = "sk-agentwire-test-not-a-secret"

// cliWait bounds each wait for the real CLI.
const cliWait = 90 * time.Second

// rig is one real-CLI test: the scripted endpoint, an adapter pointed at
// it and the logs the adapter wrote.
type rig struct {
	t    *testing.T
	srv  *modeltest.Server
	a    *Adapter
	logs *syncBuffer
	ws   string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRig(t *testing.T, mut func(*Config), opts ...modeltest.Option) *rig {
	t.Helper()
	bin := install.RequireCodex(t)
	t.Setenv(keyEnv, testKey)
	srv := modeltest.New(t, opts...)
	logs := &syncBuffer{}
	cfg := Config{
		Binary: bin, Model: "gpt-5.5", BaseURL: srv.OpenAIBaseURL(), APIKeyEnv: keyEnv,
		StateDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mut != nil {
		mut(&cfg)
	}
	a, err := New(cfg)
	require.NoError(t, err)
	require.True(t, a.Declaration().Available, logs.String())
	r := &rig{t: t, srv: srv, a: a, logs: logs, ws: t.TempDir()}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), testKey) {
			t.Errorf("the API key reached the adapter's log")
		}
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	})
	return r
}

// executor prepares an Executor for cfg (from hcfg) and closes it at the
// test's end.
func (r *rig) executor(cfg harness.ExecutorConfig) *executor {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	exe, err := r.a.NewExecutor(ctx, cfg)
	require.NoError(r.t, err)
	e := exe.(*executor)
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cliWait)
		defer cancel()
		require.NoError(r.t, e.Close(ctx))
		require.False(r.t, e.proc.Alive())
	})
	return e
}

// notices collects a Turn's InputNotices.
type notices struct {
	mu   sync.Mutex
	list []harness.InputNotice
	wake chan struct{}
}

func newNotices() *notices { return &notices{wake: make(chan struct{}, 1)} }

func (n *notices) notify(x harness.InputNotice) {
	n.mu.Lock()
	n.list = append(n.list, x)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notices) await(ctx context.Context, inputID string) (harness.InputNotice, bool) {
	for {
		n.mu.Lock()
		for _, x := range n.list {
			if x.InputID == inputID {
				n.mu.Unlock()
				return x, true
			}
		}
		n.mu.Unlock()
		select {
		case <-n.wake:
		case <-ctx.Done():
			return harness.InputNotice{}, false
		}
	}
}

func text(s ...string) wire.MessageInput {
	var in wire.MessageInput
	for _, x := range s {
		in = append(in, wire.InputMessage{Content: []wire.InputContent{{Type: wire.ContentText, Text: x}}})
	}
	return in
}

// runResult is what a Run returned.
type runResult struct {
	done wire.Done
	err  error
}

// start runs one Turn on its own goroutine.
func start(ctx context.Context, e *executor, runID string, in wire.MessageInput, rec *recorder, n *notices) <-chan runResult {
	out := make(chan runResult, 1)
	turn := harness.Turn{RunID: runID, Input: in, Declaration: e.a.Declaration()}
	if n != nil {
		turn.Notify = n.notify
	}
	go func() {
		d, err := e.Run(ctx, turn, rec.emit)
		out <- runResult{d, err}
	}()
	return out
}

func wait(t *testing.T, ch <-chan runResult) runResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(cliWait):
		t.Fatal("the Run did not end within the bound for the real CLI")
		return runResult{}
	}
}

func contentOf(rec *recorder) string {
	var b strings.Builder
	for _, d := range of[wire.Delta](rec) {
		b.WriteString(d.Delta)
	}
	return b.String()
}

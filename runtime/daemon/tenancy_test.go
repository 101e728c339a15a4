package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

const (
	envX = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"
	envY = "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e"
)

// recorder wraps the script adapter and records what each native
// preparation was given and how many Executor closes were asked for.
type recorder struct {
	*script.Adapter
	mu     sync.Mutex
	dirs   []string // ExecutorConfig.WorkspaceDir of each preparation, in order
	closed int
}

func (a *recorder) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	exe, err := a.Adapter.NewExecutor(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.dirs = append(a.dirs, cfg.WorkspaceDir)
	a.mu.Unlock()
	return &recorded{Executor: exe, a: a}, nil
}

func (a *recorder) snapshot() ([]string, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.dirs...), a.closed
}

type recorded struct {
	harness.Executor
	a *recorder
}

func (e *recorded) Close(ctx context.Context) error {
	e.a.mu.Lock()
	e.a.closed++
	e.a.mu.Unlock()
	return e.Executor.Close(ctx)
}

func startWith(t *testing.T, c *core, a harness.Adapter, envs *daemon.Bindings, l io.Writer) *running {
	reg := harness.NewRegistry()
	require.NoError(t, reg.Register(a))
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- daemon.Run(ctx, daemon.Config{
			CoreURL: c.srv.URL, DeviceID: "dev-1", Credential: daemon.NewCredential(secret), Registry: reg,
			Logger:     slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Environments: envs,
		})
	}()
	return r
}

// prepareIn is an execution_prepare of session bound to env ("" for an
// Environment of type none).
func prepareIn(session, env string) string {
	binding := `"disable_execution_environment":true,`
	if env != "" {
		binding = `"local_environment":{"id":"` + env + `"},`
	}
	return `{"session_id":"` + session + `","configuration":{"agent_kind":"script",` + binding +
		`"execution_controls":{"web_search":"disabled","text_verbosity":"medium"},"agent_state_key":"agents-api-` + session +
		`","strict_resume":true,"observe_tool_observations":true}}`
}

// nonHeartbeat reads the Runtime's next frame that is not a heartbeat.
func nonHeartbeat(t *testing.T, ws *websocket.Conn) *wire.Message {
	t.Helper()
	for {
		if m := read(t, ws); m.Type != wire.TypeHeartbeat {
			return m
		}
	}
}

// runTurn prepares id with payload, starts run and reads its frames to
// done; it returns the ready status.
func runTurn(t *testing.T, ws *websocket.Conn, id, payload, run string) wire.PreparationStatus {
	t.Helper()
	write(t, ws, "execution_prepare", id, payload)
	var ready wire.PreparationStatus
	for ready.State != wire.PreparationReady {
		m := nonHeartbeat(t, ws)
		require.Equal(t, wire.TypePreparationStatus, m.Type, "%+v", m)
		ready = m.Payload.(wire.PreparationStatus)
		require.NotEqual(t, wire.PreparationRejected, ready.State, "%+v", ready)
	}
	write(t, ws, "execution_start", id, `{"executor_id":"`+ready.ExecutorID+`","handle":"`+ready.Handle+`","run_id":"`+run+
		`","input":[{"content":[{"type":"input_text","text":"hi"}]}]}`)
	for {
		if m := nonHeartbeat(t, ws); m.Type == wire.TypeDone {
			return ready
		}
	}
}

// TestExecutorRunsInItsEnvironment: each native preparation gets the
// workspace directory of the Environment its configuration is bound to
// ("" for Environment none), and a healthy idle Executor is reused only
// for the identical configuration in the same Environment: a Session
// bound to another Environment gets an Executor of its own.
func TestExecutorRunsInItsEnvironment(t *testing.T) {
	dirX, dirY := t.TempDir(), t.TempDir()
	envs := daemon.NewBindings()
	require.NoError(t, envs.Add(envX, dirX))
	require.NoError(t, envs.Add(envY, dirY))
	t.Cleanup(func() { _ = envs.Close() })
	a := &recorder{Adapter: script.New(script.Script{Steps: []script.Step{{Delta: "ok"}}})}
	c := newCore(t)
	r := startWith(t, c, a, envs, io.Discard)
	ws := accept(t, c)
	read(t, ws) // heartbeat

	const session = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
	first := runTurn(t, ws, "prepare-x", prepareIn(session, envX), "run-x")
	other := runTurn(t, ws, "prepare-y", prepareIn(session, envY), "run-y")
	assert.False(t, other.Reused, "an Executor of Environment X is never reused in Environment Y")
	assert.NotEqual(t, first.ExecutorID, other.ExecutorID)
	again := runTurn(t, ws, "prepare-x2", prepareIn(session, envX), "run-x2")
	assert.True(t, again.Reused, "the same configuration in the same Environment reuses its idle Executor")
	assert.Equal(t, first.ExecutorID, again.ExecutorID)
	runTurn(t, ws, "prepare-none", prepareIn(session, ""), "run-none")

	dirs, _ := a.snapshot()
	resolve := func(d string) string {
		p, err := filepath.EvalSymlinks(d)
		require.NoError(t, err)
		return p
	}
	assert.Equal(t, []string{resolve(dirX), resolve(dirY), ""}, dirs, "X, Y, then Environment none; the reuse prepared nothing")
	_ = ws.CloseNow()
	require.NoError(t, r.stop(t))
}

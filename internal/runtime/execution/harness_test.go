package execution_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/fsm/preparation"
	"github.com/agentwire/agentwire/fsm/run"
	"github.com/agentwire/agentwire/fsm/workspace_read"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// counting is an adapter whose Executors run a Turn by emitting its
// script's frames and then either completing or waiting for cancellation,
// and which counts native preparations and closes.
type counting struct {
	prepared atomic.Int32
	closed   chan string // one Executor ID-less note per close attempt
	// hang makes every Turn wait for its cancellation.
	hang bool
	// killed makes a cancelled Turn report that only a kill ended it
	// (harness.ErrCancelUnsettled).
	killed bool
	// emit is what every Turn sends before it settles.
	emit []wire.Payload
	// closeFailures makes the first N closes of each Executor fail.
	closeFailures int
	// prepareFails makes native preparation fail and still return the
	// Executor it created, as a factory that must be cleaned up does.
	prepareFails bool
	// prepareFailsNil makes native preparation fail and return its own
	// nil pointer as the Executor, which is not a nil interface.
	prepareFailsNil bool
	// nativeSession is the native Session every Run reports in done.
	nativeSession string
}

func newCounting() *counting { return &counting{closed: make(chan string, 64)} }

func (c *counting) Declaration() harness.Declaration {
	return harness.Declaration{Kind: "test", Available: true, Capabilities: wiretest.Capabilities()}
}

func (c *counting) NewExecutor(context.Context, harness.ExecutorConfig) (harness.Executor, error) {
	n := c.prepared.Add(1)
	if c.prepareFails {
		return &countingExe{c: c, n: n}, errPrepare
	}
	if c.prepareFailsNil {
		var none *countingExe
		return none, errPrepare
	}
	return &countingExe{c: c, n: n}, nil
}

var errPrepare = fmt.Errorf("test: native preparation failed part-way")

type countingExe struct {
	c      *counting
	n      int32
	mu     sync.Mutex
	closes int
}

var errClose = fmt.Errorf("test: close failed")

func (e *countingExe) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	for _, p := range e.c.emit {
		if err := emit(ctx, p); err != nil {
			return wire.Done{}, nil
		}
	}
	if e.c.hang {
		<-ctx.Done()
	}
	done := wire.Done{Content: fmt.Sprintf("executor %d", e.n)}
	if e.c.nativeSession != "" {
		done.Metadata = &wire.DoneMetadata{AgentSessionID: e.c.nativeSession}
	}
	if e.c.killed && ctx.Err() != nil {
		return done, fmt.Errorf("test: killed: %w", harness.ErrCancelUnsettled)
	}
	return done, nil
}

func (e *countingExe) Close(context.Context) error {
	e.mu.Lock()
	e.closes++
	fail := e.closes <= e.c.closeFailures
	e.mu.Unlock()
	select {
	case e.c.closed <- fmt.Sprintf("executor %d closed ok=%v", e.n, !fail):
	default: // nobody reads them (many admissions settled at the end)
	}
	if fail {
		return errClose
	}
	return nil
}

// rig is one Session on a driver over an in-memory pipe; the test plays
// Core on the other end.
type rig struct {
	t    *testing.T
	sess *execution.Session
	core peer.Transport
	conn *peer.Conn
	done chan struct{}
}

func newRig(t *testing.T, a harness.Adapter, cfg execution.Config) *rig {
	reg := harness.NewRegistry()
	require.NoError(t, reg.Register(a))
	cfg.Registry = reg
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	sess := execution.New(cfg)
	tables := []*fsm.Table{preparation.Table, run.Table, input.Table, interaction.Table, workspace_read.Table}
	d, err := peer.New(peer.Config{Role: fsm.RoleRuntime, Tables: tables, Router: peer.MustCatalogRouter(tables), App: sess,
		Clock: cfg.Clock, Logger: cfg.Logger})
	require.NoError(t, err)
	mine, core := peer.Pipe()
	conn := peer.NewConn(d, mine, peer.ConnConfig{})
	sess.Attach(conn)
	r := &rig{t: t, sess: sess, core: core, conn: conn, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = conn.Run(context.Background())
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-r.done
		sess.Close()
	})
	return r
}

func (r *rig) send(typ, id string, payload any) {
	r.t.Helper()
	b, err := json.Marshal(payload)
	require.NoError(r.t, err)
	frame, err := json.Marshal(map[string]any{"type": typ, "id": id, "payload": json.RawMessage(b)})
	require.NoError(r.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(r.t, r.core.Write(ctx, frame))
}

type frame struct {
	Type    string         `json:"type"`
	ID      string         `json:"id"`
	Payload map[string]any `json:"payload"`
}

// next reads the Runtime's next frame.
func (r *rig) next() frame {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := r.core.Read(ctx)
	require.NoError(r.t, err)
	var f frame
	require.NoError(r.t, json.Unmarshal(b, &f), string(b))
	return f
}

// status reads the next preparation_status for id and checks its state.
func (r *rig) status(id, state string) map[string]any {
	r.t.Helper()
	f := r.next()
	require.Equal(r.t, "preparation_status", f.Type, "%+v", f)
	require.Equal(r.t, id, f.ID, "%+v", f)
	require.Equal(r.t, state, f.Payload["state"], "%+v", f)
	return f.Payload
}

func prepare(session string) wire.ExecutionPrepare {
	return wire.ExecutionPrepare{SessionID: session, Configuration: wire.PromptRequest{
		AgentKind: "test", AgentStateKey: "agents-api-" + session, StrictResume: true, ObserveToolObservations: true,
		ExecutionControls: &wire.ExecutionControls{WebSearch: "disabled", TextVerbosity: "medium"},
	}}
}

const sessionA = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"

// ready prepares id and returns its ready status.
func (r *rig) ready(id string, p wire.ExecutionPrepare) map[string]any {
	r.t.Helper()
	r.send("execution_prepare", id, p)
	r.status(id, "preparing")
	return r.status(id, "ready")
}

func (r *rig) start(id string, ready map[string]any, runID string) {
	r.t.Helper()
	r.send("execution_start", id, map[string]any{"executor_id": ready["executor_id"], "handle": ready["handle"], "run_id": runID,
		"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}}})
}

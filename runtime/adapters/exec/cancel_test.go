package exec_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/adapters/exec"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// logLines is a slog handler that hands each record's message and
// attributes to the test, in order.
type logLines chan map[string]string

func (l logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l logLines) WithGroup(string) slog.Handler            { return l }
func (l logLines) WithAttrs(as []slog.Attr) slog.Handler    { return withAttrs{l, as} }
func (l logLines) Handle(_ context.Context, r slog.Record) error {
	return withAttrs{l, nil}.Handle(context.Background(), r)
}

type withAttrs struct {
	l  logLines
	as []slog.Attr
}

func (w withAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (w withAttrs) WithGroup(string) slog.Handler            { return w }
func (w withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return withAttrs{w.l, append(append([]slog.Attr(nil), w.as...), as...)}
}
func (w withAttrs) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	for _, a := range w.as {
		m[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	w.l <- m
	return nil
}

// await returns the next log record whose message starts the same as
// want, skipping others.
func (l logLines) await(t *testing.T, want string) map[string]string {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case m := <-l:
			if len(m["msg"]) >= len(want) && m["msg"][:len(want)] == want {
				return m
			}
		case <-timeout.C:
			t.Fatalf("no log %q", want)
			return nil
		}
	}
}

const (
	logInterrupt = "exec: cancelling the Turn: the agent's own interrupt"
	logSignal    = "exec: cancelling the Turn: signalling"
	logKilled    = "exec: the cancelled agent was killed"
	logExited    = "exec: the cancelled agent exited"
)

// cancelledTurn starts a Turn of the agent body on a manual clock, waits
// for its first delta and cancels it; the Turn's result arrives on res.
func cancelledTurn(t *testing.T, body string) (logLines, *peer.ManualClock, chan runResult) {
	t.Helper()
	logs := make(logLines, 64)
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	a, err := exec.New(exec.Config{Kind: "k", Command: script(t, body), Grace: 5 * time.Second, Clock: clock, Logger: slog.New(logs)})
	require.NoError(t, err)
	exe, err := a.NewExecutor(context.Background(), harness.ExecutorConfig{SessionID: "s", Declaration: a.Declaration()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events := make(chan wire.Payload, 8)
	res := make(chan runResult, 1)
	go func() {
		d, err := exe.Run(ctx, harness.Turn{RunID: "run-7", Input: text("hi"), Declaration: a.Declaration()},
			func(_ context.Context, p wire.Payload) error { events <- p; return nil })
		res <- runResult{d, err}
	}()
	select {
	case p := <-events:
		require.Equal(t, wire.Delta{Delta: "part", Sequence: 1}, p)
	case <-time.After(20 * time.Second):
		t.Fatal("no event from the agent")
	}
	cancel()
	return logs, clock, res
}

type runResult struct {
	done wire.Done
	err  error
}

func (r runResult) wait(t *testing.T, ch chan runResult) runResult {
	t.Helper()
	select {
	case r = <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled Turn did not end")
		return r
	}
}

// An agent that ignores the end of its input and SIGTERM is killed: the
// interrupt, SIGTERM after one grace and SIGKILL after another, each
// logged with the Run ID, and the Turn reports that the cancellation did
// not settle natively.
func TestCancelEscalatesToKill(t *testing.T) {
	logs, clock, res := cancelledTurn(t, `trap '' TERM; read l; echo '{"type":"delta","payload":{"delta":"part"}}'; while :; do sleep 1; done`)

	m := logs.await(t, logInterrupt)
	assert.Equal(t, "run-7", m["run_id"])
	assert.Equal(t, "5s", m["grace"])
	clock.Advance(5*time.Second - time.Nanosecond)
	select {
	case m := <-logs:
		t.Fatalf("a step before the grace ended: %v", m)
	default:
	}
	clock.Advance(time.Nanosecond)
	m = logs.await(t, logSignal)
	assert.Equal(t, "run-7", m["run_id"])
	assert.Equal(t, "terminated", m["signal"])
	clock.Advance(5 * time.Second)
	m = logs.await(t, logSignal)
	assert.Equal(t, "killed", m["signal"])
	m = logs.await(t, logKilled)
	assert.Equal(t, "run-7", m["run_id"])

	r := runResult{}.wait(t, res)
	require.Error(t, r.err)
	assert.True(t, errors.Is(r.err, harness.ErrCancelUnsettled), "a kill is not native settlement: %v", r.err)
	assert.Equal(t, "part", r.done.Content, "the partial content is kept")
}

// An agent that stops on SIGTERM settled its cancellation itself: no kill,
// and the Turn ends without error.
func TestCancelStopsOnSIGTERM(t *testing.T) {
	logs, clock, res := cancelledTurn(t, `trap 'exit 0' TERM; read l; echo '{"type":"delta","payload":{"delta":"part"}}'; while :; do sleep 1; done`)
	logs.await(t, logInterrupt)
	clock.Advance(5 * time.Second)
	assert.Equal(t, "terminated", logs.await(t, logSignal)["signal"])
	logs.await(t, logExited)
	r := runResult{}.wait(t, res)
	require.NoError(t, r.err)
	assert.Equal(t, "part", r.done.Content)
}

// An agent that exits when its input ends needs no signal at all.
func TestCancelInterruptIsEnough(t *testing.T) {
	logs, _, res := cancelledTurn(t, `read l; echo '{"type":"delta","payload":{"delta":"part"}}'; while read l; do :; done`)
	logs.await(t, logInterrupt)
	m := logs.await(t, "exec: the cancelled agent")
	assert.Equal(t, logExited, m["msg"])
	r := runResult{}.wait(t, res)
	require.NoError(t, r.err)
	assert.Equal(t, "part", r.done.Content)
}

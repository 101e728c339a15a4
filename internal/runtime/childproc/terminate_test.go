package childproc

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
)

// records hands each log record's message and attributes to the test.
type records chan map[string]string

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) WithGroup(string) slog.Handler            { return r }
func (r records) WithAttrs(as []slog.Attr) slog.Handler    { return attrs{r, as} }
func (r records) Handle(ctx context.Context, rec slog.Record) error {
	return attrs{r, nil}.Handle(ctx, rec)
}

type attrs struct {
	r  records
	as []slog.Attr
}

func (a attrs) Enabled(context.Context, slog.Level) bool { return true }
func (a attrs) WithGroup(string) slog.Handler            { return a }
func (a attrs) WithAttrs(as []slog.Attr) slog.Handler {
	return attrs{a.r, append(append([]slog.Attr(nil), a.as...), as...)}
}
func (a attrs) Handle(_ context.Context, rec slog.Record) error {
	m := map[string]string{"msg": rec.Message}
	for _, x := range a.as {
		m[x.Key] = x.Value.String()
	}
	rec.Attrs(func(x slog.Attr) bool { m[x.Key] = x.Value.String(); return true })
	a.r <- m
	return nil
}

func (r records) next(t *testing.T) map[string]string {
	t.Helper()
	select {
	case m := <-r:
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no log record")
		return nil
	}
}

// terminating starts a shell child running body after it printed ready,
// and Terminate on it with a manual clock and a grace of 5 s.
func terminating(t *testing.T, body string) (*Process, records, *peer.ManualClock, chan struct{}) {
	t.Helper()
	p, err := Start("/bin/sh", []string{"-c", "echo ready; " + body}, os.Environ(), t.TempDir(), 1024)
	require.NoError(t, err)
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	logs := make(records, 16)
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Terminate(clock, 5*time.Second, slog.New(logs).With("run_id", "run-3"))
	}()
	return p, logs, clock, done
}

// A Harness that ignores SIGTERM gets SIGKILL once the grace passed, and
// not before; each step is logged with the Run ID.
func TestTerminateEscalatesToKill(t *testing.T) {
	p, logs, clock, done := terminating(t, `trap '' TERM; while :; do sleep 1; done`)
	m := logs.next(t)
	assert.Equal(t, "run-3", m["run_id"])
	assert.Equal(t, "terminated", m["signal"])
	assert.Equal(t, "5s", m["grace"])
	clock.Advance(5*time.Second - time.Nanosecond)
	assert.True(t, p.Alive(), "SIGTERM is ignored and the grace has not passed")
	clock.Advance(time.Nanosecond)
	m = logs.next(t)
	assert.Equal(t, "killed", m["signal"])
	assert.Equal(t, "run-3", m["run_id"])
	m = logs.next(t)
	assert.Equal(t, "the cancelled Harness was killed", m["msg"])
	<-done
	assert.False(t, p.Alive())
	assert.True(t, processGone(p.Pid()))
}

// A Harness that exits on SIGTERM is not killed.
func TestTerminateStopsOnSIGTERM(t *testing.T) {
	p, logs, _, done := terminating(t, `trap 'exit 0' TERM; while :; do sleep 1; done`)
	assert.Equal(t, "terminated", logs.next(t)["signal"])
	m := logs.next(t)
	assert.Equal(t, "the cancelled Harness exited", m["msg"])
	assert.Equal(t, "run-3", m["run_id"])
	<-done
	assert.False(t, p.Alive())
	assert.Empty(t, logs, "no SIGKILL step")
}

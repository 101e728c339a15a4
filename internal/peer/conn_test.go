package peer_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// transports returns a connected (core, runtime) pair of each kind: the
// in-memory pipe and a real WebSocket on loopback.
func transports(t *testing.T) map[string]func() (peer.Transport, peer.Transport) {
	return map[string]func() (peer.Transport, peer.Transport){
		"pipe": peer.Pipe,
		"websocket": func() (peer.Transport, peer.Transport) {
			s, c := peer.RawWebSocketPair(t)
			return peer.WebSocket(s), peer.WebSocket(c)
		},
	}
}

func runConn(t *testing.T, c *peer.Conn) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	return errc
}

func TestConnsRunAdmissionToDone(t *testing.T) {
	for name, mk := range transports(t) {
		t.Run(name, func(t *testing.T) {
			ts := tables(t)
			coreApp, rtApp := newApp(t, fsm.RoleCore), newApp(t, fsm.RoleRuntime)
			rtApp.script = startedThenDone(prepID, 3)
			mkDriver := func(role fsm.Role, a *app) *peer.Driver {
				d, err := peer.New(peer.Config{Role: role, Tables: ts, Router: testRouter(ts), App: a, Logger: quietLogger()})
				require.NoError(t, err)
				return d
			}
			ct, rt := mk()
			core := peer.NewConn(mkDriver(fsm.RoleCore, coreApp), ct, peer.ConnConfig{PingInterval: time.Millisecond})
			runtime := peer.NewConn(mkDriver(fsm.RoleRuntime, rtApp), rt, peer.ConnConfig{})
			coreDone, rtDone := runConn(t, core), runConn(t, runtime)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, core.Send(ctx, peer.Outbound{ID: prepID, Payload: prepare(t)}))
			// The statuses arrive asynchronously: wait on Core's own view.
			waitState(ctx, t, core, "preparation", prepID, "ready")
			require.NoError(t, core.Send(ctx, peer.Outbound{ID: prepID, Payload: start()}))
			waitState(ctx, t, core, "run", runID, "completed")
			waitState(ctx, t, runtime, "run", runID, "completed")

			require.NoError(t, core.Close())
			require.NoError(t, <-coreDone)
			err := <-rtDone
			require.Error(t, err, "the Runtime sees the connection go away")
			assert.Equal(t, peer.StatusNormal, peer.CloseStatus(err))
			// After the loss nothing can be sent.
			require.ErrorIs(t, core.Send(ctx, peer.Outbound{ID: "x", Payload: prepare(t)}), peer.ErrClosed)
			assert.Empty(t, coreApp.refused)
			assert.Empty(t, rtApp.refused)
		})
	}
}

// waitState polls the instance's state through the loop (Do), which is the
// only way another goroutine may look at a driver.
func waitState(ctx context.Context, t *testing.T, c *peer.Conn, machine, id, want string) {
	t.Helper()
	for {
		var got string
		require.NoError(t, c.Do(ctx, func(d *peer.Driver) { got = state(t, d, machine, id) }))
		if got == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s/%s: state %s, want %s", machine, id, got, want)
		case <-time.After(time.Millisecond):
		}
	}
}

func TestConnReadTimeoutClosesASilentConnection(t *testing.T) {
	ts := tables(t)
	clock := peer.NewManualClock(time.Unix(0, 0))
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleCore),
		Clock: clock, Logger: quietLogger()})
	require.NoError(t, err)
	a, b := peer.Pipe()
	c := peer.NewConn(d, a, peer.ConnConfig{ReadTimeout: time.Minute})
	done := runConn(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Let the loop arm its timer, then let the read deadline pass.
	require.NoError(t, c.Do(ctx, func(*peer.Driver) {}))
	clock.Advance(time.Minute)
	err = <-done
	require.Error(t, err)
	_, rerr := b.Read(ctx)
	assert.Equal(t, peer.StatusPolicy, peer.CloseStatus(rerr))
}

func TestConnRefusesOversizedFrames(t *testing.T) {
	ws := transports(t)["websocket"]
	core, rt := ws()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	big := make([]byte, wire.MaxFrameBytes+1)
	for i := range big {
		big[i] = ' '
	}
	coreErr, rtErr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := core.Read(ctx); coreErr <- err }()
	go func() { _, err := rt.Read(ctx); rtErr <- err }()
	_ = rt.Write(ctx, big)
	require.Error(t, <-coreErr, "the receiver refuses a frame over the 4 MiB limit")
	err := <-rtErr
	assert.Equal(t, peer.StatusTooBig, peer.CloseStatus(err), "and tells the sender why: %v", err)
	_ = core.Close(peer.StatusNormal, "")
	_ = rt.Close(peer.StatusNormal, "")
}

// deadPath is a pipe end whose pings are never answered.
type deadPath struct{ peer.Transport }

func (deadPath) Ping(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestConnUnansweredPingClosesTheConnection(t *testing.T) {
	ts := tables(t)
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleCore), Logger: quietLogger()})
	require.NoError(t, err)
	a, b := peer.Pipe()
	c := peer.NewConn(d, deadPath{a}, peer.ConnConfig{PingInterval: time.Millisecond, WriteTimeout: 5 * time.Millisecond})
	err = <-runConn(t, c)
	require.Error(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, rerr := b.Read(ctx)
	assert.Equal(t, peer.StatusGoingAway, peer.CloseStatus(rerr))
}

// orderLog records, in order, the Ready calls and the frames written.
type orderLog struct {
	mu  sync.Mutex
	log []string
}

func (o *orderLog) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, s)
}

func (o *orderLog) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.log...)
}

type loggingTransport struct {
	peer.Transport
	o *orderLog
}

func (t loggingTransport) Write(ctx context.Context, frame []byte) error {
	t.o.add("write")
	return t.Transport.Write(ctx, frame)
}

// Ready runs before the frames a turn of work queued are written, before
// Do returns, and after the connection's loss (what its hooks deferred is
// persisted too).
func TestConnReadyPrecedesWritesDoAndLoss(t *testing.T) {
	ts := tables(t)
	o := &orderLog{}
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleCore), Logger: quietLogger()})
	require.NoError(t, err)
	a, b := peer.Pipe()
	c := peer.NewConn(d, loggingTransport{a, o}, peer.ConnConfig{Ready: func(ctx context.Context) {
		assert.NoError(t, ctx.Err(), "Ready's context is never the cancelled loop's")
		o.add("ready")
	}})
	done := runConn(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var before int
	require.NoError(t, c.Do(ctx, func(*peer.Driver) { before = len(o.all()) }))
	assert.Greater(t, len(o.all()), before, "Ready ran after Do's work, before Do returned")

	require.NoError(t, c.Send(ctx, peer.Outbound{ID: prepID, Payload: prepare(t)}))
	_, err = b.Read(ctx)
	require.NoError(t, err)
	log := o.all()
	w := slices.Index(log, "write")
	require.Positive(t, w, "a frame was written: %v", log)
	assert.Equal(t, "ready", log[w-1], "Ready ran right before the write: %v", log)

	n := len(o.all())
	require.NoError(t, b.Close(peer.StatusNormal, ""))
	<-done
	assert.Greater(t, len(o.all()), n, "Ready ran after the loss")
	assert.Equal(t, "ready", o.all()[len(o.all())-1])
}

// With Durable, Ready only hands off: the loop waits in Durable before it
// writes a frame, before Do returns and at the loss, and nowhere else.
func TestConnDurableGatesWritesDoAndLoss(t *testing.T) {
	ts := tables(t)
	o := &orderLog{}
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleCore), Logger: quietLogger()})
	require.NoError(t, err)
	a, b := peer.Pipe()
	gate := make(chan struct{})
	waiting := make(chan struct{}, 8)
	c := peer.NewConn(d, loggingTransport{a, o}, peer.ConnConfig{
		Ready: func(context.Context) { o.add("ready") },
		Durable: func(ctx context.Context) {
			assert.NoError(t, ctx.Err())
			o.add("durable")
			waiting <- struct{}{}
			<-gate
		},
	})
	done := runConn(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A Do returns only once Durable let it.
	ran := make(chan error, 1)
	go func() { ran <- c.Do(ctx, func(*peer.Driver) {}) }()
	<-waiting
	select {
	case <-ran:
		t.Fatal("Do returned before Durable did")
	default:
	}
	gate <- struct{}{}
	require.NoError(t, <-ran)

	// A queued frame is not written while Durable waits.
	sent := make(chan error, 1)
	go func() { sent <- c.Send(ctx, peer.Outbound{ID: prepID, Payload: prepare(t)}) }()
	<-waiting
	assert.NotContains(t, o.all(), "write", "nothing was written before Durable returned")
	gate <- struct{}{}
	_, err = b.Read(ctx)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	log := o.all()
	w := slices.Index(log, "write")
	require.Positive(t, w)
	assert.Equal(t, "durable", log[w-1], "Durable ran right before the write: %v", log)

	// The loss waits for it too.
	require.NoError(t, b.Close(peer.StatusNormal, ""))
	<-waiting
	gate <- struct{}{}
	<-done
	assert.Equal(t, "durable", o.all()[len(o.all())-1])
}

// An Abort made while Durable runs (the embedding peer's store failed to
// make what the frames follow durable) keeps every queued frame from
// leaving: the loop ends with the abort's error and the peer reads its
// close status.
func TestConnAbortInDurableWritesNothingQueued(t *testing.T) {
	ts := tables(t)
	o := &orderLog{}
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleCore), Logger: quietLogger()})
	require.NoError(t, err)
	a, b := peer.Pipe()
	failed := errors.New("store: disk full")
	var c *peer.Conn
	c = peer.NewConn(d, loggingTransport{a, o}, peer.ConnConfig{
		Durable: func(context.Context) { c.Abort(failed, peer.StatusInternal, "store failed") },
	})
	done := runConn(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err = c.Send(ctx, peer.Outbound{ID: prepID, Payload: prepare(t)})
	require.Error(t, err, "the frame was never written")
	require.ErrorIs(t, <-done, failed)
	assert.NotContains(t, o.all(), "write", "no frame left after the abort")
	_, err = b.Read(ctx)
	assert.Equal(t, peer.StatusInternal, peer.CloseStatus(err), "the peer reads the abort's close status: %v", err)
}

// An Abort from another goroutine ends an idle loop.
func TestConnAbortEndsIdleLoop(t *testing.T) {
	ts := tables(t)
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleCore), Logger: quietLogger()})
	require.NoError(t, err)
	a, b := peer.Pipe()
	c := peer.NewConn(d, a, peer.ConnConfig{})
	done := runConn(t, c)
	failed := errors.New("store: disk full")
	c.Abort(failed, peer.StatusInternal, "store failed")
	c.Abort(errors.New("second"), peer.StatusNormal, "") // the first call wins
	require.ErrorIs(t, <-done, failed)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = b.Read(ctx)
	assert.Equal(t, peer.StatusInternal, peer.CloseStatus(err))
}

package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/agentwire/agentwire/internal/runtime/childproc/childproctest"
)

func TestMain(m *testing.M) {
	childproctest.MainHook() // the stray app-server of start_test.go
	goleak.VerifyTestMain(m)
}

// fakeServer is the far end of an rpcConn: it reads the client's lines and
// writes whatever the test says.
type fakeServer struct {
	t     *testing.T
	in    *bufio.Reader // what the client wrote
	out   *os.File      // what the client reads
	conn  *rpcConn
	inW   *os.File
	inR   *os.File
	mu    sync.Mutex
	obsvd []string
}

func newFakeServer(t *testing.T, maxLine int) *fakeServer {
	t.Helper()
	cr, sw, err := os.Pipe() // server → client
	require.NoError(t, err)
	sr, cw, err := os.Pipe() // client → server
	require.NoError(t, err)
	f := &fakeServer{t: t, in: bufio.NewReader(sr), out: sw, inW: cw, inR: sr}
	f.conn = newRPCConn(cr, cw, maxLine, func(m *message) {
		f.mu.Lock()
		f.obsvd = append(f.obsvd, m.Method)
		f.mu.Unlock()
	}, nil)
	t.Cleanup(func() {
		_ = f.conn.CloseWrite()
		_ = sw.Close()
		<-f.conn.Done()
		_ = cr.Close()
		_ = sr.Close()
	})
	return f
}

// next reads one message the client wrote.
func (f *fakeServer) next() message {
	f.t.Helper()
	line, err := f.in.ReadBytes('\n')
	require.NoError(f.t, err)
	var m message
	require.NoError(f.t, json.Unmarshal(line, &m), string(line))
	return m
}

func (f *fakeServer) send(line string) {
	f.t.Helper()
	_, err := f.out.WriteString(line + "\n")
	require.NoError(f.t, err)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRPCCallsAreMatchedByID(t *testing.T) {
	f := newFakeServer(t, 0)
	ctx := ctxT(t)
	a, err := f.conn.Start(ctx, "first", map[string]int{"n": 1})
	require.NoError(t, err)
	b, err := f.conn.Start(ctx, "second", nil)
	require.NoError(t, err)
	ma, mb := f.next(), f.next()
	assert.Equal(t, "2.0", ma.JSONRPC)
	assert.Equal(t, "first", ma.Method)
	assert.JSONEq(t, `{"n":1}`, string(ma.Params))
	assert.Equal(t, "second", mb.Method)
	assert.NotEqual(t, string(ma.ID), string(mb.ID))
	// Answered out of order.
	f.send(`{"id":` + string(mb.ID) + `,"result":{"who":"b"}}`)
	f.send(`{"id":` + string(ma.ID) + `,"result":{"who":"a"}}`)
	ra, err := a.Wait(ctx)
	require.NoError(t, err)
	rb, err := b.Wait(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `{"who":"a"}`, string(ra))
	assert.JSONEq(t, `{"who":"b"}`, string(rb))
}

func TestRPCErrorNamesTheMethod(t *testing.T) {
	f := newFakeServer(t, 0)
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() { done <- f.conn.Call(ctx, "turn/steer", struct{}{}, nil) }()
	m := f.next()
	f.send(`{"id":` + string(m.ID) + `,"error":{"code":-32600,"message":"no active turn to steer"}}`)
	err := <-done
	var re *RPCError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, int64(-32600), re.Code)
	assert.Equal(t, "no active turn to steer", re.Message)
	assert.Contains(t, err.Error(), "turn/steer")
}

func TestRPCNotificationsAndRequestsKeepTheirOrder(t *testing.T) {
	f := newFakeServer(t, 0)
	ctx := ctxT(t)
	f.send(`{"method":"first","params":{"a":1}}`)
	f.send(`{"method":"item/commandExecution/requestApproval","id":0,"params":{}}`)
	f.send(`{"method":"ask","id":"str-7","params":{}}`)
	f.send(`not json at all`)
	f.send(`{"method":"last"}`)
	var got []*message
	for len(got) < 4 {
		select {
		case <-f.conn.Ready():
		case <-ctx.Done():
			t.Fatal("messages did not arrive")
		}
		for m, ok := f.conn.Pop(); ok; m, ok = f.conn.Pop() {
			got = append(got, m)
		}
	}
	require.Len(t, got, 4, "the line that is not JSON-RPC is skipped")
	assert.Equal(t, "first", got[0].Method)
	assert.True(t, got[0].isNotification())
	assert.True(t, got[1].isRequest())
	assert.True(t, got[2].isRequest())
	assert.Equal(t, "last", got[3].Method)
	f.mu.Lock()
	assert.Equal(t, []string{"first", "last"}, f.obsvd, "the observer sees notifications only")
	f.mu.Unlock()

	// Answers echo the exact request IDs, numeric or string.
	require.NoError(t, f.conn.Respond(ctx, got[1].Method, got[1].ID, map[string]string{"decision": "accept"}))
	require.NoError(t, f.conn.RespondError(ctx, got[2].Method, got[2].ID, -32601, "no"))
	a, b := f.next(), f.next()
	assert.Equal(t, "0", string(a.ID))
	assert.JSONEq(t, `{"decision":"accept"}`, string(a.Result))
	assert.Equal(t, `"str-7"`, string(b.ID))
	require.NotNil(t, b.Error)
	assert.Equal(t, int64(-32601), b.Error.Code)
}

func TestRPCCallWaitsForTheResponseWhileNotificationsQueue(t *testing.T) {
	// The consumer does not read the inbox while it waits for a call: the
	// reader must still route the response.
	f := newFakeServer(t, 0)
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() { done <- f.conn.Call(ctx, "turn/start", nil, nil) }()
	m := f.next()
	for i := 0; i < 1000; i++ {
		f.send(`{"method":"item/agentMessage/delta","params":{"delta":"x"}}`)
	}
	f.send(`{"id":` + string(m.ID) + `,"result":{}}`)
	require.NoError(t, <-done)
	n := 0
	for _, ok := f.conn.Pop(); ok; _, ok = f.conn.Pop() {
		n++
	}
	assert.Equal(t, 1000, n)
}

func TestRPCCallEndsWithItsContext(t *testing.T) {
	f := newFakeServer(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.conn.Call(ctx, "thread/start", nil, nil) }()
	f.next() // written, never answered
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "thread/start")
}

func TestRPCWriteIsBoundedByItsContext(t *testing.T) {
	// Nobody reads the client's lines: the pipe fills and the write must
	// end with the context, and break the stream for later writes.
	f := newFakeServer(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	big := strings.Repeat("x", 1<<20)
	errc := make(chan error, 1)
	go func() {
		_, err := f.conn.Start(ctx, "turn/steer", map[string]string{"text": big})
		errc <- err
	}()
	// The context ends only once the write has begun: the pipe then holds
	// part of the line (it is far smaller than the line, so the write
	// blocks there). A deadline instead could expire before the write
	// started on a loaded machine, and nothing would be broken.
	fd := int(f.inR.Fd())
	wait := ctxT(t)
	for {
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD: the bytes a pipe holds
		require.NoError(t, err)
		if n > 0 {
			break
		}
		select {
		case <-wait.Done():
			t.Fatal("the write never began")
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	err := <-errc
	require.Error(t, err)
	assert.Contains(t, err.Error(), "turn/steer")
	_, err = f.conn.Start(ctxT(t), "again", nil)
	require.ErrorIs(t, err, errBrokenWrite, "a part-way write leaves no line boundary to trust")
}

func TestRPCLineBound(t *testing.T) {
	f := newFakeServer(t, 1024)
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() { done <- f.conn.Call(ctx, "initialize", nil, nil) }()
	f.next()
	f.send(`{"method":"x","params":"` + strings.Repeat("y", 2048) + `"}`)
	err := <-done
	require.ErrorIs(t, err, errLineTooLong)
	assert.Contains(t, err.Error(), "initialize")
	<-f.conn.Done()
	require.ErrorIs(t, f.conn.Err(), errLineTooLong)
}

func TestRPCServerExitFailsCalls(t *testing.T) {
	f := newFakeServer(t, 0)
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() { done <- f.conn.Call(ctx, "turn/start", nil, nil) }()
	f.next()
	require.NoError(t, f.out.Close())
	err := <-done
	require.ErrorIs(t, err, ErrClosed)
	_, err = f.conn.Start(ctx, "later", nil)
	require.ErrorIs(t, err, ErrClosed)
	assert.True(t, errors.Is(f.conn.Err(), ErrClosed))
}

func TestRPCNotifyHasNoID(t *testing.T) {
	f := newFakeServer(t, 0)
	require.NoError(t, f.conn.Notify(ctxT(t), "initialized", nil))
	m := f.next()
	assert.Equal(t, "initialized", m.Method)
	assert.Empty(t, m.ID)
	assert.Empty(t, m.Params)
}

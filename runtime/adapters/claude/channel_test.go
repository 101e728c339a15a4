package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/internal/runtime/childproc/childproctest"
)

func TestMain(m *testing.M) {
	childproctest.MainHook() // the stray CLI of start_test.go
	goleak.VerifyTestMain(m)
}

// fakeCLI is the CLI's end of a channel: it reads what the host wrote and
// writes lines of its own.
type fakeCLI struct {
	t   *testing.T
	in  *bufio.Scanner // what the host wrote
	out *os.File       // the CLI's stdout
	ch  *channel
}

func newFakeCLI(t *testing.T) *fakeCLI {
	stdinR, stdinW, err := os.Pipe()
	require.NoError(t, err)
	stdoutR, stdoutW, err := os.Pipe()
	require.NoError(t, err)
	f := &fakeCLI{t: t, in: bufio.NewScanner(stdinR), out: stdoutW}
	f.ch = newChannel(stdoutR, stdinW, 0, "aw-", nil, nil)
	t.Cleanup(func() {
		_ = stdoutW.Close()
		<-f.ch.Done()
		_ = stdoutR.Close()
		_ = f.ch.CloseWrite()
		_ = stdinR.Close()
	})
	return f
}

func (f *fakeCLI) write(line string) {
	_, err := f.out.WriteString(line + "\n")
	require.NoError(f.t, err)
}

func (f *fakeCLI) read() map[string]any {
	require.True(f.t, f.in.Scan(), "the host wrote no line")
	var m map[string]any
	require.NoError(f.t, json.Unmarshal(f.in.Bytes(), &m), f.in.Text())
	return m
}

func (f *fakeCLI) next(t *testing.T) event {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if ev, ok := f.ch.Pop(); ok {
			return ev
		}
		select {
		case <-f.ch.Ready():
		case <-ctx.Done():
			t.Fatal("no event")
		}
	}
}

// A control request gets the answer that names it, while events keep
// flowing to the inbox; the echo of the host's own answer is passed over.
func TestChannelRequestAndEvents(t *testing.T) {
	f := newFakeCLI(t)
	ctx := context.Background()
	answered := make(chan json.RawMessage, 1)
	go func() {
		res, err := f.ch.Request(ctx, "initialize", map[string]any{"hooks": nil})
		assert.NoError(t, err)
		answered <- res
	}()
	req := f.read()
	assert.Equal(t, "control_request", req["type"])
	id := req["request_id"].(string)
	assert.Equal(t, "initialize", req["request"].(map[string]any)["subtype"])
	f.write(`{"type":"system","subtype":"init","session_id":"s-1"}`)
	f.write(`not json at all`)
	f.write(`{"type":"control_response","response":{"subtype":"success","request_id":"` + id + `","response":{"commands":[]}}}`)
	assert.JSONEq(t, `{"commands":[]}`, string(<-answered))
	ev := f.next(t)
	assert.Equal(t, "system", ev.Type)
	assert.Equal(t, "init", ev.Subtype)

	// The CLI asks; the host answers; the CLI echoes the answer back.
	f.write(`{"type":"control_request","request_id":"cli-7","request":{"subtype":"can_use_tool","tool_name":"Bash"}}`)
	ask := f.next(t)
	assert.Equal(t, "control_request", ask.Type)
	assert.Equal(t, "cli-7", ask.RequestID)
	require.NoError(t, f.ch.Answer(ctx, "cli-7", map[string]any{"behavior": "allow", "updatedInput": map[string]any{}}))
	ans := f.read()
	assert.Equal(t, "control_response", ans["type"])
	assert.Equal(t, "cli-7", ans["response"].(map[string]any)["request_id"])
	f.write(`{"type":"control_response","response":{"subtype":"success","request_id":"cli-7","response":{"behavior":"allow"}}}`)
	f.write(`{"type":"result","subtype":"success","result":"ok"}`)
	assert.Equal(t, "result", f.next(t).Type, "the echo is not an event")

	require.NoError(t, f.ch.SendUser(ctx, "in-1", []any{map[string]any{"type": "text", "text": "more"}}))
	u := f.read()
	assert.Equal(t, "user", u["type"])
	assert.Equal(t, "in-1", u["uuid"])
}

func TestChannelRefusalAndEnd(t *testing.T) {
	f := newFakeCLI(t)
	ctx := context.Background()
	refused := make(chan error, 1)
	go func() {
		_, err := f.ch.Request(ctx, "interrupt", nil)
		refused <- err
	}()
	id := f.read()["request_id"].(string)
	f.write(`{"type":"control_response","response":{"subtype":"error","request_id":"` + id + `","error":"no turn"}}`)
	var ce *ControlError
	require.ErrorAs(t, <-refused, &ce)
	assert.Equal(t, "no turn", ce.Message)

	pending := make(chan error, 1)
	go func() {
		_, err := f.ch.Request(ctx, "interrupt", nil)
		pending <- err
	}()
	f.read()
	require.NoError(t, f.out.Close()) // the CLI exits
	assert.ErrorIs(t, <-pending, ErrClosed, "a request the CLI never answered fails when it goes")
	<-f.ch.Done()
	_, err := f.ch.Request(ctx, "interrupt", nil)
	assert.ErrorIs(t, err, ErrClosed)
}

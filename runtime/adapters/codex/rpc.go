package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agentwire/agentwire/internal/runtime/jsonl"
)

// The JSON-RPC 2.0 client of `codex app-server` over stdio: one JSON
// message per line in each direction. The client sends requests (with an
// ID it mints), notifications and the answers to the server's own
// requests; it reads responses, notifications and server requests on one
// goroutine. Responses go to the call that waits for them; notifications
// and server requests are queued in arrival order for the Executor
// (inbox), so the reader never waits for the consumer and a call made
// while the consumer is busy is still answered.

// DefaultMaxLineBytes bounds one line read from the app-server.
const DefaultMaxLineBytes = 16 << 20

// maxInbox bounds the notifications and server requests queued and not yet
// consumed; beyond it the connection fails rather than grow without bound.
const maxInbox = 1 << 16

// message is one JSON-RPC message in either direction. ID is kept raw: the
// server's request IDs may be numbers or strings, and an answer must echo
// the exact value.
type message struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// isRequest: a server→client request (method and ID).
func (m *message) isRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// isNotification: method without ID.
func (m *message) isNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// RPCError is a JSON-RPC error object, as the app-server answers a request
// it refuses.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message)
}

// deadlineWriter is the app-server's stdin.
type deadlineWriter = jsonl.DeadlineWriter

// Errors of the connection.
var (
	// ErrClosed: the connection ended (the process exited or closed its
	// output, or Close was called).
	ErrClosed      = errors.New("codex: the app-server connection is closed")
	errBrokenWrite = jsonl.ErrBrokenWrite
	errLineTooLong = jsonl.ErrLineTooLong
	errInboxFull   = errors.New("codex: too many unread app-server messages")
)

// rpcConn is one app-server connection.
type rpcConn struct {
	lw      *jsonl.Writer
	maxLine int
	// observe sees every notification on the reader goroutine before it is
	// queued; it must not block (the executor uses it to wake waiters that
	// the consumer itself may be blocking).
	observe func(*message)
	logf    func(format string, args ...any)

	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan *message
	inbox   []*message
	err     error // why the connection ended; nil while open

	ready chan struct{} // a token when the inbox may be non-empty
	done  chan struct{} // closed when the reader ended
}

// newRPCConn starts reading r. observe and logf may be nil.
func newRPCConn(r io.Reader, w deadlineWriter, maxLine int, observe func(*message), logf func(string, ...any)) *rpcConn {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	c := &rpcConn{
		lw: jsonl.NewWriter(w, ErrClosed), maxLine: maxLine, observe: observe, logf: logf,
		pending: map[int64]chan *message{},
		ready:   make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	go c.read(r)
	return c
}

// read is the one reading goroutine.
func (c *rpcConn) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = jsonl.ReadLine(br, c.maxLine)
		if err != nil {
			break
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		m := new(message)
		if jerr := json.Unmarshal(line, m); jerr != nil || (m.Method == "" && len(m.ID) == 0) {
			// decision: a line that is not a JSON-RPC message is logged and
			// skipped; it names no call, so no waiter can be failed by it.
			c.logf("codex: skipping an app-server line that is not a JSON-RPC message (%d bytes)", len(line))
			continue
		}
		if !c.deliver(m) {
			err = errInboxFull
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = ErrClosed
	}
	c.fail(err)
}

// deliver routes one message; false when the inbox overflowed.
func (c *rpcConn) deliver(m *message) bool {
	if !m.isRequest() && !m.isNotification() {
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if err != nil || !ok {
			c.logf("codex: an app-server response names no open request (id %s)", truncate(string(m.ID), 40))
			return true
		}
		ch <- m // buffered, one response per request
		return true
	}
	if c.observe != nil && m.isNotification() {
		c.observe(m)
	}
	c.mu.Lock()
	if len(c.inbox) >= maxInbox {
		c.mu.Unlock()
		return false
	}
	c.inbox = append(c.inbox, m)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
	return true
}

// fail ends the connection once: every waiting call fails with err.
func (c *rpcConn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = map[int64]chan *message{}
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	close(c.done)
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// Err is why the connection ended, nil while it is open.
func (c *rpcConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the reader ended.
func (c *rpcConn) Done() <-chan struct{} { return c.done }

// Ready has a token when the inbox may hold messages (or the connection
// ended); pair it with Pop.
func (c *rpcConn) Ready() <-chan struct{} { return c.ready }

// Pop takes the oldest queued notification or server request.
func (c *rpcConn) Pop() (*message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inbox) == 0 {
		return nil, false
	}
	m := c.inbox[0]
	c.inbox[0] = nil
	c.inbox = c.inbox[1:]
	if len(c.inbox) > 0 {
		select {
		case c.ready <- struct{}{}:
		default:
		}
	}
	return m, true
}

// Call is one request in flight.
type Call struct {
	Method string
	ch     chan *message
	c      *rpcConn
}

// Start writes a request and returns once the line is written (within
// ctx); Wait collects the answer.
func (c *rpcConn) Start(ctx context.Context, method string, params any) (*Call, error) {
	id := c.nextID.Add(1)
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("codex: %s: %w", method, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	raw, err := json.Marshal(params)
	if err == nil {
		err = c.write(ctx, message{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw})
	}
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("codex: %s: %w", method, err)
	}
	return &Call{Method: method, ch: ch, c: c}, nil
}

// Wait returns the result of the call, the server's refusal (*RPCError),
// or an error when ctx or the connection ended first.
func (k *Call) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case m, ok := <-k.ch:
		if !ok {
			return nil, fmt.Errorf("codex: %s: %w", k.Method, k.c.Err())
		}
		if m.Error != nil {
			return nil, fmt.Errorf("codex: %s: %w", k.Method, m.Error)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("codex: %s: %w", k.Method, ctx.Err())
	}
}

// Call sends a request and waits for its answer, decoded into out when out
// is not nil.
func (c *rpcConn) Call(ctx context.Context, method string, params, out any) error {
	k, err := c.Start(ctx, method, params)
	if err != nil {
		return err
	}
	res, err := k.Wait(ctx)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			return fmt.Errorf("codex: %s: decoding the result: %w", method, err)
		}
	}
	return nil
}

// Notify sends a notification.
func (c *rpcConn) Notify(ctx context.Context, method string, params any) error {
	m := message{JSONRPC: "2.0", Method: method}
	if params != nil {
		raw, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("codex: %s: %w", method, err)
		}
		m.Params = raw
	}
	if err := c.write(ctx, m); err != nil {
		return fmt.Errorf("codex: %s: %w", method, err)
	}
	return nil
}

// Respond answers the server's request id with result.
func (c *rpcConn) Respond(ctx context.Context, method string, id json.RawMessage, result any) error {
	raw, err := json.Marshal(result)
	if err == nil {
		err = c.write(ctx, message{JSONRPC: "2.0", ID: id, Result: raw})
	}
	if err != nil {
		return fmt.Errorf("codex: answering %s: %w", method, err)
	}
	return nil
}

// RespondError refuses the server's request id.
func (c *rpcConn) RespondError(ctx context.Context, method string, id json.RawMessage, code int64, text string) error {
	if err := c.write(ctx, message{JSONRPC: "2.0", ID: id, Error: &RPCError{Code: code, Message: text}}); err != nil {
		return fmt.Errorf("codex: refusing %s: %w", method, err)
	}
	return nil
}

// write writes one message as a line within ctx's deadline.
func (c *rpcConn) write(ctx context.Context, m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return c.lw.WriteLine(ctx, b)
}

// broken reports whether a write stopped part-way (or stdin was closed):
// whatever was being written may have reached the server.
func (c *rpcConn) broken() bool { return c.lw.Broken() }

// CloseWrite closes the app-server's stdin (EOF asks it to exit).
func (c *rpcConn) CloseWrite() error { return c.lw.Close() }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Package claude is the Claude Code Harness: an Executor is one
// `claude -p --input-format stream-json --output-format stream-json`
// process, driven over its stdio; this file is its control channel.
package claude

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

// The stream-json channel: one JSON object per line each way. The CLI
// writes its events (system, stream_event, assistant, user, result,
// command_lifecycle, …), its own control requests to the host (can_use_tool,
// mcp_message), the withdrawal of one (control_cancel_request) and its
// answers to the host's control requests; the host writes user messages,
// its control requests (initialize, interrupt) and its answers to the
// CLI's. With --replay-user-messages the CLI also echoes the host's
// answers back, which name no request the host waits for and are passed
// over. One goroutine reads; answers go to the request that waits for
// them, everything else is queued in arrival order for the Executor, so
// the reader never waits for the consumer.

// DefaultMaxLineBytes bounds one line read from the CLI.
const DefaultMaxLineBytes = 16 << 20

// maxInbox bounds the events queued and not yet consumed; beyond it the
// channel fails rather than grow without bound.
const maxInbox = 1 << 16

// Errors of the channel.
var (
	// ErrClosed: the channel ended (the process closed its output or
	// exited, or stdin was closed).
	ErrClosed    = errors.New("claude: the stream-json channel is closed")
	errInboxFull = errors.New("claude: too many unread events from the CLI")
)

// event is one line the CLI wrote, with the members the channel routes by
// decoded; Raw is the whole line for the Executor.
type event struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	Request   json.RawMessage `json:"request,omitempty"`
	Response  json.RawMessage `json:"response,omitempty"`
	Raw       json.RawMessage `json:"-"`
}

// controlAnswer is the body of a control_response in either direction.
type controlAnswer struct {
	Subtype   string          `json:"subtype"` // success or error
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// ControlError is the CLI's refusal of a control request.
type ControlError struct {
	Subtype string // the request's
	Message string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("claude: the CLI refused %s: %s", e.Subtype, e.Message)
}

// channel is one CLI process's stream-json channel.
type channel struct {
	lw      *jsonl.Writer
	maxLine int
	logf    func(format string, args ...any)
	nextID  atomic.Int64
	prefix  string // request IDs are prefix + a counter, so echoes of ours are recognised
	// intercept takes events the Executor answers itself (newChannel).
	intercept func(event) bool

	mu      sync.Mutex
	pending map[string]chan controlAnswer
	inbox   []event
	err     error

	ready chan struct{} // a token when the inbox may be non-empty
	done  chan struct{} // closed when the reader ended
}

// newChannel starts reading r; prefix marks the host's request IDs.
//
// intercept, when set, sees every other event first on the reader
// goroutine and takes it (true) instead of the inbox; it must not block.
func newChannel(r io.Reader, w jsonl.DeadlineWriter, maxLine int, prefix string, logf func(string, ...any), intercept func(event) bool) *channel {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	c := &channel{lw: jsonl.NewWriter(w, ErrClosed), maxLine: maxLine, logf: logf, prefix: prefix, intercept: intercept,
		pending: map[string]chan controlAnswer{}, ready: make(chan struct{}, 1), done: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *channel) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		if line, err = jsonl.ReadLine(br, c.maxLine); err != nil {
			break
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ev event
		if jerr := json.Unmarshal(line, &ev); jerr != nil || ev.Type == "" {
			// decision: a line that is not a typed JSON object is logged and
			// skipped (the CLI prints nothing else on stdout in stream-json
			// mode); it names no request, so no waiter is failed by it.
			c.logf("claude: skipping a line that is not a stream-json event (%d bytes)", len(line))
			continue
		}
		ev.Raw = append(json.RawMessage(nil), line...)
		if !c.deliver(ev) {
			err = errInboxFull
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = ErrClosed
	}
	c.fail(err)
}

// deliver routes one event; false when the inbox overflowed.
func (c *channel) deliver(ev event) bool {
	if ev.Type == "control_response" {
		var a controlAnswer
		if json.Unmarshal(ev.Response, &a) == nil {
			c.mu.Lock()
			ch, ok := c.pending[a.RequestID]
			delete(c.pending, a.RequestID)
			c.mu.Unlock()
			if ok {
				ch <- a // buffered: one answer per request
				return true
			}
		}
		// The echo of an answer the host gave (--replay-user-messages),
		// or an answer to nothing: neither is news to the Executor.
		return true
	}
	if c.intercept != nil && c.intercept(ev) {
		return true
	}
	c.mu.Lock()
	if len(c.inbox) >= maxInbox {
		c.mu.Unlock()
		return false
	}
	c.inbox = append(c.inbox, ev)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
	return true
}

// fail ends the channel once: every waiting request fails with err.
func (c *channel) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = map[string]chan controlAnswer{}
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

// Err is why the channel ended, nil while it is open.
func (c *channel) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the reader ended.
func (c *channel) Done() <-chan struct{} { return c.done }

// Ready has a token when the inbox may hold events (or the channel ended);
// pair it with Pop.
func (c *channel) Ready() <-chan struct{} { return c.ready }

// Pop takes the oldest queued event.
func (c *channel) Pop() (event, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inbox) == 0 {
		return event{}, false
	}
	ev := c.inbox[0]
	c.inbox[0] = event{}
	c.inbox = c.inbox[1:]
	if len(c.inbox) > 0 {
		select {
		case c.ready <- struct{}{}:
		default:
		}
	}
	return ev, true
}

// Request sends the host's control request of subtype with the members of
// fields and waits for the CLI's answer, returned raw; a refusal is a
// *ControlError.
func (c *channel) Request(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	id := c.prefix + strconv.FormatInt(c.nextID.Add(1), 10)
	ch := make(chan controlAnswer, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("claude: %s: %w", subtype, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	req := map[string]any{"subtype": subtype}
	for k, v := range fields {
		req[k] = v
	}
	if err := c.write(ctx, map[string]any{"type": "control_request", "request_id": id, "request": req}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("claude: %s: %w", subtype, err)
	}
	select {
	case a, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("claude: %s: %w", subtype, c.Err())
		}
		if a.Subtype == "error" {
			return nil, &ControlError{Subtype: subtype, Message: a.Error}
		}
		return a.Response, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("claude: %s: %w", subtype, ctx.Err())
	}
}

// Answer answers the CLI's control request id with response.
func (c *channel) Answer(ctx context.Context, id string, response any) error {
	raw, err := json.Marshal(response)
	if err == nil {
		err = c.write(ctx, map[string]any{"type": "control_response",
			"response": controlAnswer{Subtype: "success", RequestID: id, Response: raw}})
	}
	if err != nil {
		return fmt.Errorf("claude: answering %s: %w", id, err)
	}
	return nil
}

// Refuse answers the CLI's control request id with an error.
func (c *channel) Refuse(ctx context.Context, id, message string) error {
	if err := c.write(ctx, map[string]any{"type": "control_response",
		"response": controlAnswer{Subtype: "error", RequestID: id, Error: message}}); err != nil {
		return fmt.Errorf("claude: refusing %s: %w", id, err)
	}
	return nil
}

// SendUser writes a user message; uuid (the host's input ID) is what the
// CLI names it by in command_lifecycle and in its replay.
func (c *channel) SendUser(ctx context.Context, uuid string, content any) error {
	m := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil, "session_id": "", "uuid": uuid}
	if err := c.write(ctx, m); err != nil {
		return fmt.Errorf("claude: user message %s: %w", uuid, err)
	}
	return nil
}

func (c *channel) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.lw.WriteLine(ctx, b)
}

// broken reports whether a write stopped part-way or stdin was closed.
func (c *channel) broken() bool { return c.lw.Broken() }

// CloseWrite closes the CLI's stdin: it exits once queued input is done.
func (c *channel) CloseWrite() error { return c.lw.Close() }

package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/coder/websocket"

	"github.com/agentwire/agentwire/wire"
)

// Transport carries whole frames. Read and Write block until done or until
// ctx ends; Close ends the connection with a status the peer can read
// (StatusCode), and unblocks every pending Read and Write.
type Transport interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, frame []byte) error
	Close(code StatusCode, reason string) error
}

// StatusCode is a WebSocket close status (RFC 6455, section 7.4). It is
// this package's own type, so an embedder's code does not depend on the
// WebSocket library the transport uses.
type StatusCode int

// Close statuses the peers use.
const (
	StatusNormal    StatusCode = 1000
	StatusGoingAway StatusCode = 1001
	StatusPolicy    StatusCode = 1008
	StatusTooBig    StatusCode = 1009
	// StatusInternal closes a connection whose peer cannot go on with it
	// (Core's store failed); the Runtime reconnects with backoff.
	StatusInternal StatusCode = 1011
	// StatusRetired tells a Runtime that its device was retired or deleted:
	// a permanent refusal, after which it must not reconnect.
	StatusRetired StatusCode = 4001
	// StatusReplaced closes a connection that a newer connection of the same
	// device replaced.
	StatusReplaced StatusCode = 4002
)

// CloseStatus extracts the close status from a Transport error, or -1.
func CloseStatus(err error) StatusCode { return StatusCode(websocket.CloseStatus(err)) }

// WebSocket adapts a coder/websocket connection: text frames only, the
// protocol's 4 MiB read limit, and a binary frame refused as a policy
// violation rather than passed on.
func WebSocket(c *websocket.Conn) Transport {
	c.SetReadLimit(wire.MaxFrameBytes)
	return &wsTransport{c: c}
}

type wsTransport struct {
	c   *websocket.Conn
	buf bytes.Buffer // Read's reused buffer (one reader at a time)
}

// Read returns the next frame in a slice of its own. A large frame (a 64
// KiB chunk is 87 KiB of text) is read into a buffer kept across reads and
// copied out at its exact size: one allocation instead of the dozen, each
// zeroed, of growing a buffer from scratch. A small frame is handed over
// in the buffer it was read into, and the transport keeps none: an idle
// connection would otherwise hold a buffer the size of its last
// heartbeat for good (issue 21).
func (t *wsTransport) Read(ctx context.Context) ([]byte, error) {
	typ, r, err := t.c.Reader(ctx)
	if err == nil {
		t.buf.Reset()
		_, err = t.buf.ReadFrom(r)
	}
	if err != nil {
		return nil, fmt.Errorf("read frame: %w", err)
	}
	if typ != websocket.MessageText {
		_ = t.c.Close(websocket.StatusPolicyViolation, "frames are JSON text")
		return nil, errors.New("read frame: binary frame refused")
	}
	if b := t.buf.Bytes(); cap(b) <= smallFrame {
		t.buf = bytes.Buffer{}
		return b, nil
	}
	return bytes.Clone(t.buf.Bytes()), nil
}

// smallFrame is the largest buffer Read hands over rather than keeps.
const smallFrame = 8 << 10

func (t *wsTransport) Write(ctx context.Context, frame []byte) error {
	if err := t.c.Write(ctx, websocket.MessageText, frame); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// Ping checks the path to the peer (it needs the read loop running, which
// Conn guarantees).
func (t *wsTransport) Ping(ctx context.Context) error {
	if err := t.c.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

func (t *wsTransport) Close(code StatusCode, reason string) error {
	return t.c.Close(websocket.StatusCode(code), reason)
}

// Pipe returns two connected in-memory transports, for tests and for the
// model checker's live mode: frames written to one are read from the other
// in order. Close on either end ends both, and the reader sees a
// *websocket.CloseError with the code and reason.
func Pipe() (Transport, Transport) {
	ab := make(chan []byte, 64)
	ba := make(chan []byte, 64)
	p := &pipeShared{done: make(chan struct{})}
	return &pipeEnd{in: ba, out: ab, p: p}, &pipeEnd{in: ab, out: ba, p: p}
}

type pipeShared struct {
	once sync.Once
	done chan struct{}
	err  error
}

type pipeEnd struct {
	in  <-chan []byte
	out chan<- []byte
	p   *pipeShared
}

func (e *pipeEnd) Read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-e.in:
		return b, nil
	default:
	}
	select {
	case b := <-e.in:
		return b, nil
	case <-e.p.done:
		return nil, fmt.Errorf("read frame: %w", e.p.err)
	case <-ctx.Done():
		return nil, fmt.Errorf("read frame: %w", ctx.Err())
	}
}

func (e *pipeEnd) Write(ctx context.Context, frame []byte) error {
	select {
	case <-e.p.done:
		return fmt.Errorf("write frame: %w", e.p.err)
	default:
	}
	b := append([]byte(nil), frame...)
	select {
	case e.out <- b:
		return nil
	case <-e.p.done:
		return fmt.Errorf("write frame: %w", e.p.err)
	case <-ctx.Done():
		return fmt.Errorf("write frame: %w", ctx.Err())
	}
}

func (e *pipeEnd) Close(code StatusCode, reason string) error {
	e.p.once.Do(func() {
		e.p.err = websocket.CloseError{Code: websocket.StatusCode(code), Reason: reason}
		close(e.p.done)
	})
	return nil
}

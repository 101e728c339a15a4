package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	buf bytes.Buffer // Read's reused buffer for frames beyond a pooled one (one reader at a time)
}

// Read returns the next frame in a slice of its own. A frame is read into
// a pooled buffer the size of a transfer chunk's frame: a small one (a
// heartbeat, a delta) is copied out at its exact size and the buffer goes
// straight back, so an idle connection holds no buffer (issue 21); a
// chunk-sized one is handed over in the pooled buffer itself, which the
// connection gives back through Recycle once the frame is decoded (issue
// 25: the copy out of a reused buffer was 27 µs and 88 KB of garbage per
// 64 KiB chunk). A frame larger than that (a 1 MiB read result, a large
// done) is read into a buffer kept across reads and copied out at its
// exact size: one allocation instead of the dozen, each zeroed, of growing
// a buffer from scratch.
func (t *wsTransport) Read(ctx context.Context) ([]byte, error) {
	typ, r, err := t.c.Reader(ctx)
	if err != nil {
		return nil, fmt.Errorf("read frame: %w", err)
	}
	if typ != websocket.MessageText {
		_ = t.c.Close(websocket.StatusPolicyViolation, "frames are JSON text")
		return nil, errors.New("read frame: binary frame refused")
	}
	bp := frameBufs.Get().(*[frameBufBytes]byte)
	b := bp[:0]
	for len(b) < cap(b) {
		var n int
		n, err = r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			break
		}
	}
	switch {
	case err == nil:
		// The pooled buffer is full and the frame goes on: read the rest
		// behind it in the kept buffer.
		t.buf.Reset()
		t.buf.Write(b)
		frameBufs.Put(bp)
		if _, err = t.buf.ReadFrom(r); err != nil {
			return nil, fmt.Errorf("read frame: %w", err)
		}
		return bytes.Clone(t.buf.Bytes()), nil
	case !errors.Is(err, io.EOF):
		frameBufs.Put(bp)
		return nil, fmt.Errorf("read frame: %w", err)
	case len(b) <= smallFrame:
		out := bytes.Clone(b)
		frameBufs.Put(bp)
		return out, nil
	}
	return b, nil
}

// Recycle takes back a frame Read returned once nothing refers to it any
// more. Only chunk-sized frames came from the pool; anything else is left
// to the collector.
func (t *wsTransport) Recycle(frame []byte) {
	if cap(frame) != frameBufBytes {
		return
	}
	frameBufs.Put((*[frameBufBytes]byte)(frame[:frameBufBytes]))
}

// smallFrame is the largest frame Read copies out of its pooled buffer
// rather than handing the buffer over.
const smallFrame = 8 << 10

// frameBufBytes is a pooled read buffer: a transfer chunk's frame (64 KiB
// of data is 87,384 bytes of base64, plus the envelope, the IDs and a
// trace, about 87.6 KB) with room to spare.
const frameBufBytes = 96 << 10

// frameBufs holds read buffers between frames.
//
// decision: a sync.Pool, as wire's chunk buffers are: a connection has one
// reader, at most one transfer is in flight per connection
// (daemon-protocol.txt:104, :185), and buffers nobody took back are
// dropped within two collections, so an idle peer keeps none.
var frameBufs = sync.Pool{New: func() any { return new([frameBufBytes]byte) }}

// recycler is a Transport whose Read hands out buffers it wants back.
type recycler interface {
	Recycle(frame []byte)
}

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

// bulkFrames are the message types whose frames recycleFrame gives back:
// a transfer's chunks and the results of workspace reads and exports,
// nearly every large frame of the data path. wire's decoders copy what
// they keep (strings, base64 data into buffers of their own), so once one
// of these decoded, only its Envelope.Payload still points into the frame,
// and nothing downstream reads that for these types: Core journals the
// arrived bytes of Run frames only (gateway's validated), and the
// Runtime's malformed-frame reply reads them only for a frame that did
// not decode. Other types keep their frame to the collector.
var bulkFrames = map[string]bool{
	wire.TypeWorkspaceWrite:        true,
	wire.TypeRuntimePrepare:        true,
	wire.TypeWorkspaceReadResult:   true,
	wire.TypeWorkspaceExportResult: true,
}

// recycleFrame gives f back to t once m, decoded from it without error, no
// longer refers to it.
func recycleFrame(t Transport, f []byte, m *wire.Message, decodeErr error) {
	r, ok := t.(recycler)
	if !ok || decodeErr != nil || !bulkFrames[m.Type] {
		return
	}
	m.Envelope.Payload = nil
	r.Recycle(f)
}

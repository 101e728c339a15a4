package write

import (
	"context"
	"sync"

	"github.com/agentwire/agentwire/fsm/workspace_write"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// pump moves one write's chunks (issue 25). Each chunk still leaves only
// once the previous frame was answered (daemon-protocol.txt:104 and :185:
// ordered chunks, each awaiting its received offset); what changed is who
// does what while a chunk is in flight:
//
//   - Run's goroutine encodes the next chunk (wire.AppendWriteChunk) into
//     one of two pooled buffers while the current one awaits its offset,
//     so encoding is off the round trip;
//   - the connection's loop, in the step that took the answer (the Saver,
//     Book.Moved), sends that encoded chunk at once, so the round trip has
//     no goroutine hand-off of Core's besides the transport's reader.
//
// Should the encoder be behind (the answer came first), the loop notes
// that it is wanted and the encoder queues the chunk itself when done.
//
// decision: sending chunk N+1 from the step that accepted chunk N's
// received offset is the earliest the protocol allows
// (daemon-protocol.txt:185, acknowledged 64 KiB frames; :104, "send
// ordered chunks and await each matching received offset"); the
// machine's own peek still refuses a chunk in any state but staging. Such
// a chunk is a reply to the receipt, so it carries the receipt's trace
// when the receipt has a valid one (peer's replyTrace): trace data is
// diagnostic correlation only (daemon-protocol.txt:67).
type pump struct {
	b    *Book
	r    *rec
	pc   *peer.Conn
	id   string
	body []byte

	wake chan struct{} // cap 1: the loop took, finished or settled something

	mu       sync.Mutex
	bufs     [2]*[]byte
	busy     [2]bool // encoded and not yet written or refused (or dropped)
	encoded  int     // chunks encoded so far
	next     *chunk  // encoded, waiting for the previous frame's answer
	want     bool    // the previous frame was answered before next was encoded
	sent     int     // chunks handed to the loop
	answered int     // chunks whose received offset was accepted
	inflight bool    // a frame was handed over and is not answered yet
	err      error   // a chunk that failed to leave
	closed   bool    // Run is done with the pump
}

// chunk is one encoded chunk frame.
type chunk struct {
	p    wire.WorkspaceWrite
	buf  int // index in bufs
	data []byte
}

func newPump(b *Book, r *rec, pc *peer.Conn, id string, body []byte) *pump {
	p := &pump{b: b, r: r, pc: pc, id: id, body: body, wake: make(chan struct{}, 1)}
	for i := range p.bufs {
		p.bufs[i] = getFrameBuf(id)
	}
	return p
}

func (p *pump) chunks() int { return (len(p.body) + wire.ChunkBytes - 1) / wire.ChunkBytes }

func (p *pump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// beginSent notes that begin was handed over: its ready is the first
// answer.
func (p *pump) beginSent() {
	p.mu.Lock()
	p.inflight = true
	p.mu.Unlock()
}

// moved runs on the loop (Book.Moved) after each step of the write's
// instance, with the state before and after it. A move into staging is
// an answer: ready for begin, a matching received offset for a chunk.
func (p *pump) moved(from, to workspace_write.State) {
	if to != workspace_write.StateStaging || from == workspace_write.StateStaging {
		if to != from {
			p.signal() // settled, or another move Run's wait must see
		}
		return
	}
	p.mu.Lock()
	if p.closed || !p.inflight {
		p.mu.Unlock()
		return
	}
	p.inflight = false
	if from == workspace_write.StateChunkSent {
		p.answered++
	}
	c := p.next
	switch {
	case c != nil:
		p.next = nil
		p.handOver(c)
		p.mu.Unlock()
		p.pc.Driver().Send(p.outbound(c), p.written(c))
	case p.sent < p.chunks():
		p.want = true
		p.mu.Unlock()
	default:
		p.mu.Unlock()
	}
	p.signal()
}

// handOver records c as the frame in flight; p.mu is held.
func (p *pump) handOver(c *chunk) {
	p.sent++
	p.inflight = true
	p.b.mu.Lock()
	p.r.inflightEnd = c.p.Offset + int64(len(c.p.Data))
	p.b.mu.Unlock()
}

func (p *pump) outbound(c *chunk) peer.Outbound {
	return peer.Outbound{ID: p.id, Payload: c.p, Encoded: c.data}
}

// written is a chunk's send outcome, called on the loop: its buffer is
// free again; a failure stops the pump (the machine took its
// send_failed step, the frame may have left).
func (p *pump) written(c *chunk) func(error) {
	return func(err error) {
		p.mu.Lock()
		p.busy[c.buf] = false
		if err != nil && p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
		p.signal()
	}
}

// run encodes and offers the chunks until every one was answered (true)
// or the write stopped (false: the pump's error, a settlement, the
// connection or ctx ended; the caller finds out which). progress is told
// each answered offset.
func (p *pump) run(ctx context.Context, progress func(staged, total int64)) bool {
	total, reported := int64(len(p.body)), 0
	for {
		p.mu.Lock()
		answered, failed := p.answered, p.err != nil
		done := answered == p.chunks() && !p.inflight
		free := -1
		if p.encoded < p.chunks() && p.next == nil {
			for i, busy := range p.busy {
				if !busy {
					free = i
					break
				}
			}
			if free >= 0 {
				p.busy[free] = true
			}
		}
		p.mu.Unlock()
		// Every answered offset is told, in order, even when several
		// receipts arrived while the pump was encoding the next chunk.
		for progress != nil && reported < answered {
			reported++
			progress(min(int64(reported)*wire.ChunkBytes, total), total)
		}
		if failed || p.b.end(p.r) != nil {
			return false
		}
		if done {
			return true
		}
		if free >= 0 {
			if !p.offer(ctx, p.encode(free)) {
				return false
			}
			continue
		}
		select {
		case <-p.wake:
		case <-p.pc.Done():
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// encode builds the next chunk's frame in buffer i.
func (p *pump) encode(i int) *chunk {
	off := p.encoded * wire.ChunkBytes
	end := min(off+wire.ChunkBytes, len(p.body))
	c := &chunk{p: wire.WorkspaceWrite{Step: wire.StepChunk, Offset: int64(off), Data: p.body[off:end]}, buf: i}
	data, err := wire.AppendWriteChunk((*p.bufs[i])[:0], p.id, c.p.Offset, c.p.Data)
	if err == nil {
		c.data = data
	} // else the driver encodes it itself and refuses it with the same error
	p.mu.Lock()
	p.encoded++
	p.mu.Unlock()
	return c
}

// offer hands c to the loop: at once when the previous frame was already
// answered, otherwise as next, for the loop to send on that answer.
func (p *pump) offer(ctx context.Context, c *chunk) bool {
	p.mu.Lock()
	if !p.want {
		p.next = c
		p.mu.Unlock()
		return true
	}
	p.want = false
	p.handOver(c)
	p.mu.Unlock()
	if err := p.pc.Queue(ctx, p.outbound(c), p.written(c)); err != nil {
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		return false
	}
	return true
}

// close ends the pump: the loop sends nothing more of it, and the
// buffers no frame in the loop still uses go back to the pool.
func (p *pump) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.next != nil {
		p.busy[p.next.buf] = false // never handed over
		p.next = nil
	}
	for i, busy := range p.busy {
		if !busy {
			frameBufs.Put(p.bufs[i])
		}
	}
}

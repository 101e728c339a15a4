package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentwire/agentwire/wire"
)

// ConnConfig tunes a Conn's I/O; the zero value takes the defaults.
type ConnConfig struct {
	// WriteTimeout bounds every write (10 s, the reference's write deadline).
	WriteTimeout time.Duration
	// ReadTimeout closes a connection that has sent nothing for this long;
	// zero disables it (Core sets 60 s; heartbeats keep a healthy Runtime
	// inside it).
	ReadTimeout time.Duration
	// InboundBuffer bounds frames read but not yet delivered (64).
	InboundBuffer int
	// PingInterval, when set and the transport can ping (a WebSocket),
	// pings the peer that often; a ping without a pong within WriteTimeout
	// closes the connection. Protocol liveness is the heartbeat's job; the
	// ping finds a dead TCP path sooner on an otherwise quiet connection.
	PingInterval time.Duration
	// Ready, when set, is called on the loop after each turn of work (the
	// frames delivered together, a request, a timer) and before the
	// frames that work queued are written, again after those writes (for
	// what their send events deferred), and after the work of Do before
	// Do returns: the embedding peer persists there, in one go,
	// what its hooks deferred (Core commits its journal batch), so that
	// no frame and no caller of Do sees work whose writes are not durable
	// yet (etcd raft's Ready, persisted before the messages go out).
	//
	// With Durable set, Ready may only hand the work off (to a writer of
	// its own that commits while the loop goes on reading), and Durable
	// waits until everything handed off so far is durable. The loop calls
	// Durable where it needs that: before it writes frames, before Do
	// returns and before it ends; between deliveries it does not wait, so
	// a stream's frames keep arriving while the last ones commit.
	Ready   func(ctx context.Context)
	Durable func(ctx context.Context)
}

// Pinger is implemented by transports that can check the path to the peer.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Conn runs one Driver over one Transport on one goroutine (Run). Other
// goroutines talk to the driver only through Conn's methods, which hand
// their work to that goroutine.
type Conn struct {
	d   *Driver
	t   Transport
	cfg ConnConfig

	reqs chan func()
	done chan struct{}
	// loopCtx is Run's context without its cancellation, for Ready (set
	// before the loop takes any request; read only on the loop).
	loopCtx context.Context

	mu     sync.Mutex
	err    error
	closed bool
	// abort is closed by Abort; aborted says how the loop ends then.
	abort   chan struct{}
	aborted *abortion
}

// abortion is how an aborted connection ends.
type abortion struct {
	err    error
	code   StatusCode
	reason string
}

// NewConn binds d to t. Nothing happens until Run.
func NewConn(d *Driver, t Transport, cfg ConnConfig) *Conn {
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.InboundBuffer == 0 {
		cfg.InboundBuffer = 64
	}
	return &Conn{d: d, t: t, cfg: cfg, reqs: make(chan func()), done: make(chan struct{}), abort: make(chan struct{})}
}

// Driver returns the driver. Only hooks (which run on the loop) and code
// passed to Do may call its methods.
func (c *Conn) Driver() *Driver { return c.d }

// ErrClosed is returned by Conn methods once Run has returned.
var ErrClosed = errors.New("peer: connection closed")

// inbound is one read: a decoded frame (or why it did not decode), or the
// read error that ends the connection.
type inbound struct {
	msg       wire.Message
	decodeErr error
	err       error
}

// Run reads, delivers, writes and fires timers until the transport fails,
// ctx ends or Close is called. When it returns, every instance has seen
// connection_lost and the transport is closed. The error says why it
// stopped (nil after Close).
func (c *Conn) Run(ctx context.Context) error {
	defer close(c.done)
	c.loopCtx = context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Pointers, not values: an idle connection keeps its buffer for
	// good, and 64 decoded messages by value were 8 KiB of every
	// connection's memory (issue 21); a frame read costs one small
	// allocation instead.
	in := make(chan *inbound, c.cfg.InboundBuffer)
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		dir := c.d.Receives()
		for {
			f, err := c.t.Read(ctx)
			x := &inbound{}
			if x.err = err; err == nil {
				x.msg, x.decodeErr = wire.Decode(f, dir)
				recycleFrame(c.t, f, &x.msg, x.decodeErr)
			}
			select {
			case in <- x:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer readers.Wait()
	if p, ok := c.t.(Pinger); ok && c.cfg.PingInterval > 0 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			c.ping(ctx, p)
		}()
	}

	clock := c.d.cfg.Clock
	timer := clock.NewTimer(time.Hour)
	defer timer.Stop()
	lastRead := clock.Now()

	stop := func(err error, code StatusCode, reason string) error {
		c.d.ConnectionLost()
		// What the loss's hooks deferred is persisted too: the loop ends
		// here, and a Core that journals the loss must not drop it.
		c.ready(c.loopCtx)
		c.durable(c.loopCtx)
		_ = c.t.Close(code, reason)
		cancel()
		c.setErr(err)
		return err
	}

	var armed time.Time // the deadline the timer is set for
	// One write deadline outlives a flush: a stream that queues one frame
	// per loop turn (an adapter's emit waits for its frame) would otherwise
	// pay for a new context with a deadline on every frame.
	var dl writeDeadline
	defer dl.stop()
	for {
		c.ready(c.loopCtx)
		if c.d.Pending() {
			c.durable(c.loopCtx) // no frame leaves before what it follows is durable
		}
		// An abort decided while what the frames follow was being made
		// durable (Core's store failed) ends the loop before they leave.
		if a := c.abortion(); a != nil {
			return stop(a.err, a.code, a.reason)
		}
		if err := c.flush(ctx, &dl); err != nil {
			return stop(err, StatusGoingAway, "write failed")
		}
		// What the writes' own events deferred (Core records a Turn
		// running once its start was written) is persisted before the loop
		// waits for more.
		c.ready(c.loopCtx)
		armed = c.arm(timer, lastRead, armed)

		select {
		case f := <-in:
			// Frames that queued up meanwhile are delivered in one go, so a
			// busy stream pays for the timer and the flush once per batch,
			// not once per frame; a write still follows every delivery
			// before the next select.
			for batch := 0; ; batch++ {
				if f.err != nil {
					if c.isClosed() {
						return stop(nil, StatusNormal, "")
					}
					return stop(f.err, StatusGoingAway, "read failed")
				}
				_ = c.d.DeliverDecoded(&f.msg, f.decodeErr) // refusals are the app's (App.Refused) and are logged
				if batch == c.cfg.InboundBuffer || c.d.Pending() {
					break
				}
				select {
				case f = <-in:
					continue
				default:
				}
				break
			}
			lastRead = clock.Now()
		case fn := <-c.reqs:
			fn()
			// Requests already waiting (a Run queueing frames ahead of
			// their writes) are taken before the flush, so that their
			// frames are written back to back.
			for range c.cfg.InboundBuffer {
				select {
				case fn = <-c.reqs:
					fn()
					continue
				default:
				}
				break
			}
		case <-timer.C():
			armed = time.Time{} // spent: the next arm sets it again
			c.d.Tick()
			if c.cfg.ReadTimeout > 0 && !clock.Now().Before(lastRead.Add(c.cfg.ReadTimeout)) {
				return stop(errReadTimeout, StatusPolicy, "read deadline exceeded")
			}
		case <-ctx.Done():
			if c.isClosed() {
				return stop(nil, StatusNormal, "")
			}
			return stop(ctx.Err(), StatusGoingAway, "shutting down")
		case <-c.abort:
			a := c.abortion()
			return stop(a.err, a.code, a.reason)
		}
	}
}

// Abort ends the connection because the embedding peer can no longer keep
// what its frames promise (Core's store failed to make its work durable):
// the loop writes none of the frames still queued, every instance sees
// connection_lost, the transport closes with code and reason, and Run
// returns err. It may be called from any goroutine, also from Ready's or
// Durable's own writer before Durable returns, which is what keeps the
// frames that waited for it from leaving; the first call wins.
func (c *Conn) Abort(err error, code StatusCode, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted != nil {
		return
	}
	c.aborted = &abortion{err: err, code: code, reason: reason}
	close(c.abort)
}

func (c *Conn) abortion() *abortion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

var errReadTimeout = errors.New("peer: no frame within the read deadline")

// ping runs until ctx ends; a failed ping closes the transport, which the
// loop then sees as a read failure.
func (c *Conn) ping(ctx context.Context, p Pinger) {
	t := c.d.cfg.Clock.NewTimer(c.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		pctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
		err := p.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				_ = c.t.Close(StatusGoingAway, "ping failed")
			}
			return
		}
		t.Reset(c.cfg.PingInterval)
	}
}

// arm sets the loop's one timer to the driver's next deadline (or the read
// deadline, whichever is first) and returns the deadline it is set for; a
// timer already set for that deadline is left alone.
func (c *Conn) arm(timer Timer, lastRead, armed time.Time) time.Time {
	now := c.d.cfg.Clock.Now()
	at, ok := c.d.NextDeadline()
	if c.cfg.ReadTimeout > 0 {
		rd := lastRead.Add(c.cfg.ReadTimeout)
		if !ok || rd.Before(at) {
			at, ok = rd, true
		}
	}
	if ok && at.Equal(armed) || !ok && armed.IsZero() {
		return armed
	}
	if !timer.Stop() {
		select {
		case <-timer.C():
		default:
		}
	}
	if !ok {
		return time.Time{} // nothing to wait for: the timer stays stopped
	}
	if dt, ok := timer.(deadlineTimer); ok {
		dt.ResetAt(at)
		return at
	}
	timer.Reset(max(at.Sub(now), 0))
	return at
}

// flush writes every queued frame, one at a time, each reported to the
// driver before the next is taken. Every write runs under a deadline of at
// least half and at most all of WriteTimeout: one deadline (dl, kept by the
// loop) serves every write until half of it has passed and is then renewed,
// because a context with a deadline costs coder/websocket about half a small
// frame's write.
func (c *Conn) flush(ctx context.Context, dl *writeDeadline) error {
	for {
		w, ok := c.d.NextWrite()
		if !ok {
			return nil
		}
		err := c.t.Write(dl.context(ctx, c.cfg.WriteTimeout), w.Frame)
		c.d.Written(w, err)
		if err != nil {
			return err
		}
	}
}

// writeDeadline is one deadline shared by a run of writes, renewed once half
// of it has passed.
type writeDeadline struct {
	ctx     context.Context
	cancel  context.CancelFunc
	renewAt time.Time
}

func (w *writeDeadline) context(parent context.Context, timeout time.Duration) context.Context {
	if now := time.Now(); w.ctx == nil || now.After(w.renewAt) {
		w.stop()
		w.ctx, w.cancel = context.WithTimeout(parent, timeout)
		w.renewAt = now.Add(timeout / 2)
	}
	return w.ctx
}

func (w *writeDeadline) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

// ready calls ConnConfig.Ready.
func (c *Conn) ready(ctx context.Context) {
	if c.cfg.Ready != nil {
		c.cfg.Ready(ctx)
	}
}

// durable calls ConnConfig.Durable.
func (c *Conn) durable(ctx context.Context) {
	if c.cfg.Durable != nil {
		c.cfg.Durable(ctx)
	}
}

// Do runs fn on the loop goroutine with the driver and waits for it.
func (c *Conn) Do(ctx context.Context, fn func(d *Driver)) error {
	ran := make(chan struct{})
	select {
	case c.reqs <- func() { fn(c.d); c.ready(c.loopCtx); c.durable(c.loopCtx); close(ran) }:
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// The loop took fn and runs it at once, so ran closes even if the loop
	// ends right after (waiting on c.done here could report ErrClosed for
	// work that was done).
	select {
	case <-ran:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send queues a frame and waits until it was written (and its events
// fired), refused, or failed; see Driver.Send for the errors.
func (c *Conn) Send(ctx context.Context, o Outbound) error {
	result := make(chan error, 1)
	// Unlike Do, Send does not wait for the loop to have run the request:
	// the loop runs it as soon as it takes it, and the result comes after
	// that, so waiting for the result alone saves a stream one goroutine
	// hand-off per frame.
	if err := c.Queue(ctx, o, func(err error) { result <- err }); err != nil {
		return err
	}
	select {
	case err := <-result:
		return err
	case <-c.done:
		select {
		case err := <-result:
			return err
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return fmt.Errorf("peer: waiting for the write: %w", ctx.Err())
	}
}

// Queue hands o to the loop, which queues it as Driver.Send does, and
// returns as soon as the loop has taken it, without waiting for the write:
// frames queued one after another from one goroutine go out in that order.
// done (which may be nil) is then called on the loop with the outcome, as
// Driver.Send describes. An error means the loop did not take o (the
// connection is closed, or ctx ended first), and done is never called.
func (c *Conn) Queue(ctx context.Context, o Outbound, done func(error)) error {
	select {
	case c.reqs <- func() { c.d.Send(o, done) }:
		return nil
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the connection normally: Run fires connection_lost on every
// instance, closes the transport and returns nil.
func (c *Conn) Close() error { return c.CloseWith(StatusNormal, "") }

// CloseWith is Close with a close status and reason the peer reads (for
// example StatusReplaced when a newer connection of the device took over).
// The reason is sent to the peer: keep it short and free of secrets.
func (c *Conn) CloseWith(code StatusCode, reason string) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.t.Close(code, reason)
}

// Done is closed when Run has returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is Run's result once Done is closed.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Conn) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

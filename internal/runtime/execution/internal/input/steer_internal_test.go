package input

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// fakeHost is a Host whose loop runs posted funcs at once and whose Run
// runs until the test says it settled.
type fakeHost struct {
	mu      sync.Mutex
	running bool
	clock   *timerClock
}

func (h *fakeHost) Go(fn func())                      { go fn() }
func (h *fakeHost) Post(fn func(d *peer.Driver)) bool { fn(nil); return true }
func (h *fakeHost) Context() context.Context          { return context.Background() }
func (h *fakeHost) Logger() *slog.Logger              { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (h *fakeHost) Drained(*peer.Driver, string)      {}
func (h *fakeHost) WriteBound() time.Duration         { return time.Hour }
func (h *fakeHost) Clock() peer.Clock                 { return h.clock }
func (h *fakeHost) Target(string) (Target, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Target{}, h.running
}

// timerClock is a manual clock that tells the test each timer it makes.
type timerClock struct {
	*peer.ManualClock
	made chan time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) peer.Timer {
	t := c.ManualClock.NewTimer(d)
	c.made <- d
	return t
}

// opening is a Steerer whose Turn opens to input after `closed` calls.
type opening struct {
	mu     sync.Mutex
	closed int
	calls  int
}

func (o *opening) Steer(context.Context, string, string, wire.MessageInput) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.calls <= o.closed {
		return harness.ErrRunInactive
	}
	return nil
}

func newFakeHost() *fakeHost {
	return &fakeHost{running: true, clock: &timerClock{ManualClock: peer.NewManualClock(time.Unix(0, 0)), made: make(chan time.Duration, 8)}}
}

// An input that arrives before the adapter opened its Turn is written once
// it opens (the README's quick start lost one so under load).
func TestSteerWaitsForTheAdapterToOpenTheTurn(t *testing.T) {
	h := newFakeHost()
	s := &opening{closed: 3}
	errc := make(chan error, 1)
	go func() { errc <- steerOnceOpen(context.Background(), h, s, "run", "in-1", wire.MessageInput{}) }()
	var waits []time.Duration
	for range 3 {
		d := <-h.clock.made
		waits = append(waits, d)
		h.clock.Advance(d)
	}
	require.NoError(t, <-errc)
	assert.Equal(t, 4, s.calls, "written on the fourth try")
	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}, waits)
}

// A Run that settles without opening its Turn ends the retries: the input
// is refused run_inactive, with nothing written.
func TestSteerStopsWhenTheRunSettles(t *testing.T) {
	h := newFakeHost()
	s := &opening{closed: 1 << 30}
	errc := make(chan error, 1)
	go func() { errc <- steerOnceOpen(context.Background(), h, s, "run", "in-1", wire.MessageInput{}) }()
	d := <-h.clock.made
	h.mu.Lock()
	h.running = false
	h.mu.Unlock()
	h.clock.Advance(d)
	require.ErrorIs(t, <-errc, harness.ErrRunInactive)
	assert.Equal(t, 2, s.calls)
}

// The write's bound ends the retries too.
func TestSteerStopsAtTheWriteBound(t *testing.T) {
	h := newFakeHost()
	s := &opening{closed: 1 << 30}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- steerOnceOpen(ctx, h, s, "run", "in-1", wire.MessageInput{}) }()
	<-h.clock.made
	cancel()
	require.ErrorIs(t, <-errc, harness.ErrRunInactive)
}

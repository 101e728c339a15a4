package peer

import (
	"errors"
	"sync"
	"time"
)

// Clock is the driver's only source of time. The system clock works under
// testing/synctest; ScaledClock speeds protocol-fixed timers up for tests
// with real processes.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once after d (of this clock's time).
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Conn uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// deadlineTimer is a Timer that can be set for a point of its clock's
// time. A Conn prefers it: a duration computed from a Now read earlier
// moves the deadline by whatever time passed in between, which on a real
// clock is nanoseconds but on ManualClock is whatever a test's Advance
// added meanwhile (a timer armed for 30 s would then never fire at 30 s).
type deadlineTimer interface {
	ResetAt(at time.Time) bool
}

// SystemClock is the real clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time        { return t.t.C }
func (t sysTimer) Stop() bool                 { return t.t.Stop() }
func (t sysTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// TimeScaleEnv must be set to "1" in the environment for ScaledClock to
// accept a factor other than 1: a scaled clock shortens the protocol's
// fixed timers (the 5-minute admission expiry, the 30 s and 15 s receipt
// waits), which is only ever right in a test.
const TimeScaleEnv = "AGENTWIRE_ALLOW_TIME_SCALE"

// ErrTimeScaleNotAllowed is returned by ScaledClock without TimeScaleEnv.
var ErrTimeScaleNotAllowed = errors.New("peer: a time scale other than 1 is a test-only option; set " + TimeScaleEnv + "=1 to allow it")

// ScaledClock returns a clock whose time runs factor times faster than the
// system clock: a 5-minute timer fires after 5m/factor of real time.
// allowed is the caller's reading of TimeScaleEnv; factor 1 is always
// allowed.
func ScaledClock(factor float64, allowed bool) (Clock, error) {
	if factor == 1 {
		return SystemClock(), nil
	}
	if !allowed {
		return nil, ErrTimeScaleNotAllowed
	}
	if factor <= 0 || factor > 1e6 {
		return nil, errors.New("peer: a time scale must be in (0, 1e6]")
	}
	return &scaledClock{start: time.Now(), factor: factor}, nil
}

type scaledClock struct {
	start  time.Time
	factor float64
}

func (c *scaledClock) Now() time.Time {
	real := time.Since(c.start)
	return c.start.Add(time.Duration(float64(real) * c.factor))
}

func (c *scaledClock) NewTimer(d time.Duration) Timer {
	return &scaledTimer{t: time.NewTimer(c.real(d)), c: c}
}

func (c *scaledClock) real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.factor)
}

type scaledTimer struct {
	t *time.Timer
	c *scaledClock
}

func (t *scaledTimer) C() <-chan time.Time        { return t.t.C }
func (t *scaledTimer) Stop() bool                 { return t.t.Stop() }
func (t *scaledTimer) Reset(d time.Duration) bool { return t.t.Reset(t.c.real(d)) }

// ManualClock is a clock that moves only when told (Advance), for tests and
// for the model checker. Its timers fire during Advance.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

// NewManualClock returns a manual clock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now reads the clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and fires every timer due by then.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	var due []*manualTimer
	for _, t := range c.timers {
		if t.armed && !t.at.After(now) {
			t.armed = false
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		select {
		case t.c <- now:
		default:
		}
	}
}

// NewTimer returns a timer that fires when Advance passes now+d.
func (c *ManualClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{clock: c, c: make(chan time.Time, 1), at: c.now.Add(d), armed: true}
	c.timers = append(c.timers, t)
	return t
}

type manualTimer struct {
	clock *ManualClock
	c     chan time.Time
	at    time.Time
	armed bool
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	return t.resetLocked(t.clock.now.Add(d))
}

// ResetAt sets the timer for a point of the clock's time, which a
// duration computed from an earlier Now cannot do once Advance may run in
// between.
func (t *manualTimer) ResetAt(at time.Time) bool {
	t.clock.mu.Lock()
	return t.resetLocked(at)
}

// resetLocked is called with the clock's lock held and releases it.
func (t *manualTimer) resetLocked(at time.Time) bool {
	was := t.armed
	t.at, t.armed = at, true
	fire := !t.at.After(t.clock.now)
	if fire {
		t.armed = false
	}
	t.clock.mu.Unlock()
	if fire {
		select {
		case t.c <- t.at:
		default:
		}
	}
	return was
}

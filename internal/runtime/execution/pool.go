package execution

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/harness"
)

// Policy defaults of the Pool. The protocol leaves idle retention to the
// Runtime (daemon-protocol.txt:118); these are the reference Runtime's.
const (
	// DefaultMaxIdle bounds idle retained Executors, separately from
	// DefaultMaxActive.
	DefaultMaxIdle = 16
	// DefaultIdleTTL is how long an idle Executor waits for a Turn with
	// its configuration before it is closed.
	DefaultIdleTTL = time.Hour
	// DefaultRetryMin and DefaultRetryMax bound the backoff between two
	// attempts to close an Executor whose close failed.
	DefaultRetryMin = time.Second
	DefaultRetryMax = time.Minute
	// DefaultReportEvery is how often a shutdown that waits for owned
	// resources says what it still waits for.
	DefaultReportEvery = 30 * time.Second
	// closeTimeout bounds one native close attempt.
	closeTimeout = 10 * time.Second
)

// PoolConfig configures a Pool; zero fields take the defaults.
type PoolConfig struct {
	Clock       peer.Clock
	Logger      *slog.Logger
	MaxIdle     int
	IdleTTL     time.Duration
	RetryMin    time.Duration
	RetryMax    time.Duration
	ReportEvery time.Duration
}

// Pool holds the native Executors the daemon owns outside any Run or
// admission: healthy idle ones retained for a later Turn with the same
// configuration, and ones whose close failed, kept until a retry
// succeeds. Every close the Pool makes is serialized.
//
// decision: the Pool belongs to the daemon, not to a connection. Routing,
// handles and transfer state are connection-local (daemon-protocol.txt:19),
// but native Executors are the Runtime's until their cleanup settles
// (daemon-protocol.txt:7, :118): a connection that ends neither discards
// a failed close nor closes a healthy idle Executor, and an admission on a
// later connection may reuse it (with a fresh handle; its Executor ID, a
// Runtime resource identity, daemon-protocol.txt:72, stays the same).
type Pool struct {
	cfg PoolConfig

	closeMu sync.Mutex // serializes native closes

	mu       sync.Mutex
	idle     []*owned // oldest first
	failed   []*owned // close failed; owned until a retry succeeds
	closing  *owned   // the close in flight
	shutdown bool     // no Executor is retained any more
	wake     chan struct{}

	drainOnce sync.Once
	drained   chan struct{} // closed when a shutdown closed everything
	drainExit chan struct{} // closed when the shutdown's goroutine returned
}

// owned is one Executor the Pool owns.
type owned struct {
	id        string
	env       string // the Environment it runs in; "" for none
	key       [32]byte
	exe       harness.Executor
	decl      harness.Declaration
	idleUntil time.Time // idle ones: the expiry
	attempts  int       // failed ones: close attempts so far
	nextTry   time.Time // failed ones: when the next attempt is due
	lastErr   error
}

// NewPool returns an empty Pool.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.Clock == nil {
		cfg.Clock = peer.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxIdle == 0 {
		cfg.MaxIdle = DefaultMaxIdle
	}
	if cfg.IdleTTL == 0 {
		cfg.IdleTTL = DefaultIdleTTL
	}
	if cfg.RetryMin == 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.ReportEvery == 0 {
		cfg.ReportEvery = DefaultReportEvery
	}
	return &Pool{cfg: cfg, wake: make(chan struct{}, 1), drained: make(chan struct{}), drainExit: make(chan struct{})}
}

// Idle is an Executor handed out by Take.
type Idle struct {
	ID   string
	Exe  harness.Executor
	Decl harness.Declaration
}

// Take removes and returns an idle Executor retained for key, if one has
// not expired. An expired one is never handed out, even before Maintain
// closed it, so expiry does not depend on a goroutine's timing.
func (p *Pool) Take(key [32]byte) (Idle, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Clock.Now()
	for i, o := range p.idle {
		if o.key == key && now.Before(o.idleUntil) {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return Idle{ID: o.id, Exe: o.exe, Decl: o.decl}, true
		}
	}
	return Idle{}, false
}

// Put retains a healthy Executor idle under key. It reports false when the
// idle bound is reached or shutdown began; the caller then closes it.
//
// decision: a full idle set refuses the newcomer instead of evicting the
// oldest: both are healthy, and refusing needs no close on the caller's
// behalf.
func (p *Pool) Put(key [32]byte, id, env string, exe harness.Executor, decl harness.Declaration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if p.closing != nil && p.closing.attempts == 0 {
		n++ // an expired idle Executor whose close is in flight
	}
	if p.shutdown || n >= p.cfg.MaxIdle {
		return false
	}
	p.idle = append(p.idle, &owned{id: id, env: env, key: key, exe: exe, decl: decl, idleUntil: p.cfg.Clock.Now().Add(p.cfg.IdleTTL)})
	p.poke()
	return true
}

// Retain takes ownership of an Executor (of the Environment env, "" for
// none) whose close failed; it is closed again later, serialized, with
// backoff.
func (p *Pool) Retain(id, env string, exe harness.Executor, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = append(p.failed, &owned{id: id, env: env, exe: exe, attempts: 1, lastErr: err, nextTry: p.cfg.Clock.Now().Add(p.cfg.RetryMin)})
	p.poke()
}

// Held is the number of Executors whose cleanup failed and has not
// succeeded since (a retry in flight included). They count against the
// active bound until it does (daemon-protocol.txt:116).
//
// decision: an idle Executor that expiry is closing counts against the
// idle bound, not the active one, until its close returns: it was never
// active, and only a failed close makes it uncertain.
func (p *Pool) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.failed)
	if p.closing != nil && p.closing.attempts > 0 {
		n++
	}
	return n
}

// HeldIn is Held for the Executors of the Environment env: an Executor
// whose close failed may still be running in env's workspace.
func (p *Pool) HeldIn(env string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, o := range p.failed {
		if o.env == env {
			n++
		}
	}
	if p.closing != nil && p.closing.attempts > 0 && p.closing.env == env {
		n++
	}
	return n
}

// IdleCount is the number of idle retained Executors.
func (p *Pool) IdleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Maintain closes idle Executors as they expire and retries failed closes
// when they are due, until ctx ends or shutdown begins. Its timers are the
// Pool's clock's, so tests move them with a manual clock.
func (p *Pool) Maintain(ctx context.Context) {
	for {
		p.mu.Lock()
		if p.shutdown {
			p.mu.Unlock()
			return
		}
		next, o := p.due()
		p.mu.Unlock()
		if o != nil {
			p.closeOne(ctx, o)
			continue
		}
		var timer peer.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			timer = p.cfg.Clock.NewTimer(next.Sub(p.cfg.Clock.Now()))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-p.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// due takes out the first Executor whose close is due now (an expired idle
// one, or a failed one whose retry is due), or returns when the next one
// will be. Called with p.mu held.
func (p *Pool) due() (time.Time, *owned) {
	now := p.cfg.Clock.Now()
	var next time.Time
	for i, o := range p.idle {
		if !now.Before(o.idleUntil) {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.cfg.Logger.Info("idle executor expired; closing it", "executor_id", o.id)
			p.closing = o
			return time.Time{}, o
		}
		if next.IsZero() || o.idleUntil.Before(next) {
			next = o.idleUntil
		}
	}
	for i, o := range p.failed {
		if !now.Before(o.nextTry) {
			p.failed = append(p.failed[:i], p.failed[i+1:]...)
			p.closing = o
			return time.Time{}, o
		}
		if next.IsZero() || o.nextTry.Before(next) {
			next = o.nextTry
		}
	}
	return next, nil
}

// closeOne closes o (serialized with every other close of the Pool); a
// failure keeps it for a later retry with a doubled backoff.
func (p *Pool) closeOne(ctx context.Context, o *owned) error {
	p.closeMu.Lock()
	cctx, cancel := context.WithTimeout(ctx, closeTimeout)
	err := o.exe.Close(cctx)
	cancel()
	p.closeMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.poke()
	p.closing = nil
	if err == nil {
		if o.attempts > 0 {
			p.cfg.Logger.Info("executor closed on retry", "executor_id", o.id, "attempts", o.attempts+1)
		}
		return nil
	}
	o.attempts++
	o.lastErr = err
	wait := p.cfg.RetryMin
	for i := 1; i < o.attempts && wait < p.cfg.RetryMax; i++ {
		wait *= 2
	}
	wait = min(wait, p.cfg.RetryMax)
	o.nextTry = p.cfg.Clock.Now().Add(wait)
	p.failed = append(p.failed, o)
	p.cfg.Logger.Warn("executor close failed; it stays owned and is retried", "executor_id", o.id, "attempts", o.attempts, "retry_in", wait.String(), "err", err)
	return err
}

// ErrAbandoned is what Shutdown returns when the operator gave up
// Executors whose close had not succeeded.
var ErrAbandoned = errors.New("execution: owned executors were abandoned by the operator")

// BeginShutdown stops retaining Executors: later Puts are refused and
// Maintain returns. Idempotent.
func (p *Pool) BeginShutdown() {
	p.mu.Lock()
	p.shutdown = true
	p.mu.Unlock()
	p.poke()
}

// Shutdown closes every idle Executor and retries every failed close,
// serialized, with backoff on the Pool's clock, until all succeeded (nil)
// or abandon is closed (ErrAbandoned, with every abandoned Executor
// logged). It reports what it still waits for every ReportEvery. Several
// callers may wait on it; the work runs once.
//
// A failure only delays the return: it never authorizes dropping the
// resource (daemon-protocol.txt:118, :162). onFailure, when set, is called
// after each failed attempt.
func (p *Pool) Shutdown(abandon <-chan struct{}, onFailure func(error)) error {
	p.BeginShutdown()
	p.drainOnce.Do(func() {
		p.mu.Lock()
		for _, o := range p.idle {
			o.nextTry = time.Time{}
			p.failed = append(p.failed, o)
		}
		p.idle = nil
		p.mu.Unlock()
		go p.drain(abandon, onFailure)
	})
	select {
	case <-p.drained:
		return nil
	case <-abandon:
		// The close in flight ends with its bounded context.
		<-p.drainExit
		select {
		case <-p.drained:
			return nil
		default:
		}
		p.logAbandoned()
		return ErrAbandoned
	}
}

func (p *Pool) drain(abandon <-chan struct{}, onFailure func(error)) {
	defer close(p.drainExit)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-abandon:
			cancel()
		case <-ctx.Done():
		}
	}()
	report := p.cfg.Clock.Now().Add(p.cfg.ReportEvery)
	for {
		p.mu.Lock()
		if len(p.failed) == 0 && p.closing == nil {
			p.mu.Unlock()
			close(p.drained)
			return
		}
		now := p.cfg.Clock.Now()
		var o *owned
		next := report
		sort.SliceStable(p.failed, func(i, j int) bool { return p.failed[i].nextTry.Before(p.failed[j].nextTry) })
		if len(p.failed) > 0 {
			if !now.Before(p.failed[0].nextTry) {
				o = p.failed[0]
				p.failed = p.failed[1:]
				p.closing = o
			} else if p.failed[0].nextTry.Before(next) {
				next = p.failed[0].nextTry
			}
		}
		p.mu.Unlock()
		if o != nil {
			if err := p.closeOne(ctx, o); err != nil && onFailure != nil {
				onFailure(err)
			}
			continue
		}
		if !now.Before(report) {
			p.cfg.Logger.Warn("shutdown: still waiting for owned executors to close (a second signal or --abandon-after abandons them)", "waiting_for", p.Waiting())
			report = now.Add(p.cfg.ReportEvery)
			continue
		}
		timer := p.cfg.Clock.NewTimer(next.Sub(now))
		select {
		case <-timer.C():
		case <-p.wake:
		case <-ctx.Done():
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

// Waiting names the Executors whose close has not succeeded yet, with
// their attempts and last error, for reports.
func (p *Pool) Waiting() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	parts := make([]string, 0, len(p.failed)+len(p.idle)+1)
	for _, o := range p.failed {
		parts = append(parts, describe(o))
	}
	for _, o := range p.idle {
		parts = append(parts, o.id+" (idle)")
	}
	if p.closing != nil {
		parts = append(parts, describe(p.closing)+" (closing)")
	}
	return strings.Join(parts, ", ")
}

func describe(o *owned) string {
	if o.lastErr == nil {
		return o.id
	}
	return fmt.Sprintf("%s (%d failed closes, last: %s)", o.id, o.attempts, boundedError(o.lastErr))
}

func (p *Pool) logAbandoned() {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := append(append([]*owned{}, p.failed...), p.idle...)
	if p.closing != nil {
		all = append(all, p.closing)
	}
	for _, o := range all {
		p.cfg.Logger.Error("shutdown: executor abandoned by the operator; its native resources may still exist", "executor_id", o.id, "failed_closes", o.attempts)
	}
}

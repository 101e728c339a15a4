package daemon

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/connection"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution"
)

// Shutdown: the process keeps the native Executors it owns until their
// close succeeded (daemon-protocol.txt:118). A stop signal (the Run's
// context) or Core's device_shutdown moves the connection machine to
// shutting_down; its close_executors effect cancels the Runs and closes
// what the admissions hold while the transport stays open and heartbeats
// go on, then the Pool closes the idle Executors and retries failed closes,
// serialized with backoff. cleanup_settled closes the transport and Run
// returns nil. Only Config.Abandon or Config.AbandonAfter (an operator's
// choice) gives up what is still owned; Run then returns ErrAbandoned.

// ErrAbandoned is Run's result when the operator abandoned Executors whose
// close had not succeeded.
var ErrAbandoned = execution.ErrAbandoned

// errCoreShutdown ends the reconnect loop after Core's device_shutdown.
var errCoreShutdown = errors.New("daemon: Core asked the Runtime to shut down")

// shutdown is the process-wide shutdown state of one Run.
type shutdown struct {
	cfg     Config
	pool    *execution.Pool
	once    sync.Once
	begun   chan struct{} // closed when shutdown began
	abandon chan struct{} // closed when the operator gave up owned resources
	done    chan struct{} // closed when Run returns
}

func newShutdown(cfg Config, pool *execution.Pool) *shutdown {
	return &shutdown{cfg: cfg, pool: pool, begun: make(chan struct{}), abandon: make(chan struct{}), done: make(chan struct{})}
}

// begin marks the start of shutdown (idempotent) and arms the operator's
// abandonment: the Abandon channel, or AbandonAfter on the clock.
func (s *shutdown) begin(why string) {
	s.once.Do(func() {
		s.cfg.Logger.Info("shutdown: closing active and idle executors; only an operator's choice abandons what is still owned", "why", why)
		s.pool.BeginShutdown()
		close(s.begun)
		go s.watchAbandon()
	})
}

// watchAbandon closes abandon on the operator's choice, or returns with Run.
func (s *shutdown) watchAbandon() {
	var after <-chan time.Time
	if s.cfg.AbandonAfter > 0 {
		t := s.cfg.Clock.NewTimer(s.cfg.AbandonAfter)
		defer t.Stop()
		after = t.C()
	}
	select {
	case <-s.cfg.Abandon:
		s.cfg.Logger.Warn("shutdown: the operator abandons owned executors whose close has not succeeded (second signal)")
	case <-after:
		s.cfg.Logger.Warn("shutdown: the operator abandons owned executors whose close has not succeeded (--abandon-after elapsed)", "after", s.cfg.AbandonAfter)
	case <-s.done:
		return
	}
	close(s.abandon)
}

// stop ends watchAbandon when Run returns.
func (s *shutdown) stop() { close(s.done) }

// finish waits until the Pool closed everything or the operator abandoned.
func (s *shutdown) finish() error {
	err := s.pool.Shutdown(s.abandon, nil)
	if err == nil {
		s.cfg.Logger.Info("shutdown: every owned executor closed")
	}
	return err
}

// closeExecutors is the connection machine's close_executors: the Session
// settles what it holds, then the Pool closes the rest; each failed round
// fires cleanup_failed (retain_failed_targets), success cleanup_settled
// (which closes the transport), and an abandonment closes the transport.
func (h *connHooks) closeExecutors() {
	h.down.begin("shutdown requested")
	conn, key := h.conn, peer.Key{Machine: connection.Table.Name}
	local := func(e connection.Event) {
		_ = conn.Do(context.Background(), func(d *peer.Driver) { _ = d.Local(key, fsm.EventID(e), nil) })
	}
	h.sess.Shutdown(func() {
		go func() {
			err := h.down.pool.Shutdown(h.down.abandon, func(error) { local(connection.EventCleanupFailed) })
			if err != nil {
				_ = conn.Close()
				return
			}
			local(connection.EventCleanupSettled)
		}()
	})
}

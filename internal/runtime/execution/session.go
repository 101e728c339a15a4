// Package execution holds the Runtime's hooks for execution admission
// (fsm/preparation) and Runs (fsm/run) on one physical connection. The
// driver (peer) routes frames and steps the generated machines; this
// package only evaluates guards, builds the frames the machines ask for and
// starts native work, which runs on goroutines and reports back through the
// connection's loop (Session.post), never inside the receive loop
// (daemon-protocol.txt:116).
package execution

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/machines"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/export"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/input"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/interaction"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/read"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/suspend"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/transfer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/write"
	rtransfer "github.com/agentwire/agentwire/internal/runtime/transfer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// AdmissionTTL is how long a granted admission stays valid; retries never
// extend it (daemon-protocol.txt:116).
const AdmissionTTL = 5 * time.Minute

// DefaultMaxActive bounds active preparations and executions (closing or
// uncertain ones included) on one connection, as the reference's
// preparationCapacity.
const DefaultMaxActive = 4

// Config is what a Session needs.
type Config struct {
	Registry *harness.Registry
	Clock    peer.Clock
	Logger   *slog.Logger
	// MaxActive bounds active preparation and execution; 0 takes DefaultMaxActive.
	MaxActive int
	// Environments are the Environments this Runtime serves, each with
	// its workspace (bindings.go). A request naming any other Environment
	// is refused before any work; nil binds none.
	Environments *Bindings
	// NewID mints Executor IDs and admission handles; nil uses random hex.
	NewID func(prefix string) string
	// Area is where runtime_prepare bodies are staged and bundles
	// installed; nil rejects every body runtime_preparation_unsupported.
	Area *rtransfer.Area
	// Fence is the daemon's suspension state, shared by its connections;
	// nil gives this Session a fence of its own.
	Fence *Fence
	// Pool holds the daemon's idle and not-yet-closed Executors across
	// connections; nil gives the Session a Pool of its own. Whoever makes
	// the Pool runs its Maintain (idle expiry, close retries) and, at the
	// end, its Shutdown: a Session never closes what the Pool owns.
	Pool *Pool
}

// Session is the execution state of one physical connection: admission
// records, Runs and the capacity they hold. Each connection gets a new
// Session; nothing is carried over (daemon-protocol.txt:19). Its fields are
// touched only on the connection's loop goroutine (hooks and post).
type Session struct {
	cfg  Config
	conn *peer.Conn

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	admissions map[string]*admission // by preparation request ID
	runs       map[string]*runState  // by Run ID
	asks       *interaction.Book     // the questions of the Runs (internal/interaction)
	inputs     *input.Book           // the active inputs of the Runs (internal/input)
	active     int                   // slots held by preparations, executions and unconfirmed cleanup

	reads *read.Reads // the workspace read lifecycle (internal/read)

	xfer      *transfer.Transfer // the transfer lifecycle (internal/transfer)
	fence     *Fence
	susp      *suspend.Quiesce // the suspension lifecycle (internal/suspend)
	shutting  bool             // Shutdown began: nothing new is admitted
	onSettled func()           // called once when shutting and nothing is active

	wr  *write.Write   // the workspace write lifecycle (internal/write)
	exp *export.Export // the workspace export lifecycle (internal/export)
}

// New returns a Session for one connection.
func New(cfg Config) *Session {
	if cfg.Clock == nil {
		cfg.Clock = peer.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxActive == 0 {
		cfg.MaxActive = DefaultMaxActive
	}
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	if cfg.Fence == nil {
		cfg.Fence = NewFence()
	}
	if cfg.Pool == nil {
		cfg.Pool = NewPool(PoolConfig{Clock: cfg.Clock, Logger: cfg.Logger})
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{cfg: cfg, ctx: ctx, cancel: cancel, admissions: map[string]*admission{}, runs: map[string]*runState{},
		fence: cfg.Fence}
	s.exp = export.New(exportHost{loop{s}})
	s.reads = read.New(readHost{loop{s}})
	s.asks = interaction.New(interactionHost{loop{s}})
	s.inputs = input.New(inputHost{loop{s}})
	s.wr = write.New(writeHost{loop{s}})
	s.xfer = transfer.New(xferHost{loop{s}})
	s.susp = suspend.New(suspHost{s}, cfg.Fence)
	return s
}

func randomID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Attach binds the Session to the Conn that runs its driver; call it before
// Conn.Run.
func (s *Session) Attach(c *peer.Conn) { s.conn = c }

// Active is the number of active Runs, for the heartbeat.
func (s *Session) Active() int {
	n := 0
	for _, r := range s.runs {
		if !r.settled {
			n++
		}
	}
	return n
}

// Close cancels native work still running for this connection and waits
// for every goroutine the Session started (native work settles first); the
// staging of a transfer the connection still held is removed.
func (s *Session) Close() {
	s.cancel()
	s.wg.Wait()
	s.xfer.Close()
}

// Binding returns the Session's binding of machine, or nil (the
// connection machine is the daemon's).
func (s *Session) Binding(machine string) fsm.Binding[*peer.Event] {
	return s.Hooks().Binding(machine)
}

// Hooks returns the Session's hooks of every connection machine but the
// connection's own, which the daemon adds.
func (s *Session) Hooks() machines.RuntimeHooks[*peer.Event] {
	return machines.RuntimeHooks[*peer.Event]{
		Preparation:     prepHooks{s},
		Run:             runHooks{s},
		Input:           s.inputs.Hooks(),
		Interaction:     s.asks.Hooks(),
		WorkspaceRead:   s.reads.Hooks(),
		Transfer:        s.xfer.Hooks(),
		Suspension:      s.susp.Hooks(),
		WorkspaceWrite:  s.wr.Hooks(),
		WorkspaceExport: s.exp.Hooks(),
	}
}

// loop is the Session as every lifecycle module's Host sees its
// connection (internal/conn.Loop); the hosts embed it.
type loop struct{ s *Session }

func (l loop) Go(fn func())                      { l.s.goNative(fn) }
func (l loop) Post(fn func(d *peer.Driver)) bool { return l.s.post(fn) }
func (l loop) Context() context.Context          { return l.s.ctx }
func (l loop) Logger() *slog.Logger              { return l.s.cfg.Logger }

// go runs fn on a goroutine the Session waits for.
func (s *Session) goNative(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// post runs fn on the connection's loop. It reports false when the
// connection is gone, in which case fn did not run.
func (s *Session) post(fn func(d *peer.Driver)) bool {
	if s.conn == nil {
		return false
	}
	err := s.conn.Do(context.Background(), fn)
	return err == nil
}

// send queues a frame from a hook or a posted func; failures are the
// machine's (failed-send events) and are logged by the driver.
func send(d *peer.Driver, id string, p wire.Payload) {
	d.Send(peer.Outbound{ID: id, Payload: p}, nil)
}

// closeExecutor closes exe (of the Environment env, "" for none) outside
// the loop, then frees its slot and calls then on the loop (when the
// connection still runs). A failed close hands the Executor to the Pool,
// which keeps it owned, counts it against the active bound and retries it
// later (daemon-protocol.txt:116, :118).
func (s *Session) closeExecutor(id, env string, exe harness.Executor, then func(d *peer.Driver, err error)) {
	s.goNative(func() {
		var err error
		if exe != nil {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			err = exe.Close(ctx)
			cancel()
		}
		if err != nil {
			s.cfg.Logger.Warn("executor close failed; it stays owned", "executor_id", id, "err", err)
			s.cfg.Pool.Retain(id, env, exe, err)
		}
		s.post(func(d *peer.Driver) {
			s.freeSlot()
			if then != nil {
				then(d, err)
			}
		})
	})
}

// busy reports whether the active bound is reached: active preparations
// and executions, closes in flight and Executors whose cleanup failed.
func (s *Session) busy() bool {
	return s.active+s.cfg.Pool.Held() >= s.cfg.MaxActive
}

// freeSlot gives back one active slot (on the loop).
func (s *Session) freeSlot() {
	s.active--
	s.checkSettled()
}

func (s *Session) checkSettled() {
	if s.shutting && s.active <= 0 && s.onSettled != nil {
		f := s.onSettled
		s.onSettled = nil
		f()
	}
}

// Shutdown (on the loop) admits nothing more, cancels the running Runs and
// closes what the admissions hold, with the transport still open so the
// Runs' last frames reach Core. settled is called on the loop once nothing
// is active any more; Executors whose close failed are the Pool's by then.
func (s *Session) Shutdown(settled func()) {
	s.shutting = true
	s.onSettled = settled
	for _, r := range s.runs {
		if !r.settled {
			r.stopped = true
			r.cancel()
		}
	}
	for _, a := range s.admissions {
		if !a.transferred {
			s.settle(a, nil)
		}
	}
	s.checkSettled()
}

var errConnectionGone = errors.New("execution: the connection is gone")

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/connection"
	"github.com/agentwire/agentwire/fsm/machines"
	"github.com/agentwire/agentwire/fsm/suspension"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution"
	rtransfer "github.com/agentwire/agentwire/internal/runtime/transfer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Version is agentwire's own daemon version: what heartbeats and the
// bootstrap User-Agent report when Config.Version is empty.
const Version = "0.1.0"

// Config configures the daemon. Only CoreURL, DeviceID, Credential and
// Registry are required; every other field has a working default.
type Config struct {
	// CoreURL is Core's base URL (http or https); bootstrap and the
	// WebSocket both go there.
	CoreURL string
	// DeviceID names this Runtime; Credential is the device credential
	// Core issued for it. With Credential empty, Run reads it from
	// CredentialFile (ReadCredentialFile), and a file it cannot use is a
	// *Permanent error.
	DeviceID       string
	Credential     Credential
	CredentialFile string
	// Registry holds the Harnesses this Runtime runs, one per agent kind.
	Registry *harness.Registry
	// Harnesses are registered by Run before it connects, into Registry
	// (a new one when Registry is nil); a declaration the registry refuses
	// stops Run with its error. Either field, or both, may name them.
	Harnesses []harness.Adapter
	// Logger receives the daemon's logs (default slog.Default()).
	Logger *slog.Logger
	// HTTPClient makes every connection to Core: the bootstrap request
	// and the WebSocket upgrade go through its Transport, so a custom
	// dialer, proxy or TLS configuration set there (an *http.Transport's
	// DialContext, Proxy, TLSClientConfig) applies to both. Its Timeout
	// bounds each request (bootstrap, the upgrade handshake), never the
	// open WebSocket. Default: an http.Client with a 30 s timeout.
	HTTPClient *http.Client
	// Version is the embedder's own version, reported as daemon_version
	// in every heartbeat and in the bootstrap User-Agent
	// ("agentwire-daemon/VERSION"); default Version.
	Version string
	// Clock drives timers and heartbeats (default the system clock).
	Clock harness.Clock
	// MinBackoff and MaxBackoff bound the wait before a reconnection
	// (defaults 500 ms and 30 s); each wait is drawn with full jitter.
	MinBackoff, MaxBackoff time.Duration
	// MaxActive bounds active preparation and execution per connection.
	MaxActive int
	// MaxIdle bounds idle retained Executors and IdleTTL is how long one
	// waits for a Turn with its configuration (local policy,
	// daemon-protocol.txt:118); zero takes execution.DefaultMaxIdle and
	// execution.DefaultIdleTTL.
	MaxIdle int
	IdleTTL time.Duration
	// Abandon, when closed after shutdown began, gives up the Executors
	// whose close has not succeeded (an operator's second signal);
	// AbandonAfter, when positive, does the same that long after shutdown
	// began (--abandon-after). Without either, shutdown waits as long as
	// it takes (daemon-protocol.txt:118).
	Abandon      <-chan struct{}
	AbandonAfter time.Duration
	// ShutdownReport is how often a waiting shutdown logs what it waits
	// for (default execution.DefaultReportEvery); RetryMin bounds the
	// first wait before a failed close is retried (default
	// execution.DefaultRetryMin, doubling up to a minute).
	ShutdownReport time.Duration
	RetryMin       time.Duration
	// Environments are the Environment bindings this daemon serves
	// (--environment ID=DIR, repeatable): each Core-minted Environment ID
	// with its own workspace directory. Execution, workspace reads, writes
	// and exports, runtime_prepare file installs and suspension fencing
	// each use the workspace of the Environment they name, and anything
	// naming another Environment is refused before any work; nil binds
	// none. The caller owns it (and closes it after Run returns).
	Environments *Bindings
	// StateDir (--state) holds transfer staging and installed skills and
	// plugins; "" uses a temporary directory removed when Run returns.
	StateDir string

	// onConnected, when set, is called with each new connection's Conn
	// (this package's tests observe the driver with it: export_test.go).
	onConnected func(*peer.Conn)
}

// Bindings are the Environment bindings a daemon serves: each Core-minted
// Environment ID with its own workspace directory.
type Bindings struct{ b *execution.Bindings }

// NewBindings returns an empty set of bindings.
func NewBindings() *Bindings { return &Bindings{b: execution.NewBindings()} }

// Add binds Environment env (the ID Core minted, a lower-case UUID) to
// the workspace directory dir; a bad ID or directory, or a second binding
// of env, is refused with the reason.
func (b *Bindings) Add(env, dir string) error { return b.inner().Add(env, dir) }

// IDs lists the bound Environment IDs, sorted.
func (b *Bindings) IDs() []string { return b.inner().IDs() }

// Close releases every bound directory; the caller closes the bindings
// after Run returns.
func (b *Bindings) Close() error { return b.inner().Close() }

// inner is nil for a nil set, which binds nothing.
func (b *Bindings) inner() *execution.Bindings {
	if b == nil {
		return nil
	}
	return b.b
}

// Tables are the machines the daemon drives.
func Tables() []*fsm.Table { return machines.RuntimeTables() }

// Run connects and serves until a permanent refusal (*Permanent), or
// until ctx ends or Core sends device_shutdown and every Executor the
// daemon owns closed (nil) or the operator abandoned them (ErrAbandoned).
// Transient failures reconnect after a jittered backoff; once shutdown
// began, nothing reconnects.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Clock == nil {
		cfg.Clock = peer.SystemClock()
	}
	if cfg.Version == "" {
		cfg.Version = Version
	}
	if err := checkVersion(cfg.Version); err != nil {
		return err
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.Registry == nil && len(cfg.Harnesses) > 0 {
		cfg.Registry = harness.NewRegistry()
	}
	if cfg.Registry == nil {
		return errors.New("daemon: no Harness: set Config.Harnesses or Config.Registry")
	}
	for _, a := range cfg.Harnesses {
		if err := cfg.Registry.Register(a); err != nil {
			return fmt.Errorf("daemon: Config.Harnesses: %w", err)
		}
	}
	if cfg.Credential.Empty() && cfg.CredentialFile != "" {
		c, err := ReadCredentialFile(cfg.CredentialFile, cfg.DeviceID)
		if err != nil {
			return &Permanent{What: err.Error(), Fix: "pass the file agentwire core credential issue --kind device wrote for this device, readable by its owner only"}
		}
		cfg.Credential = c
	}
	if cfg.Credential.Empty() {
		return &Permanent{What: "no credential", Fix: "pass --credential-file with the daemon credential"}
	}
	if cfg.Environments.inner().Len() == 0 {
		cfg.Logger.Warn("no Environment is bound (--environment ID=DIR): everything naming an Environment is refused; only Environment-none Turns run")
	} else {
		cfg.Logger.Info("serving environments", "environments", strings.Join(cfg.Environments.inner().IDs(), ","))
	}
	area, err := rtransfer.NewArea(cfg.StateDir)
	if err != nil {
		return &Permanent{What: err.Error(), Fix: "pass a writable --state directory"}
	}
	defer area.Close()
	pool := execution.NewPool(execution.PoolConfig{Clock: cfg.Clock, Logger: cfg.Logger, MaxIdle: cfg.MaxIdle, IdleTTL: cfg.IdleTTL,
		ReportEvery: cfg.ShutdownReport, RetryMin: cfg.RetryMin})
	down := newShutdown(cfg, pool)
	defer down.stop()
	maintCtx, stopMaint := context.WithCancel(context.Background())
	maintained := make(chan struct{})
	go func() {
		defer close(maintained)
		pool.Maintain(maintCtx)
	}()
	defer func() {
		stopMaint()
		<-maintained
	}()
	// The suspension fence and the Executor pool outlive connections;
	// transfers do not.
	fence := execution.NewFence()
	attempt := 0
	replaced := 0 // connections in a row Core replaced with a newer one
	for {
		live, err := connectOnce(ctx, cfg, shared{area: area, fence: fence, pool: pool, down: down})
		if ctx.Err() != nil || errors.Is(err, errCoreShutdown) {
			// decision: a permanent refusal ends the daemon at once, with
			// nothing owned left behind only if nothing was; a shutdown
			// waits for what the daemon still owns (daemon-protocol.txt:118).
			down.begin("the process is stopping")
			return down.finish()
		}
		var perm *Permanent
		if errors.As(err, &perm) {
			cfg.Logger.Error("permanent refusal; not reconnecting", "what", perm.What, "fix", perm.Fix)
			// Executors an earlier connection left (idle or not yet
			// closed) are still the daemon's to close (daemon-protocol.txt:118).
			down.begin("permanent refusal")
			if ferr := down.finish(); ferr != nil {
				return errors.Join(perm, ferr)
			}
			return perm
		}
		// decision: a connection replaced by a newer one of the same device
		// is another daemon using this device ID (or this one's own
		// reconnect racing a slow close). Each replacement in a row doubles
		// the wait, so two daemons sharing an ID stop evicting each other
		// several times a second, and both say so.
		if errors.Is(err, errReplaced) {
			replaced++
		} else if live {
			replaced = 0
		}
		if live && replaced == 0 {
			attempt = 0
		}
		wait := backoff(cfg.MinBackoff, cfg.MaxBackoff, attempt+replaced)
		attempt++
		if replaced > 0 {
			cfg.Logger.Warn("another daemon is using this device ID: Core replaced this connection with a newer one of the same device; if this Runtime was not restarted, two Runtimes share --device-id",
				"device_id", cfg.DeviceID, "replaced_in_a_row", replaced, "retry_in", wait.String())
		} else {
			cfg.Logger.Warn("connection ended; reconnecting", "err", err, "retry_in", wait.String())
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			// Stopping between connections still closes what earlier
			// connections left owned (daemon-protocol.txt:118).
			t.Stop()
			down.begin("the process is stopping")
			return down.finish()
		case <-t.C:
		}
	}
}

// checkVersion refuses a Config.Version that cannot travel in the
// User-Agent header: net/http would refuse every bootstrap with it, and the
// daemon would retry a request that can never be sent.
func checkVersion(v string) error {
	if len(v) > 64 {
		return fmt.Errorf("daemon: Config.Version is longer than 64 bytes")
	}
	for _, r := range v {
		if r <= ' ' || r > '~' {
			return fmt.Errorf("daemon: Config.Version %q holds a space or a character outside printable ASCII", v)
		}
	}
	return nil
}

// backoff draws the wait before reconnection attempt n with full jitter.
func backoff(minW, maxW time.Duration, n int) time.Duration {
	ceil := minW
	for i := 0; i < n && ceil < maxW; i++ {
		ceil *= 2
	}
	ceil = min(ceil, maxW)
	return minW/2 + rand.N(ceil-minW/2+1)
}

// shared is what the daemon's connections share: the transfer area, the
// suspension fence, the Executor pool and the shutdown in progress.
type shared struct {
	area  *rtransfer.Area
	fence *execution.Fence
	pool  *execution.Pool
	down  *shutdown
}

// connectOnce runs one physical connection: bootstrap, dial, serve. live
// reports whether the upgrade was accepted (the backoff then restarts).
func connectOnce(ctx context.Context, cfg Config, sh shared) (live bool, err error) {
	sess := execution.New(execution.Config{Registry: cfg.Registry, Clock: cfg.Clock, Logger: cfg.Logger, MaxActive: cfg.MaxActive,
		Environments: cfg.Environments.inner(), Area: sh.area, Fence: sh.fence, Pool: sh.pool})
	down := sh.down
	defer sess.Close()
	ch := &connHooks{cfg: cfg, sess: sess, down: down}
	app := &app{conn: ch, sess: sess}
	b, err := bootstrap(ctx, cfg.HTTPClient, cfg.CoreURL, cfg.DeviceID, cfg.Credential, cfg.Version)
	if err != nil {
		return false, err
	}
	pcfg := peer.Config{
		Role: fsm.RoleRuntime, Tables: Tables(), Router: peer.MustCatalogRouter(Tables()), App: app,
		Clock: cfg.Clock, Logger: cfg.Logger, Label: cfg.DeviceID,
	}
	if b.HeartbeatSeconds < 0 || b.HeartbeatSeconds > MaxHeartbeatSeconds {
		// A value no clock can use (a huge one overflows the interval and
		// would spin); Core's answer is the operator's to correct.
		return false, &Permanent{What: fmt.Sprintf("bootstrap's heartbeat_seconds %d is outside 1..%d", b.HeartbeatSeconds, MaxHeartbeatSeconds),
			Fix: "check Core's heartbeat interval"}
	}
	if b.HeartbeatSeconds > 0 {
		// decision: the interval bootstrap returned replaces the 15 s policy
		// default (daemon-protocol.txt:14).
		pcfg.Durations = map[string]time.Duration{"connection.heartbeat_interval": time.Duration(b.HeartbeatSeconds) * time.Second}
	}
	var d *peer.Driver
	pcfg.Saver = func(moved []*peer.Instance) {
		for _, i := range moved {
			if i.Key.Machine == suspension.Table.Name {
				sh.fence.Save(d.Save(i), i.Terminal())
			}
		}
	}
	d, err = peer.New(pcfg)
	if err != nil {
		return false, err
	}
	// decision: a suspension attempt may be resumed on a later connection
	// (daemon-protocol.txt:78, persisted fencing), so its instance is
	// restored into each new driver; nothing else is carried over.
	if err := d.Restore(sh.fence.Saved()); err != nil {
		return false, err
	}
	key := peer.Key{Machine: connection.Table.Name}
	target, err := dialURL(cfg.CoreURL, b, cfg.DeviceID)
	if err != nil {
		return false, err
	}
	// decision: bootstrap and the dial are blocking native calls, so the
	// supervisor makes them itself and reports them to the connection
	// machine as local events; dial_websocket has nothing left to do.
	ws, err := dial(ctx, cfg.HTTPClient, target, cfg.Credential)
	if err != nil {
		return false, err
	}
	conn := peer.NewConn(d, peer.WebSocket(ws), peer.ConnConfig{})
	sess.Attach(conn)
	ch.conn = conn
	// The connection's lifecycle starts with local events (bootstrap, dial),
	// so its one instance is opened before they fire.
	if _, err := d.Open(key); err != nil {
		_ = ws.CloseNow()
		return false, err
	}
	for _, e := range []connection.Event{connection.EventBootstrapRequested, connection.EventBootstrapOk, connection.EventUpgradeAccepted} {
		if err := d.Local(key, fsm.EventID(e), nil); err != nil {
			_ = ws.CloseNow()
			return false, err
		}
	}
	if cfg.onConnected != nil {
		cfg.onConnected(conn)
	}
	cfg.Logger.Info("connected", "device_id", cfg.DeviceID)
	// The connection outlives the stop request: the Runtime closes its
	// Executors with the transport open and heartbeating, and closes it
	// once they closed (connection.yaml, shutting_down). Only the
	// operator's abandonment ends it early.
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	go func() {
		select {
		case <-ctx.Done():
			_ = conn.Do(context.Background(), func(d *peer.Driver) {
				_ = d.Local(key, fsm.EventID(connection.EventOperatorShutdown), nil)
			})
		case <-conn.Done():
		}
	}()
	go func() {
		select {
		case <-down.abandon:
			stopRun()
		case <-conn.Done():
		}
	}()
	runErr := conn.Run(runCtx)
	if ch.shutdown {
		return true, errCoreShutdown
	}
	if peer.CloseStatus(runErr) == peer.StatusRetired {
		// decision: 4001 is permanent (wire-reference §1): the credential
		// was revoked or the device retired, which only an operator can
		// correct (daemon-protocol.txt:165), so the daemon never reconnects.
		// The connection is already closed; Run settles what the daemon
		// still owns as a shutdown does (this Session's Runs are cancelled
		// and their Executors closed when connectOnce returns, the Pool's
		// idle and failed ones by the shutdown) and then exits non-zero.
		return true, &Permanent{What: "Core closed the connection with 4001: the daemon credential was revoked or this Runtime (device) was retired or deleted",
			Fix: "register the device again (a new credential) before restarting the daemon"}
	}
	if peer.CloseStatus(runErr) == peer.StatusReplaced {
		return true, errReplaced
	}
	if runErr == nil {
		runErr = errors.New("the connection closed")
	}
	return true, fmt.Errorf("connection: %w", runErr)
}

// errReplaced is a connection Core closed because a newer one of the same
// device arrived (daemon-protocol.txt:19: the newer wins).
var errReplaced = errors.New("Core replaced this connection with a newer one of the same device")

// app composes the connection hooks with the execution Session; the
// Session drops its records of the instances the driver forgets.
var _ peer.Forgetter = (*app)(nil)

// app composes the connection hooks with the execution Session.
type app struct {
	conn *connHooks
	sess *execution.Session
}

func (a *app) Binding(machine string) fsm.Binding[*peer.Event] {
	hooks := a.sess.Hooks()
	hooks.Connection = a.conn
	return hooks.Binding(machine)
}

func (a *app) Refused(r *peer.Refusal)             { a.sess.Refused(r) }
func (a *app) Stepped(ev *peer.Event, st fsm.Step) { a.sess.Stepped(ev, st) }
func (a *app) Forgot(i *peer.Instance)             { a.sess.Forgot(i) }

// connHooks are the Runtime's hooks of the connection machine.
type connHooks struct {
	cfg      Config
	sess     *execution.Session
	conn     *peer.Conn
	down     *shutdown
	shutdown bool // close_executors ran: the daemon does not reconnect
}

func (h *connHooks) heartbeat() wire.Heartbeat {
	return wire.Heartbeat{
		// decision: ts in Unix seconds, as the reference daemon sends it
		// (wire-reference.md §2.3); a Core reads it as information only and
		// takes any integer, seconds or milliseconds (wire.Heartbeat.TS).
		TS: h.cfg.Clock.Now().Unix(), ActiveRequests: h.sess.Active(),
		DaemonVersion: h.cfg.Version, SupportedAgentKinds: h.cfg.Registry.Kinds(),
	}
}

// GuardValidDeclaration checks the heartbeat this Runtime is about to send.
func (h *connHooks) GuardValidDeclaration(f *fsm.Firing[*peer.Event]) bool {
	hb, ok := f.Arg.Msg.Payload.(wire.Heartbeat)
	return ok && hb.Validate() == nil
}

// SendHeartbeat declares every registered kind with its full capabilities.
func (h *connHooks) SendHeartbeat(f *fsm.Firing[*peer.Event]) error {
	f.Arg.Driver().Send(peer.Outbound{Payload: h.heartbeat()}, nil)
	return nil
}

func (h *connHooks) DoDialWebsocket(*fsm.Firing[*peer.Event]) error { return nil }

func (h *connHooks) DoCloseTransport(*fsm.Firing[*peer.Event]) error {
	if h.conn != nil {
		go func() { _ = h.conn.Close() }()
	}
	return nil
}

// DoDropConnectionState: the Session dies with the connection (connectOnce
// closes it), so nothing of it reaches the next one.
func (h *connHooks) DoDropConnectionState(*fsm.Firing[*peer.Event]) error { return nil }

// DoRequireOperator: the supervisor turns the refusal into *Permanent.
func (h *connHooks) DoRequireOperator(*fsm.Firing[*peer.Event]) error { return nil }

// DoCloseExecutors starts the shutdown of what the daemon owns (a stop
// request or Core's device_shutdown).
func (h *connHooks) DoCloseExecutors(*fsm.Firing[*peer.Event]) error {
	h.shutdown = true
	h.closeExecutors()
	return nil
}

// DoRetainFailedTargets: the Pool already keeps every failed close and
// schedules its serialized retry; the machine stays in shutting_down.
func (h *connHooks) DoRetainFailedTargets(*fsm.Firing[*peer.Event]) error {
	h.cfg.Logger.Warn("shutdown: an executor close failed; it stays owned and is retried", "waiting_for", h.down.pool.Waiting())
	return nil
}

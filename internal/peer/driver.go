package peer

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// App is the embedding peer: Core or the Runtime daemon.
type App interface {
	// Binding returns the peer's binding of a machine for the driver's
	// role, e.g. preparation.Runtime(hooks). It is asked once per machine.
	Binding(machine string) fsm.Binding[*Event]
	// Refused is told about every inbound frame the driver could not apply:
	// it failed to decode, addressed no instance, or a machine refused it.
	// The app answers where the frame's family defines a reply (a typed
	// rejection receipt); the driver has already logged and counted it.
	Refused(r *Refusal)
}

// Observer is implemented by an App that keeps records from the frames its
// instances accept (the highest revision applied, a fingerprint, the
// delivery ID of a cancellation): guards only read, so this is where the
// reading material is written. Stepped is called after every step, before
// the step's effects run; a rejected step (s.Disposition() == fsm.Rejected)
// must not leave a record.
type Observer interface {
	Stepped(ev *Event, s fsm.Step)
}

// Forgetter is implemented by an App that keeps records of instances
// outside Instance.Data (by their wire identity, for work that outlives a
// step). Forgot is called, on the driver's goroutine, when the driver
// forgets a settled instance: evicted to make room at its machine's limit,
// or past its Retention. The App drops its record then, so that a
// long-lived connection keeps per instance no more than the driver does; a
// later frame for that identity meets a fresh instance, as one that was
// never seen. Instances dropped without having moved (a refused first
// frame) are not reported, and neither are the instances that end with the
// connection.
type Forgetter interface {
	Forgot(i *Instance)
}

// Config is what a Driver needs. Role, Tables, Router and App are required.
type Config struct {
	Role   fsm.Role
	Tables []*fsm.Table
	Router Router
	App    App
	// Clock defaults to the system clock.
	Clock Clock
	// Logger defaults to slog.Default(). Every step is logged at Debug;
	// refusals at Warn. Credentials never reach the driver.
	Logger *slog.Logger
	// Label names the connection in logs (a device ID, never a credential).
	Label string
	// Limits bound the registry; the zero value takes DefaultLimits.
	Limits Limits
	// Durations overrides timer durations the protocol text leaves to local
	// policy (timers the spec marks policy: true), keyed "machine.timer"
	// (e.g. "transfer.transfer_budget"). Overriding a timer the protocol
	// fixes (the 5-minute admission expiry, the 30 s and 15 s receipt waits)
	// is refused; only a test clock (ScaledClock) changes those.
	Durations map[string]time.Duration
	// LostEvents names, per machine, the local event that connection loss
	// fires, over DefaultLostEvents; machines in neither use an event named
	// connection_lost when they declare one.
	LostEvents map[string]string
	// Saver, when set, is told after every delivery which instances moved,
	// so that a peer with durable instances can save them.
	Saver func(moved []*Instance)
}

// Limits bound what one connection can make the driver hold.
type Limits struct {
	// MaxInstances bounds the live and retained instances of one machine;
	// PerMachine overrides it (e.g. 64 admission records, line 116).
	MaxInstances int
	PerMachine   map[string]int
	// Retention is how long a settled instance is kept, so that a late or
	// duplicate frame meets the table's answer for a settled instance rather
	// than "unknown instance".
	Retention time.Duration
	// MaxPendingSends bounds the sends queued and not yet written.
	MaxPendingSends int
}

// DefaultLostEvents are the connection-loss events of the machines that do
// not call theirs connection_lost.
var DefaultLostEvents = map[string]string{"connection": "transport_lost"}

// DefaultLimits are the limits of a zero Limits.
var DefaultLimits = Limits{
	MaxInstances:    1024,
	PerMachine:      map[string]int{"preparation": 64},
	Retention:       time.Minute,
	MaxPendingSends: 256,
}

// Driver owns the machine instances of one physical connection for one
// role. It is not safe for concurrent use: one goroutine (Conn's loop, or a
// model checker) calls every method.
type Driver struct {
	cfg      Config
	dir      wire.Direction // the direction of frames this peer receives
	tables   map[string]*fsm.Table
	bindings map[string]fsm.Binding[*Event]
	lost     map[*fsm.Table]fsm.EventID
	forget   Forgetter // the App, when it keeps records of instances

	instances map[Key]*Instance
	aliases   map[aliasKey]string
	aliasesOf map[Key][]aliasKey       // the aliases set for each instance (settled.go)
	settled   map[string]settledQueue  // settled instances per machine, oldest first (settled.go)
	timed     map[*Instance]struct{}   // instances that armed a timer, until a scan finds none armed
	requires  map[string][]requirement // by message type
	perTable  map[string]int
	gen       uint64
	// next caches NextDeadline, which the loop asks after every turn: a
	// scan of every instance would cost O(retained instances) per frame.
	// Arming a timer or settling an instance can only bring it earlier
	// (noteDeadline); whatever takes a deadline away that may have been
	// the earliest marks it stale (dropDeadline), and the next call scans.
	next nextDeadline

	sends   []*Write // queued, not yet handed out
	out     fsm.Outbox
	scratch Event    // the argument of every step: reused, so a step allocates nothing
	targets []Target // the route buffer, reused for the same reason
	firing  fsm.Firing[*Event]
	// busy is set while an entry point runs; a Local called by a hook
	// meanwhile is deferred until the entry point is done.
	busy     bool
	deferred []deferredLocal
	// replyTrace is the valid trace context of the received frame being
	// delivered, "" otherwise: Send stamps it on what the delivery sends.
	replyTrace string
	moved      []*Instance
	stats      Stats
	refusalLog refusalLimiter // bounds the refusal log lines (refusal.go)
	closing    bool
}

// Stats counts what the driver did, for tests and metrics.
type Stats struct {
	Frames        int // frames delivered, applied or not
	Steps         map[fsm.Disposition]int
	Refused       map[RefusalKind]int
	Writes        int
	FailedWrites  int
	StaleTimers   int
	Expired       int
	EffectErrors  int
	Evicted       int
	LiveInstances int
}

// New validates cfg and returns a driver with no instances.
func New(cfg Config) (*Driver, error) {
	switch {
	case !cfg.Role.Peer():
		return nil, errors.New("peer: Config.Role must be fsm.RoleCore or fsm.RoleRuntime")
	case len(cfg.Tables) == 0:
		return nil, errors.New("peer: Config.Tables is empty")
	case cfg.Router == nil:
		return nil, errors.New("peer: Config.Router is nil")
	case cfg.App == nil:
		return nil, errors.New("peer: Config.App is nil")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Limits.MaxInstances == 0 {
		cfg.Limits = DefaultLimits
	}
	d := &Driver{
		cfg:       cfg,
		dir:       wire.RuntimeToCore,
		bindings:  map[string]fsm.Binding[*Event]{},
		instances: map[Key]*Instance{},
		perTable:  map[string]int{},
		stats:     Stats{Steps: map[fsm.Disposition]int{}, Refused: map[RefusalKind]int{}},
	}
	if cfg.Role == fsm.RoleRuntime {
		d.dir = wire.CoreToRuntime
	}
	d.forget, _ = cfg.App.(Forgetter)
	for _, t := range cfg.Tables {
		// Checked now, kept later: a binding is made when the machine's
		// first instance steps (binding), so an idle connection holds none
		// of the machines it never ran (issue 21).
		if cfg.App.Binding(t.Name) == nil {
			return nil, fmt.Errorf("peer: the app has no binding for machine %s", t.Name)
		}
	}
	ms, err := machinesOf(cfg.Tables, cfg.LostEvents)
	if err != nil {
		return nil, err
	}
	d.tables, d.lost, d.requires = ms.tables, ms.lost, ms.requires
	for key, dur := range cfg.Durations {
		if err := d.checkOverride(key, dur); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// binding is the app's binding of machine, made on first use.
func (d *Driver) binding(machine string) fsm.Binding[*Event] {
	b, ok := d.bindings[machine]
	if !ok {
		b = d.cfg.App.Binding(machine)
		d.bindings[machine] = b
	}
	return b
}

func (d *Driver) checkOverride(key string, dur time.Duration) error {
	machine, timer, ok := strings.Cut(key, ".")
	t, known := d.tables[machine]
	if !ok || !known {
		return fmt.Errorf("peer: Durations[%q]: want machine.timer of a machine this peer runs", key)
	}
	for _, tm := range t.Timers {
		if tm.Name != timer {
			continue
		}
		if !tm.Policy {
			return fmt.Errorf("peer: Durations[%q]: the protocol fixes this timer at %s; it is not local policy", key, tm.Duration)
		}
		if dur <= 0 {
			return fmt.Errorf("peer: Durations[%q]: a duration must be positive", key)
		}
		return nil
	}
	return fmt.Errorf("peer: Durations[%q]: machine %s has no timer %q", key, machine, timer)
}

// Role is the peer the driver runs for.
func (d *Driver) Role() fsm.Role { return d.cfg.Role }

// Table returns a machine's table.
func (d *Driver) Table(machine string) (*fsm.Table, bool) {
	t, ok := d.tables[machine]
	return t, ok
}

// Lookup finds an instance.
func (d *Driver) Lookup(k Key) (*Instance, bool) {
	i, ok := d.instances[k]
	return i, ok
}

// Instances lists every instance, sorted by key, for snapshots and tests.
func (d *Driver) Instances() []*Instance {
	out := make([]*Instance, 0, len(d.instances))
	for _, i := range d.instances {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Key.Machine != out[b].Key.Machine {
			return out[a].Key.Machine < out[b].Key.Machine
		}
		return out[a].Key.ID < out[b].Key.ID
	})
	return out
}

// Stats returns a copy of the counters.
func (d *Driver) Stats() Stats {
	s := d.stats
	s.Steps = cloneMap(d.stats.Steps)
	s.Refused = cloneMap(d.stats.Refused)
	s.LiveInstances = len(d.instances)
	return s
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// instance returns the instance for k, creating it in its initial state
// when create is set and the registry has room.
func (d *Driver) instance(k Key, create bool) (*Instance, error) {
	if i, ok := d.instances[k]; ok {
		return i, nil
	}
	t, ok := d.tables[k.Machine]
	if !ok {
		return nil, fmt.Errorf("peer: no machine %s", k.Machine)
	}
	if !create {
		return nil, errUnknownInstance
	}
	if d.perTable[k.Machine] >= d.limit(k.Machine) && !d.evictSettled(k.Machine) {
		return nil, errInstanceLimit
	}
	i := &Instance{Key: k, created: d.cfg.Clock.Now(), deadlines: make([]deadline, len(t.Timers))}
	if err := i.in.Init(t, d.cfg.Role); err != nil {
		return nil, err
	}
	d.instances[k] = i
	d.perTable[k.Machine]++
	return i, nil
}

type deferredLocal struct {
	k   Key
	e   fsm.EventID
	arg any
}

// enter marks the start of an entry point (Deliver, Written, Local, Tick,
// ConnectionLost); the returned func ends it: it runs the local events
// hooks raised meanwhile, then hands the moved instances to the saver.
func (d *Driver) enter() func() {
	d.busy = true
	return d.leave
}

func (d *Driver) leave() {
	for len(d.deferred) > 0 {
		x := d.deferred[0]
		d.deferred[0] = deferredLocal{}
		d.deferred = d.deferred[1:]
		if err := d.local(x.k, x.e, x.arg); err != nil {
			d.cfg.Logger.Warn("deferred local event failed", "conn", d.cfg.Label, "instance", x.k.String(), "err", err)
		}
	}
	d.flushMoved()
	d.busy, d.replyTrace = false, ""
}

// event resets the driver's scratch Event for one step.
func (d *Driver) event(msg *wire.Message, sent bool, local any) *Event {
	d.scratch = Event{Msg: msg, Sent: sent, Local: local}
	return &d.scratch
}

var (
	errUnknownInstance = errors.New("no such instance")
	errInstanceLimit   = errors.New("instance limit reached")
)

func (d *Driver) limit(machine string) int {
	if n, ok := d.cfg.Limits.PerMachine[machine]; ok {
		return n
	}
	return d.cfg.Limits.MaxInstances
}

func (d *Driver) remove(i *Instance) {
	d.dropInstanceDeadlines(i)
	delete(d.timed, i)
	delete(d.instances, i.Key)
	d.perTable[i.Key.Machine]--
	d.dropAliases(i)
	if !i.settled.IsZero() {
		d.trimSettled(i.Key.Machine)
	}
}

// dropIfPristine forgets an instance that an event created and did not
// move: a frame for an unknown instance must not leave a record behind.
func (d *Driver) dropIfPristine(i *Instance) {
	if i.State() == i.Table().Initial && i.settled.IsZero() && d.noTimers(i) {
		d.remove(i)
	}
}

func (d *Driver) noTimers(i *Instance) bool {
	for _, dl := range i.deadlines {
		if dl.armed {
			return false
		}
	}
	return true
}

package modelcheck

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/agentwire/agentwire/fsm"
	fsmturn "github.com/agentwire/agentwire/fsm/turn"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// epoch is the fake clock's start; every world reads the same times.
var epoch = time.Unix(1_800_000_000, 0)

var errInjected = errors.New("modelcheck: injected write failure")

// side is one peer of a world: its driver on the current connection and
// the records it keeps next to each instance.
type side struct {
	role    fsm.Role
	d       *peer.Driver
	recs    map[peer.Key]*record
	aliases []alias
	// replies are the typed answers to frames the driver refused (a
	// rejected preparation_status, busy, run_inactive), which the peer
	// owes and sends outside any lifecycle (peer.Outbound.Refusal).
	replies []Action
	// saved holds the driver's instances while the world waits in the
	// queue without its driver (freeze), which is most of its memory.
	saved []peer.Saved
}

// alias is a name a frame registered for an instance; Snapshot does not
// carry them, so a forked driver gets them back from here.
type alias struct {
	key         peer.Key
	name, value string
}

func (s *side) rec(k peer.Key) *record {
	r, ok := s.recs[k]
	if !ok {
		r = &record{}
		s.recs[k] = r
	}
	return r
}

// inflight is one frame on the wire.
type inflight struct {
	frame []byte
	typ   string
	id    string
}

// carried is one instance a side restores on its next connection.
type carried struct {
	saved peer.Saved
	rec   *record
}

// durable reports whether instances of machine outlive their connection:
// a suspension attempt is persisted fencing (daemon-protocol.txt:78), kept
// by Core's store (and adopted by the device's next connection, with its
// deadlines) and by the Runtime's fence.
func durable(machine string) bool { return machine == "suspension" }

// past is an instance of a connection that is gone, as the invariants
// still see it (an unknown outcome, a resource kept).
type past struct {
	role    fsm.Role
	key     peer.Key
	state   string
	outcome fsm.Outcome
	held    uint32
}

// world is one composed state: both drivers, the channel between them (a
// FIFO per direction: WebSocket never reorders one direction), the fake
// clock, and the durable memory that outlives a connection (what Core
// dispatched, which inputs it queued for a retry, how many faults were
// spent). Worlds are forked, never shared.
type world struct {
	m          *model
	clock      *peer.ManualClock
	conn       int
	broken     bool // a write failed or a connection machine settled: only delivery, timers and reconnect remain
	sides      [2]*side
	ch         [2][]inflight // [0] core→runtime, [1] runtime→core
	past       []past
	dispatched map[peer.Key]int  // instance → the connection its dispatch went out on (negated: queued again without proof)
	retry      map[peer.Key]bool // inputs a receipt sent back to Core's queue (never consumed)
	runs       int               // preparations / Runs Core has begun
	writes     int               // workspace writes Core has begun
	reads      int               // workspace reads Core has dispatched
	exports    int               // workspace exports Core has begun
	suspends   int               // suspension attempts Core has begun
	// carried are the instances that outlive a connection on each side
	// (suspension attempts: Core's store and adoption, the Runtime's
	// fence), saved by disconnect and restored by connect with their
	// records.
	carried    [2][]carried
	faults     int
	reconnects int
	// turns is Core's turn machine of each Turn (turn.go), by number;
	// absent while queued.
	turns map[string]fsmturn.State

	// per action, not part of the state
	effective bool // the send moved the sender's machine, or paid a debt
	capped    bool // candidates left out a status because of the revision bound
	viol      *Violation
	trace     *[2][]string // when set, the scenario-format lines of the action, per role
}

func (w *world) core() *side    { return w.sides[0] }
func (w *world) runtime() *side { return w.sides[1] }

func (w *world) sideOf(r fsm.Role) *side {
	if r == fsm.RoleCore {
		return w.sides[0]
	}
	return w.sides[1]
}

func other(r fsm.Role) fsm.Role {
	if r == fsm.RoleCore {
		return fsm.RoleRuntime
	}
	return fsm.RoleCore
}

func dirIndex(from fsm.Role) int {
	if from == fsm.RoleCore {
		return 0
	}
	return 1
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 100}))

func (w *world) newDriver(s *side) error {
	d, err := peer.New(peer.Config{
		Role: s.role, Tables: w.m.tables, Router: w.m.router, App: &app{w: w, s: s}, Clock: w.clock,
		Logger: quiet, Label: s.role.String(),
		// Settled instances are kept for the whole exploration, so a late
		// frame meets the table's answer for a settled instance.
		Limits: peer.Limits{MaxInstances: 1024, PerMachine: map[string]int{"preparation": 64}, Retention: 1000 * time.Hour, MaxPendingSends: 16},
	})
	if err != nil {
		return err
	}
	s.d = d
	return nil
}

// initial builds the world before any action: connection 1 set up.
func (m *model) initial() (*world, error) {
	w := &world{m: m, clock: peer.NewManualClock(epoch), dispatched: map[peer.Key]int{}, retry: map[peer.Key]bool{}}
	if err := w.connect(); err != nil {
		return nil, err
	}
	return w, nil
}

// connect starts a fresh connection: new drivers (fresh routing, nothing
// inherited, line 19), and the connection machine taken to upgraded on
// both sides when it is part of the composition.
func (w *world) connect() error {
	w.conn++
	w.broken = false
	w.ch = [2][]inflight{}
	for i, r := range []fsm.Role{fsm.RoleCore, fsm.RoleRuntime} {
		s := &side{role: r, recs: map[peer.Key]*record{}}
		w.sides[i] = s
		if err := w.newDriver(s); err != nil {
			return err
		}
		for _, c := range w.carried[i] {
			if err := s.d.Restore([]peer.Saved{c.saved}); err != nil {
				return fmt.Errorf("modelcheck: restoring %s/%s: %w", c.saved.Machine, c.saved.ID, err)
			}
			s.recs[peer.Key{Machine: c.saved.Machine, ID: c.saved.ID}] = c.rec
		}
		w.carried[i] = nil
	}
	if t, ok := w.m.byName["connection"]; ok {
		k := peer.Key{Machine: "connection"}
		for _, step := range []struct {
			s      *side
			events []string
		}{
			{w.core(), []string{"upgrade_requested"}},
			{w.runtime(), []string{"bootstrap_requested", "bootstrap_ok", "upgrade_accepted"}},
		} {
			if _, err := step.s.d.Open(k); err != nil {
				return err
			}
			for _, name := range step.events {
				e, err := t.ParseEvent(name)
				if err != nil {
					return err
				}
				if err := step.s.d.Local(k, e, nil); err != nil {
					return fmt.Errorf("modelcheck: setting up the connection: %w", err)
				}
			}
		}
	}
	return nil
}

// fork copies w: each driver is rebuilt from its snapshot, records and
// aliases, on a clock of its own.
func (w *world) fork() *world {
	c := *w
	c.viol, c.trace = nil, nil
	c.clock = peer.NewManualClock(w.clock.Now())
	c.past = append([]past(nil), w.past...)
	c.dispatched = make(map[peer.Key]int, len(w.dispatched))
	for k, v := range w.dispatched {
		c.dispatched[k] = v
	}
	c.retry = make(map[peer.Key]bool, len(w.retry))
	for k, v := range w.retry {
		c.retry[k] = v
	}
	c.ch = [2][]inflight{append([]inflight(nil), w.ch[0]...), append([]inflight(nil), w.ch[1]...)}
	if w.turns != nil {
		c.turns = make(map[string]fsmturn.State, len(w.turns))
		for k, v := range w.turns {
			c.turns[k] = v
		}
	}
	for i, s := range w.sides {
		ns := &side{role: s.role, recs: make(map[peer.Key]*record, len(s.recs)), aliases: append([]alias(nil), s.aliases...),
			replies: append([]Action(nil), s.replies...)}
		for k, r := range s.recs {
			ns.recs[k] = r.clone()
		}
		if err := c.newDriver(ns); err != nil {
			panic(err) // the same config built the parent's driver
		}
		if err := ns.d.Restore(s.d.Snapshot(nil)); err != nil {
			panic(fmt.Sprintf("modelcheck: fork: %v", err))
		}
		for _, a := range ns.aliases {
			ns.d.SetAlias(a.key, a.name, a.value)
		}
		c.sides[i] = ns
	}
	return &c
}

// closeInteractions is both peers' duty the interaction table states for
// run_closed: when the owning Run settles, or the connection is lost (run
// "" then means every Run), each open interaction of it hears run_closed.
func (w *world) closeInteractions(s *side, d *peer.Driver, run string) {
	t, ok := w.m.byName["interaction"]
	if !ok {
		return
	}
	e, err := t.ParseEvent("run_closed")
	if err != nil {
		return
	}
	for _, i := range d.Instances() {
		if i.Key.Machine != "interaction" || i.Terminal() {
			continue
		}
		if r := s.recs[i.Key]; run == "" || (r != nil && r.runID == run) {
			_ = d.Local(i.Key, e, nil)
		}
	}
}

// freeze drops both drivers, keeping what thaw needs to rebuild them.
func (w *world) freeze() {
	for _, s := range w.sides {
		s.saved = s.d.Snapshot(nil)
		s.d = nil
	}
}

// thaw rebuilds the drivers of a frozen world.
func (w *world) thaw() {
	for _, s := range w.sides {
		if s.d != nil {
			continue
		}
		if err := w.newDriver(s); err != nil {
			panic(err)
		}
		if err := s.d.Restore(s.saved); err != nil {
			panic(fmt.Sprintf("modelcheck: thaw: %v", err))
		}
		for _, a := range s.aliases {
			s.d.SetAlias(a.key, a.name, a.value)
		}
		s.saved = nil
	}
}

// remember keeps the aliases a frame registers, as the driver does.
func (w *world) remember(s *side, msg *wire.Message) {
	targets, err := w.m.router.Route(msg, s.d, nil)
	if err != nil {
		return
	}
	for _, tg := range targets {
		if _, live := s.d.Lookup(tg.Key); !live {
			continue
		}
		for i := range tg.Registers {
			r := &tg.Registers[i]
			if r.Alias != "" {
				s.aliases = append(s.aliases, alias{tg.Key, r.Alias, msg.ID})
			} else if v := r.Field(msg.Payload); v != "" {
				s.aliases = append(s.aliases, alias{tg.Key, "delivery", v})
			}
		}
	}
}

// hash identifies the state: instance states, armed timers relative to
// now, records, the channel, and the durable memory. Two worlds with the
// same hash have the same future.
func (w *world) hash() [16]byte {
	h := sha256.New()
	var buf [8]byte
	num := func(v int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	str := func(s string) { num(int64(len(s))); io.WriteString(h, s) }
	now := w.clock.Now()
	num(int64(w.conn))
	if w.broken {
		num(1)
	} else {
		num(0)
	}
	num(int64(w.runs))
	num(int64(w.writes))
	num(int64(w.reads))
	num(int64(w.exports))
	num(int64(w.suspends))
	num(int64(w.faults))
	num(int64(w.reconnects))
	for n := 1; n <= w.runs; n++ {
		num(int64(w.turnState(strconv.Itoa(n))))
	}
	for _, s := range w.sides {
		for _, i := range s.d.Instances() {
			str(i.Key.Machine)
			str(i.Key.ID)
			num(int64(i.State()))
			for n := range i.Table().Timers {
				if at, ok := i.Deadline(fsm.TimerID(n + 1)); ok {
					num(int64(n))
					num(int64(at.Sub(now)))
				}
			}
			r := s.recs[i.Key]
			if r == nil {
				r = &record{}
			}
			num(int64(r.applied))
			h.Write(r.fp[:])
			str(r.cancel)
			str(r.runID)
			str(r.quiesced)
			str(r.owed)
			num(int64(r.owedFrom))
			num(int64(r.held))
			flags := int64(0)
			for b, f := range []bool{r.prepared, r.readOnly, r.nativeRun, r.retry, r.owes} {
				if f {
					flags |= 1 << b
				}
			}
			num(flags)
		}
		for _, a := range s.replies {
			str(a.Type)
			str(a.ID)
			str(a.Payload)
		}
		num(-1)
	}
	for _, c := range w.ch {
		for _, f := range c {
			h.Write(f.frame)
		}
		num(-2)
	}
	for _, p := range w.past {
		num(int64(p.role))
		str(p.key.Machine)
		str(p.key.ID)
		str(p.state)
		num(int64(p.held))
	}
	keys := make([]peer.Key, 0, len(w.dispatched)+len(w.retry))
	for k := range w.dispatched {
		keys = append(keys, k)
	}
	for k := range w.retry {
		keys = append(keys, peer.Key{Machine: "retry:" + k.Machine, ID: k.ID})
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].Machine != keys[b].Machine {
			return keys[a].Machine < keys[b].Machine
		}
		return keys[a].ID < keys[b].ID
	})
	for _, k := range keys {
		str(k.Machine)
		str(k.ID)
		num(int64(w.dispatched[k])) // 0 for the retry entries
	}
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}

// nextDeadline is the earliest armed timer of either side.
func (w *world) nextDeadline() (time.Time, bool) {
	var at time.Time
	ok := false
	for _, s := range w.sides {
		for _, i := range s.d.Instances() {
			for n := range i.Table().Timers {
				if t, armed := i.Deadline(fsm.TimerID(n + 1)); armed && (!ok || t.Before(at)) {
					at, ok = t, true
				}
			}
		}
	}
	return at, ok
}

// dueTimers names the timers that expire at at, for the trace.
func (w *world) dueTimers(at time.Time) []string {
	var out []string
	for _, s := range w.sides {
		for _, i := range s.d.Instances() {
			for n, tm := range i.Table().Timers {
				if t, armed := i.Deadline(fsm.TimerID(n + 1)); armed && !t.After(at) {
					out = append(out, fmt.Sprintf("%s: %s %s", s.role, i.Key, tm.Name))
				}
			}
		}
	}
	return out
}

// decode turns a frame into the typed message the receiver gets, once per
// distinct frame.
func (m *model) decode(frame []byte, from fsm.Role) (*wire.Message, error) {
	if msg, ok := m.decoded[string(frame)]; ok {
		return msg, nil
	}
	dir := wire.CoreToRuntime
	if from == fsm.RoleRuntime {
		dir = wire.RuntimeToCore
	}
	msg, err := wire.Decode(frame, dir)
	if err != nil {
		return nil, err
	}
	m.decoded[string(frame)] = &msg
	return &msg, nil
}

// settledConnection reports whether either side's connection machine has
// settled, which closes the transport.
func (w *world) settledConnection() bool {
	for _, s := range w.sides {
		if i, ok := s.d.Lookup(peer.Key{Machine: "connection"}); ok && i.Terminal() {
			return true
		}
	}
	return false
}

// log and logStep write the scenario-format lines of an action when the
// world is being rendered (peer/scenario's format, so a counterexample's
// expected output is what that runner prints).
func (w *world) log(r fsm.Role, line string) {
	if w.trace != nil {
		w.trace[dirIndex(r)] = append(w.trace[dirIndex(r)], r.String()+": "+line)
	}
}

func (w *world) logStep(r fsm.Role, ev *peer.Event, s fsm.Step) {
	if w.trace == nil {
		return
	}
	t := ev.Inst.Table()
	if s.Disposition() == fsm.Rejected {
		w.log(r, fmt.Sprintf("%s %s: rejected in %s: %s", ev.Key, t.EventName(s.Event()), t.StateName(s.From()), s.Reason()))
	} else {
		w.log(r, fmt.Sprintf("%s %s: %s -> %s (%s)", ev.Key, t.EventName(s.Event()), t.StateName(s.From()), t.StateName(s.To()), s.Disposition()))
	}
	for n := range s.Effects() {
		ef := &s.Effects()[n]
		if r.Performs(ef.Role) {
			w.log(r, "  "+t.EffectString(ef))
		}
	}
}

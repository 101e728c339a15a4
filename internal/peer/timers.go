package peer

import (
	"sort"
	"time"

	"github.com/agentwire/agentwire/fsm"
)

// NextDeadline is the earliest time at which Tick has something to do: a
// timer expiry or a settled instance to forget. ok is false when there is
// nothing.
func (d *Driver) NextDeadline() (at time.Time, ok bool) {
	if !d.next.stale {
		return d.next.at, d.next.ok
	}
	at, ok = d.scanDeadlines()
	d.next = nextDeadline{at: at, ok: ok}
	return at, ok
}

// scanDeadlines finds the earliest deadline: among the armed timers of the
// instances that armed one (an instance whose timers are all stopped
// leaves the set here) and the retention of the oldest settled instance of
// each machine.
func (d *Driver) scanDeadlines() (at time.Time, ok bool) {
	consider := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	for i := range d.timed {
		armed := false
		for _, dl := range i.deadlines {
			if dl.armed {
				consider(dl.at)
				armed = true
			}
		}
		if !armed {
			delete(d.timed, i)
		}
	}
	for machine := range d.settled {
		d.trimSettled(machine)
		if q := d.settled[machine]; len(q) > 0 {
			consider(q[0].settled.Add(d.cfg.Limits.Retention))
		}
	}
	return at, ok
}

// noteTimed adds i to the instances whose timers scanDeadlines looks at.
func (d *Driver) noteTimed(i *Instance) {
	if d.timed == nil {
		d.timed = map[*Instance]struct{}{}
	}
	d.timed[i] = struct{}{}
}

// nextDeadline is the cached answer of NextDeadline; stale asks for a scan.
type nextDeadline struct {
	at        time.Time
	ok, stale bool
}

// noteDeadline records a deadline that was just set.
func (d *Driver) noteDeadline(at time.Time) {
	if !d.next.ok || at.Before(d.next.at) {
		d.next.at, d.next.ok = at, true
	}
}

// dropDeadline is told about a timer deadline that is going away (stopped,
// re-armed, fired or cleared): if it may have been the earliest, the cache
// is stale.
func (d *Driver) dropDeadline(dl deadline) {
	if dl.armed && d.next.ok && !dl.at.After(d.next.at) {
		d.next.stale = true
	}
}

// dropInstanceDeadlines is dropDeadline for every deadline of i (its
// timers and its retention), before i is removed or settles.
func (d *Driver) dropInstanceDeadlines(i *Instance) {
	for _, dl := range i.deadlines {
		d.dropDeadline(dl)
	}
	if !i.settled.IsZero() {
		d.dropDeadline(deadline{at: i.settled.Add(d.cfg.Limits.Retention), armed: true})
	}
}

type expiry struct {
	i   *Instance
	t   fsm.TimerID
	at  time.Time
	gen uint64
}

// Tick fires every timer that has expired by the clock's now, earliest
// first (ties in key order), and forgets settled instances whose retention
// has passed. An expiry whose timer was stopped or re-armed meanwhile is
// stale and never reaches the machine.
func (d *Driver) Tick() {
	defer d.enter()()
	// Tick takes away at least the deadline that was due.
	defer func() { d.next.stale = true }()
	now := d.cfg.Clock.Now()
	var due []expiry
	for i := range d.timed { // every instance with an armed timer is in it
		for n, dl := range i.deadlines {
			if dl.armed && !dl.at.After(now) {
				due = append(due, expiry{i: i, t: fsm.TimerID(n + 1), at: dl.at, gen: dl.gen})
			}
		}
	}
	sort.Slice(due, func(a, b int) bool {
		if !due[a].at.Equal(due[b].at) {
			return due[a].at.Before(due[b].at)
		}
		ka, kb := due[a].i.Key, due[b].i.Key
		if ka.Machine != kb.Machine {
			return ka.Machine < kb.Machine
		}
		if ka.ID != kb.ID {
			return ka.ID < kb.ID
		}
		return due[a].t < due[b].t
	})
	for _, x := range due {
		dl := &x.i.deadlines[x.t-1]
		// An earlier expiry in this same tick may have stopped or re-armed it.
		if !dl.armed || dl.gen != x.gen {
			d.stats.StaleTimers++
			continue
		}
		dl.armed = false
		d.stats.Expired++
		ev := x.i.Table().Timers[x.t-1].Event
		_ = d.step(x.i, ev, d.event(nil, false, nil))
	}
	// The expired settled instances are the oldest of each machine's queue.
	for machine := range d.settled {
		for {
			d.trimSettled(machine)
			q := d.settled[machine]
			if len(q) == 0 || q[0].settled.Add(d.cfg.Limits.Retention).After(now) {
				break
			}
			d.forgetSettled(q[0])
		}
	}
}

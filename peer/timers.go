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
	consider := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	for _, i := range d.instances {
		for _, dl := range i.deadlines {
			if dl.armed {
				consider(dl.at)
			}
		}
		if !i.settled.IsZero() {
			consider(i.settled.Add(d.cfg.Limits.Retention))
		}
	}
	return at, ok
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
	now := d.cfg.Clock.Now()
	var due []expiry
	for _, i := range d.instances {
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
	for _, i := range d.Instances() {
		if !i.settled.IsZero() && !i.settled.Add(d.cfg.Limits.Retention).After(now) {
			d.remove(i)
		}
	}
}

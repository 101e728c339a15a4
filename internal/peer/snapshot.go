package peer

import (
	"fmt"
	"time"

	"github.com/agentwire/agentwire/fsm"
)

// Saved is one instance as a peer persists it: its state by name and the
// absolute deadlines of its armed timers, so that a restart re-arms each
// for the time that remains, never for its full duration.
type Saved struct {
	Machine   string               `json:"machine"`
	ID        string               `json:"id"`
	State     string               `json:"state"`
	Deadlines map[string]time.Time `json:"deadlines,omitempty"` // timer name → expiry
	Settled   time.Time            `json:"settled,omitzero"`
}

// Save captures one instance.
func (d *Driver) Save(i *Instance) Saved {
	t := i.Table()
	s := Saved{Machine: i.Key.Machine, ID: i.Key.ID, State: i.StateName(), Settled: i.settled}
	for n, dl := range i.deadlines {
		if dl.armed {
			if s.Deadlines == nil {
				s.Deadlines = map[string]time.Time{}
			}
			s.Deadlines[t.Timers[n].Name] = dl.at
		}
	}
	return s
}

// Snapshot captures every instance for which keep reports true (all when
// keep is nil), in key order.
func (d *Driver) Snapshot(keep func(*Instance) bool) []Saved {
	var out []Saved
	for _, i := range d.Instances() {
		if keep == nil || keep(i) {
			out = append(out, d.Save(i))
		}
	}
	return out
}

// Restore recreates saved instances in a driver that has none of those
// keys. Every timer the saved state keeps armed for this driver's role
// must come with its deadline, and no other: a deadline that has passed fires on the next
// Tick. Which instances survive a restart is the peer's choice (durable
// ones such as Core's write reservations); connection-local ones end with
// their connection and are not restored.
func (d *Driver) Restore(saved []Saved) error {
	for _, s := range saved {
		k := Key{Machine: s.Machine, ID: s.ID}
		t, ok := d.tables[s.Machine]
		if !ok {
			return fmt.Errorf("peer: restore %s: no machine %q", k, s.Machine)
		}
		if _, dup := d.instances[k]; dup {
			return fmt.Errorf("peer: restore %s: the instance already exists", k)
		}
		st, err := t.ParseState(s.State)
		if err != nil {
			return fmt.Errorf("peer: restore %s: %w", k, err)
		}
		armed := d.armedBy(t, st)
		if len(armed) != len(s.Deadlines) {
			return fmt.Errorf("peer: restore %s: state %s arms %d timers, %d deadlines saved", k, s.State, len(armed), len(s.Deadlines))
		}
		i, err := d.instance(k, true)
		if err != nil {
			return fmt.Errorf("peer: restore %s: %w", k, err)
		}
		if _, err := i.in.Restore(st); err != nil {
			d.remove(i)
			return err
		}
		for _, tm := range armed {
			name := t.Timers[tm-1].Name
			at, ok := s.Deadlines[name]
			if !ok {
				d.remove(i)
				return fmt.Errorf("peer: restore %s: no deadline saved for timer %s", k, name)
			}
			d.gen++
			i.deadlines[tm-1] = deadline{at: at, gen: d.gen, armed: true}
			d.noteTimed(i)
		}
		i.settled = s.Settled
		if i.Terminal() && i.settled.IsZero() {
			i.settled = d.cfg.Clock.Now()
		}
		if !i.settled.IsZero() {
			d.noteSettled(i)
		}
		d.next.stale = true
	}
	return nil
}

// armedBy is the part of state st's armed timers that d's role arms. A
// state's declaration lists both roles' timers (input's sent has Core's
// written_wait and the Runtime's native_write), but a peer only ever
// starts the timers whose expiry it observes, so only those can be saved.
func (d *Driver) armedBy(t *fsm.Table, st fsm.StateID) []fsm.TimerID {
	var out []fsm.TimerID
	for _, tm := range t.State(st).Timers {
		if d.cfg.Role.Performs(t.Event(t.Timers[tm-1].Event).Role) {
			out = append(out, tm)
		}
	}
	return out
}

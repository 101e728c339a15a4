package fsm

// Firing is what a guard or an effect hook sees of the event being handled.
// The engine reuses one Firing per instance: do not keep it after the call.
type Firing[A any] struct {
	Table *Table
	From  StateID
	Event EventID
	// To is the target while effects run; it equals From while guards run.
	To  StateID
	Arg A // the argument of Step or Fire, e.g. the decoded frame
}

// Guards evaluates a table's named guards for one peer. Guards are
// synchronous predicates over the event's argument and the peer's own
// records; they must not change anything.
type Guards[A any] interface {
	Guard(g GuardID, f *Firing[A]) bool
}

// Pending is one effect a step asked for, with the transition that asked.
type Pending struct {
	Effect *Effect // points into the table: read-only
	From   StateID
	Event  EventID
	To     StateID
}

// Outbox collects what steps did and what they ask the peer to do, in
// order. The engine only appends; the driver drains it after the step
// (performs the sends, arms and disarms the timers, runs the actions, saves
// the state) and then calls Reset. Because nothing is performed during the
// step, an I/O failure can never leave a step half-applied.
type Outbox struct {
	Steps   []Step    // every step taken, including ignored and rejected ones
	Effects []Pending // the effects of the instance's role, raises excluded
}

// Reset empties the outbox, keeping its capacity.
func (o *Outbox) Reset() {
	o.Steps = o.Steps[:0]
	o.Effects = o.Effects[:0]
}

// Moved reports whether any step in the outbox changed the state, i.e.
// whether the instance needs saving.
func (o *Outbox) Moved() bool {
	for _, s := range o.Steps {
		if s.Disposition() == Moved {
			return true
		}
	}
	return false
}

// Instance is one running copy of a table for one role: its current state
// and the follow-up events its raise effects queue. It does no I/O, reads no
// clock and is not safe for concurrent use: one goroutine (the driver of the
// connection) owns it.
type Instance[A any] struct {
	table  *Table
	role   Role
	state  StateID
	queue  Queue[EventID, A]
	firing Firing[A]
}

// NewInstance returns an instance of t in its initial state for role, which
// must be RoleCore or RoleRuntime. The table is sealed if it was not.
func NewInstance[A any](t *Table, role Role) (*Instance[A], error) {
	in := new(Instance[A])
	if err := in.Init(t, role); err != nil {
		return nil, err
	}
	return in, nil
}

// Init sets up an instance in place (for instances embedded in a larger
// record, without a separate allocation).
func (in *Instance[A]) Init(t *Table, role Role) error {
	if t == nil {
		return &TableError{Msg: "no table"}
	}
	if !role.Peer() {
		return &RoleError{Machine: t.Name, Role: role}
	}
	if err := t.Seal(); err != nil {
		return err
	}
	*in = Instance[A]{table: t, role: role, state: t.Initial}
	return nil
}

// Table is the table the instance runs.
func (in *Instance[A]) Table() *Table { return in.table }

// Role is the peer the instance runs for.
func (in *Instance[A]) Role() Role { return in.role }

// State is the current state.
func (in *Instance[A]) State() StateID { return in.state }

// Terminal reports whether the current state is terminal.
func (in *Instance[A]) Terminal() bool { return in.table.State(in.state).Outcome != OutcomeNone }

// Peek answers what event e would do now, evaluating guards with g, without
// changing anything. A driver uses it to check its own send before writing.
func (in *Instance[A]) Peek(e EventID, arg A, g Guards[A]) (Step, error) {
	t := in.table
	if !t.ValidEvent(e) {
		return Step{}, t.invalid(in.state, e)
	}
	s := in.state
	fr := &in.firing
	fr.Table, fr.From, fr.Event, fr.To, fr.Arg = t, s, e, s, arg
	defer in.clearArg()
	cell := &t.Cells[t.CellIndex(s, e)]
	for i, c := range cell.Cands {
		if c.Guard != 0 && (g == nil || !g.Guard(c.Guard, fr)) {
			continue
		}
		if err := cell.errs[i]; err != nil {
			return Step{c, s, e}, err
		}
		return Step{c, s, e}, nil
	}
	return Step{}, t.unsealed()
}

// Step handles event e with argument arg, then every follow-up event its
// raise effects queued, in order (run to completion). Every step taken is
// appended to out.Steps and every effect of the instance's role (except
// raises, which the engine runs itself) to out.Effects; nothing is
// performed. Guards are evaluated with g; a nil g holds no guard.
//
// It returns nil when every event moved the machine, kept it in place or was
// ignored; the table's *TransitionError when one was rejected (that event
// changed nothing, and the follow-ups still queued are dropped; the steps
// before it stay applied and their effects stay in out); an *InvalidError
// for an event outside the table; a *QueueError when raises overflow.
func (in *Instance[A]) Step(e EventID, arg A, g Guards[A], out *Outbox) error {
	if out == nil {
		return &TableError{Machine: in.table.Name, Msg: "Step needs an outbox to collect the effects"}
	}
	err := in.step(e, arg, g, out)
	for err == nil {
		next, nextArg, ok := in.queue.Pop()
		if !ok {
			break
		}
		err = in.step(next, nextArg, g, out)
	}
	// An error ends the run: drop the follow-ups it left behind.
	in.queue.Clear()
	in.clearArg()
	return err
}

// clearArg drops the only field that can hold on to caller memory.
func (in *Instance[A]) clearArg() {
	var zero A
	in.firing.Arg = zero
}

func (in *Instance[A]) step(e EventID, arg A, g Guards[A], out *Outbox) error {
	t := in.table
	s := in.state
	if !t.ValidEvent(e) {
		return t.invalid(s, e)
	}
	// Field by field: assigning a whole Firing literal costs a stalled copy on every event.
	fr := &in.firing
	fr.Table, fr.From, fr.Event, fr.To, fr.Arg = t, s, e, s, arg
	cell := &t.Cells[t.CellIndex(s, e)]
	for i, c := range cell.Cands {
		if c.Guard != 0 && (g == nil || !g.Guard(c.Guard, fr)) {
			continue
		}
		to := s
		if c.Disp == Moved {
			to = c.To
			in.state = to
		}
		out.Steps = append(out.Steps, Step{c, s, e})
		if err := cell.errs[i]; err != nil {
			return err
		}
		for j := range c.Effects {
			ef := &c.Effects[j]
			if !in.role.Performs(ef.Role) {
				continue
			}
			if ef.Kind == EffectRaise {
				if !in.queue.Push(ef.Raise, arg) {
					return &QueueError{Machine: t.Name, Event: t.EventName(ef.Raise)}
				}
				continue
			}
			out.Effects = append(out.Effects, Pending{Effect: ef, From: s, Event: e, To: to})
		}
		return nil
	}
	return t.unsealed()
}

// Restore puts the instance in state s, as saved by its driver, and returns
// the timers that state keeps armed, which the driver must re-arm for the
// time that remains. It runs no guard and no effect.
func (in *Instance[A]) Restore(s StateID) ([]TimerID, error) {
	if !in.table.ValidState(s) {
		return nil, &InvalidError{Machine: in.table.Name, What: "state", Value: in.table.StateName(s)}
	}
	in.state = s
	in.queue.Clear()
	return in.table.State(s).Timers, nil
}

// RoleError reports a machine built for a role that is not one peer.
type RoleError struct {
	Machine string
	Role    Role
}

func (e *RoleError) Error() string {
	return "fsm: " + e.Machine + ": a machine runs for RoleCore or RoleRuntime, not " + e.Role.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *RoleError) Is(target error) bool { return target == ErrInvalid }

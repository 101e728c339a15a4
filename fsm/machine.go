package fsm

import "sync"

// Binding is one peer's implementation of a table's named guards, sends and
// actions. Each generated machine package produces one from the role's hooks
// interface (for example preparation.Core(hooks)), so a peer implements
// typed methods and never switches on IDs itself.
//
// The engine calls a guard while it selects a candidate, and performs the
// other effects after the step, in spec order (Machine.Fire, or a driver
// that drains an Outbox). Every generated hooks interface refers here for
// that order rather than repeat it.
type Binding[A any] interface {
	Guards[A]
	// Perform does one EffectSend or EffectDo effect of the binding's role.
	Perform(ef *Effect, f *Firing[A]) error
}

// Timers arms and disarms a machine's timers for Machine.Fire. A driver
// that drains the Outbox itself keeps its own deadlines instead.
type Timers[A any] interface {
	StartTimer(f *Firing[A], t TimerID) error
	StopTimer(f *Firing[A], t TimerID) error
}

// Machine is an Instance that performs its own effects: Fire steps the
// instance, then performs what the outbox holds through the binding, in
// order. It suits a peer with one instance and no driver; it is safe for
// concurrent use (Fire serialises callers). A hook must not call Fire on the
// same machine: it would deadlock.
type Machine[A any] struct {
	mu      sync.Mutex
	in      Instance[A]
	binding Binding[A]
	// guards is binding as a Guards, converted once: converting it on
	// every Fire costs an itab lookup.
	guards  Guards[A]
	timers  Timers[A]
	out     Outbox
	firing  Firing[A]
	observe func(Step)
}

// NewMachine returns a machine for t in its initial state that performs the
// effects of role through binding. timers may be nil only when no effect
// of the role starts or stops a timer.
func NewMachine[A any](t *Table, role Role, binding Binding[A], timers Timers[A]) (*Machine[A], error) {
	m := &Machine[A]{binding: binding, guards: binding, timers: timers}
	if err := m.in.Init(t, role); err != nil {
		return nil, err
	}
	if binding == nil {
		return nil, &TableError{Machine: t.Name, Msg: "a machine needs a binding for its guards and effects"}
	}
	if timers == nil && roleUsesTimers(t, role) {
		return nil, &TableError{Machine: t.Name, Msg: "the " + role.String() + " role arms timers, so the machine needs Timers"}
	}
	return m, nil
}

func roleUsesTimers(t *Table, role Role) bool {
	for i := range t.Cells {
		for _, c := range t.Cells[i].Cands {
			for _, ef := range c.Effects {
				if (ef.Kind == EffectStart || ef.Kind == EffectStop) && role.Performs(ef.Role) {
					return true
				}
			}
		}
	}
	return false
}

// State returns the current state.
func (m *Machine[A]) State() StateID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.in.state
}

// Table is the table the machine runs.
func (m *Machine[A]) Table() *Table { return m.in.table }

// Observe registers fn to be called, with the lock held, for every step
// (including ignored and rejected ones) before its effects run. Pass nil to
// remove it.
func (m *Machine[A]) Observe(fn func(Step)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observe = fn
}

// Fire handles e and its follow-ups (Instance.Step), then performs the
// effects of every step that completed, in order. It returns the step's
// error if an event was rejected (after performing the effects of the steps
// before it), or an *EffectError when a hook failed (the state has moved;
// the effects after the failed one did not run).
func (m *Machine[A]) Fire(e EventID, arg A) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.out.Reset()
	err := m.in.Step(e, arg, m.guards, &m.out)
	if m.observe != nil {
		for _, s := range m.out.Steps {
			m.observe(s)
		}
	}
	fr := &m.firing
	for i := range m.out.Effects {
		p := &m.out.Effects[i]
		fr.Table, fr.From, fr.Event, fr.To, fr.Arg = m.in.table, p.From, p.Event, p.To, arg
		var perr error
		switch p.Effect.Kind {
		case EffectStart:
			perr = m.timers.StartTimer(fr, p.Effect.Timer)
		case EffectStop:
			perr = m.timers.StopTimer(fr, p.Effect.Timer)
		default:
			perr = m.binding.Perform(p.Effect, fr)
		}
		if perr != nil {
			err = m.effectError(p, perr)
			break
		}
	}
	var zero A
	fr.Arg = zero
	return err
}

func (m *Machine[A]) effectError(p *Pending, err error) error {
	t := m.in.table
	return &EffectError{
		Machine: t.Name,
		From:    t.StateName(p.From),
		Event:   t.EventName(p.Event),
		To:      t.StateName(p.To),
		Effect:  t.EffectString(p.Effect),
		Err:     err,
	}
}

// Restore puts the machine in state s and returns the timers to re-arm.
func (m *Machine[A]) Restore(s StateID) ([]TimerID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.in.Restore(s)
}

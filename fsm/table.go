package fsm

import (
	"fmt"
	"strconv"
	"time"
)

// The declarations of one table are numbered from 1 in spec order; 0 means
// "none" (no guard on a candidate, no message on an event), so a zero value
// can never be mistaken for the first declaration.
type (
	StateID   uint8
	EventID   uint8
	GuardID   uint8
	ActionID  uint8
	MessageID uint8
	TimerID   uint8
)

// MaxGuards is how many guards one table can declare: a GuardSet is a
// 64-bit mask indexed by GuardID.
const MaxGuards = 63

// MaxDecls bounds every other kind of declaration in one table, so every
// ID fits its uint8 type.
const MaxDecls = 255

// GuardSet is the set of guards that hold, for the pure Transition.
type GuardSet uint64

// With returns the set with g added.
func (s GuardSet) With(g GuardID) GuardSet { return s | 1<<g }

// Has reports whether g is in the set.
func (s GuardSet) Has(g GuardID) bool { return s&(1<<g) != 0 }

// StateDecl is one state of a table.
type StateDecl struct {
	Name    string
	Outcome Outcome   // OutcomeNone unless the state is terminal
	Timers  []TimerID // the timers armed while the machine is in this state
}

// EventDecl is one event of a table.
type EventDecl struct {
	Name string
	Kind EventKind
	// Role is who causes the event: the sender of a message, the owner of a
	// timer, the peer that observes a local event (RoleBoth for both).
	Role    Role
	Message MessageID // EventMessage only
	Timer   TimerID   // EventTimer only
	// FailedSend (EventMessage) is the local event the sender fires instead
	// of this one when its write fails: the frame may have left, so the
	// machine treats it as possibly delivered. 0 when the spec declares none.
	FailedSend EventID
	// Dispatch (EventMessage) marks the request whose effect becomes unknown
	// once it may have been delivered.
	Dispatch bool
}

// TimerDecl is one timer: its expiry is the event of the same name.
type TimerDecl struct {
	Name     string
	Duration time.Duration
	Event    EventID
	// Policy marks a duration the protocol text leaves to the peers (a
	// local policy with this default); the others are fixed by the protocol
	// and a driver refuses to override them.
	Policy bool
}

// Effect is one thing a transition asks a peer to do, in spec order.
type Effect struct {
	Kind    EffectKind
	Role    Role      // the peer that performs it; RoleBoth for both
	Message MessageID // EffectSend
	Timer   TimerID   // EffectStart, EffectStop
	Action  ActionID  // EffectDo
	Raise   EventID   // EffectRaise
}

// Candidate is one way to handle an event in a state: the rule of the spec
// that declared it. A rule that covers many cells (a list of states or
// events, or "*") is one Candidate shared by all of them.
type Candidate struct {
	// Rule is the stable ID of the spec rule (its id:, or one derived from
	// its first state, event and guard), the same in every cell it covers.
	Rule    string
	Guard   GuardID // 0 for a cell's unguarded fallback
	Disp    Disposition
	To      StateID // 0 means "stay": ignored, rejected and internal candidates
	Effects []Effect
	Reason  string // why an ignore or reject exists
	Line    int    // the rule's line in the spec file
}

// Cell is every candidate for one (state, event) pair, tried in order; the
// last one is the unguarded fallback.
type Cell struct {
	Cands []*Candidate
	// errs[i] is the preallocated rejection of Cands[i] in this cell, or nil.
	errs []*TransitionError
}

// Table is one machine's complete transition table, in the form the engine
// runs. Generated packages build theirs from literals; spec.Machine.Table
// builds one from a loaded spec at run time. Seal checks and completes a
// table once; after that it is read-only and safe to share.
type Table struct {
	Name     string
	Source   string // the spec file it came from, for messages
	States   []StateDecl
	Events   []EventDecl
	Guards   []string
	Actions  []string
	Messages []string
	Timers   []TimerDecl
	Initial  StateID
	// Cells is indexed by CellIndex(state, event): len(States)*len(Events)
	// entries, state-major.
	Cells []Cell
	// Rules, when Cells is nil, is the table in the compact form the
	// generated packages write (the spec's rules, one entry per rule):
	// Seal expands them into Cells once, at start-up. See Rule.
	Rules []Rule
	// Lines[i] is the spec line of Rules[i] (Candidate.Line). It is apart
	// from Rules so that an edit which shifts the spec's lines changes
	// this one line of a generated file rather than every rule.
	Lines []int

	sealed bool
	// byMessage maps a message ID to its events (for diagnostics).
	names map[string]EventID
}

// CellIndex is where the (s, e) cell sits in Cells.
func (t *Table) CellIndex(s StateID, e EventID) int { return (int(s)-1)*len(t.Events) + int(e) - 1 }

// State returns the declaration of s; s must be valid.
func (t *Table) State(s StateID) *StateDecl { return &t.States[s-1] }

// Event returns the declaration of e; e must be valid.
func (t *Table) Event(e EventID) *EventDecl { return &t.Events[e-1] }

// ValidState reports whether s names a state of t.
func (t *Table) ValidState(s StateID) bool { return s >= 1 && int(s) <= len(t.States) }

// ValidEvent reports whether e names an event of t.
func (t *Table) ValidEvent(e EventID) bool { return e >= 1 && int(e) <= len(t.Events) }

// StateName renders s, or a bounded placeholder for an invalid value.
func (t *Table) StateName(s StateID) string {
	if t.ValidState(s) {
		return t.States[s-1].Name
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// EventName renders e, or a bounded placeholder for an invalid value.
func (t *Table) EventName(e EventID) string {
	if t.ValidEvent(e) {
		return t.Events[e-1].Name
	}
	return "Event(" + strconv.Itoa(int(e)) + ")"
}

// GuardName renders g ("" for none).
func (t *Table) GuardName(g GuardID) string {
	if g >= 1 && int(g) <= len(t.Guards) {
		return t.Guards[g-1]
	}
	if g == 0 {
		return ""
	}
	return "Guard(" + strconv.Itoa(int(g)) + ")"
}

// ActionName renders a.
func (t *Table) ActionName(a ActionID) string {
	if a >= 1 && int(a) <= len(t.Actions) {
		return t.Actions[a-1]
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// MessageName renders m.
func (t *Table) MessageName(m MessageID) string {
	if m >= 1 && int(m) <= len(t.Messages) {
		return t.Messages[m-1]
	}
	return "Message(" + strconv.Itoa(int(m)) + ")"
}

// TimerName renders tm.
func (t *Table) TimerName(tm TimerID) string {
	if tm >= 1 && int(tm) <= len(t.Timers) {
		return t.Timers[tm-1].Name
	}
	return "Timer(" + strconv.Itoa(int(tm)) + ")"
}

// ParseState finds a state by name.
func (t *Table) ParseState(name string) (StateID, error) {
	id, err := t.Parse(DeclState, name)
	return StateID(id), err
}

// ParseEvent finds an event by name.
func (t *Table) ParseEvent(name string) (EventID, error) {
	if id, ok := t.names[name]; ok {
		return id, nil
	}
	return 0, &InvalidError{Machine: t.Name, What: "event name", Value: Quote(name)}
}

// EffectString renders an effect as the spec writes it, e.g.
// "runtime: send preparation_status".
func (t *Table) EffectString(ef *Effect) string {
	prefix := ""
	if ef.Role != RoleBoth {
		prefix = ef.Role.String() + ": "
	}
	switch ef.Kind {
	case EffectSend:
		return prefix + "send " + t.MessageName(ef.Message)
	case EffectStart:
		return prefix + "start " + t.TimerName(ef.Timer)
	case EffectStop:
		return prefix + "stop " + t.TimerName(ef.Timer)
	case EffectDo:
		return prefix + "do " + t.ActionName(ef.Action)
	case EffectRaise:
		return prefix + "raise " + t.EventName(ef.Raise)
	}
	return prefix + ef.Kind.String()
}

// Seal checks that t is complete and consistent and prepares it to run:
// every ID in range, every cell non-empty and ending with exactly one
// unguarded fallback, guards within a GuardSet, timers pointing at their
// events. It builds the rejection error of every rejecting cell once, so
// that running the table allocates nothing. A table is sealed once; sealing
// it again is a no-op.
func (t *Table) Seal() error {
	if t.sealed {
		return nil
	}
	bad := func(format string, args ...any) error {
		return &TableError{Machine: t.Name, Source: t.Source, Msg: fmt.Sprintf(format, args...)}
	}
	if t.Cells == nil && t.Rules != nil {
		if err := t.expand(); err != nil {
			return err
		}
	}
	switch {
	case len(t.States) == 0 || len(t.Events) == 0:
		return bad("a table needs at least one state and one event")
	case len(t.States) > MaxDecls || len(t.Events) > MaxDecls || len(t.Actions) > MaxDecls ||
		len(t.Messages) > MaxDecls || len(t.Timers) > MaxDecls:
		return bad("more than %d declarations of one kind", MaxDecls)
	case len(t.Guards) > MaxGuards:
		return bad("%d guards; a table holds at most %d (a GuardSet is one 64-bit mask)", len(t.Guards), MaxGuards)
	case !t.ValidState(t.Initial):
		return bad("initial state %d is not declared", t.Initial)
	case len(t.Cells) != len(t.States)*len(t.Events):
		return bad("%d cells for %d states × %d events", len(t.Cells), len(t.States), len(t.Events))
	}
	t.names = make(map[string]EventID, len(t.Events))
	for i, ev := range t.Events {
		if _, dup := t.names[ev.Name]; dup {
			return bad("event %s declared twice", Quote(ev.Name))
		}
		t.names[ev.Name] = EventID(i + 1)
		switch ev.Kind {
		case EventMessage:
			if ev.Message < 1 || int(ev.Message) > len(t.Messages) {
				return bad("event %s names message %d, which is not declared", ev.Name, ev.Message)
			}
		case EventTimer:
			if ev.Timer < 1 || int(ev.Timer) > len(t.Timers) || t.Timers[ev.Timer-1].Event != EventID(i+1) {
				return bad("timer event %s does not match its timer declaration", ev.Name)
			}
		case EventLocal:
		default:
			return bad("event %s has no kind", ev.Name)
		}
		if ev.FailedSend != 0 && (ev.Kind != EventMessage || !t.ValidEvent(ev.FailedSend) || t.Events[ev.FailedSend-1].Kind != EventLocal) {
			return bad("event %s: its failed send must be a local event of the table", ev.Name)
		}
		if !ev.Role.Valid() {
			return bad("event %s has no role", ev.Name)
		}
	}
	for i, tm := range t.Timers {
		if tm.Duration <= 0 || !t.ValidEvent(tm.Event) || t.Events[tm.Event-1].Timer != TimerID(i+1) {
			return bad("timer %s needs a positive duration and its own event", tm.Name)
		}
	}
	for si := range t.States {
		for _, tm := range t.States[si].Timers {
			if tm < 1 || int(tm) > len(t.Timers) {
				return bad("state %s arms timer %d, which is not declared", t.States[si].Name, tm)
			}
		}
	}
	for s := StateID(1); int(s) <= len(t.States); s++ {
		for e := EventID(1); int(e) <= len(t.Events); e++ {
			cell := &t.Cells[t.CellIndex(s, e)]
			where := t.StateName(s) + "/" + t.EventName(e)
			if len(cell.Cands) == 0 {
				return bad("cell %s is not declared", where)
			}
			cell.errs = make([]*TransitionError, len(cell.Cands))
			for i, c := range cell.Cands {
				last := i == len(cell.Cands)-1
				switch {
				case c == nil:
					return bad("cell %s has a nil candidate", where)
				case last != (c.Guard == 0):
					return bad("cell %s must end with exactly one unguarded fallback", where)
				case int(c.Guard) > len(t.Guards):
					return bad("cell %s uses guard %d, which is not declared", where, c.Guard)
				case c.To != 0 && !t.ValidState(c.To):
					return bad("cell %s goes to state %d, which is not declared", where, c.To)
				case c.Disp < Moved || c.Disp > Rejected:
					return bad("cell %s has no disposition", where)
				case c.Disp == Moved && c.To == 0:
					return bad("cell %s moves without a target state", where)
				}
				if err := t.checkEffects(c, where); err != nil {
					return err
				}
				if c.Disp == Rejected {
					cell.errs[i] = &TransitionError{Machine: t.Name, State: t.StateName(s), Event: t.EventName(e), Reason: c.Reason}
				}
			}
		}
	}
	t.sealed = true
	return nil
}

func (t *Table) checkEffects(c *Candidate, where string) error {
	for i := range c.Effects {
		ef := &c.Effects[i]
		ok := ef.Role.Valid()
		switch ef.Kind {
		case EffectSend:
			ok = ok && ef.Message >= 1 && int(ef.Message) <= len(t.Messages)
		case EffectStart, EffectStop:
			ok = ok && ef.Timer >= 1 && int(ef.Timer) <= len(t.Timers)
		case EffectDo:
			ok = ok && ef.Action >= 1 && int(ef.Action) <= len(t.Actions)
		case EffectRaise:
			ok = ok && t.ValidEvent(ef.Raise)
		default:
			ok = false
		}
		if !ok {
			return &TableError{Machine: t.Name, Source: t.Source, Msg: fmt.Sprintf("cell %s: effect %d is incomplete", where, i+1)}
		}
	}
	if (c.Disp == Ignored || c.Disp == Rejected) && len(c.Effects) > 0 {
		return &TableError{Machine: t.Name, Source: t.Source, Msg: "cell " + where + ": an ignored or rejected event has no effects"}
	}
	return nil
}

// MustSeal seals a table that is known to be valid (generated code) and
// returns it; an invalid table is a generator bug, so it panics.
func MustSeal(t *Table) *Table {
	if err := t.Seal(); err != nil {
		panic(err)
	}
	return t
}

// Step is what one event did: the selected candidate of its cell and where
// it ran. It is three words, returned in registers, and a read-only view:
// nobody can change the table through it.
type Step struct {
	c     *Candidate
	from  StateID
	event EventID
}

// From is the state the event arrived in.
func (s Step) From() StateID { return s.from }

// Event is the event that was handled.
func (s Step) Event() EventID { return s.event }

// To is the state after the step: From unless the step moved.
func (s Step) To() StateID {
	if s.c == nil || s.c.To == 0 {
		return s.from
	}
	return s.c.To
}

// Guard is the guard that selected the candidate, or 0 for the fallback.
func (s Step) Guard() GuardID {
	if s.c == nil {
		return 0
	}
	return s.c.Guard
}

// Disposition says whether the step moved, stayed, ignored or rejected.
// The zero Step (an invalid input) reports 0.
func (s Step) Disposition() Disposition {
	if s.c == nil {
		return 0
	}
	return s.c.Disp
}

// Effects lists what the step asks for, in spec order, for every role; a
// driver keeps those of its own role (Role.Performs). Do not modify it.
func (s Step) Effects() []Effect {
	if s.c == nil {
		return nil
	}
	return s.c.Effects
}

// Reason is the spec's reason for an ignore or reject, or "".
func (s Step) Reason() string {
	if s.c == nil {
		return ""
	}
	return s.c.Reason
}

// Rule is the stable ID of the spec rule behind the step ("" when unknown).
func (s Step) Rule() string {
	if s.c == nil {
		return ""
	}
	return s.c.Rule
}

// Line is the line of the spec rule behind the step (0 when unknown).
func (s Step) Line() int {
	if s.c == nil {
		return 0
	}
	return s.c.Line
}

// Transition is the pure transition function: it selects the candidate of
// the (s, e) cell whose guard is in held (or the fallback) and returns the
// step. It changes nothing and allocates nothing for valid inputs. A
// rejection returns a shared, preallocated *TransitionError; an invalid
// state or event returns the zero Step and an *InvalidError.
func (t *Table) Transition(s StateID, e EventID, held GuardSet) (Step, error) {
	if !t.ValidState(s) || !t.ValidEvent(e) {
		return Step{}, t.invalid(s, e)
	}
	cell := &t.Cells[t.CellIndex(s, e)]
	for i, c := range cell.Cands {
		if c.Guard != 0 && !held.Has(c.Guard) {
			continue
		}
		// A nil *TransitionError must not become a non-nil error.
		if err := cell.errs[i]; err != nil {
			return Step{c, s, e}, err
		}
		return Step{c, s, e}, nil
	}
	return Step{}, t.unsealed()
}

// invalid builds the error for an out-of-range input, off the hot path.
func (t *Table) invalid(s StateID, e EventID) error {
	if !t.sealed {
		return t.unsealed()
	}
	if !t.ValidState(s) {
		return &InvalidError{Machine: t.Name, What: "state", Value: t.StateName(s)}
	}
	return &InvalidError{Machine: t.Name, What: "event", Value: t.EventName(e)}
}

func (t *Table) unsealed() error {
	return &TableError{Machine: t.Name, Source: t.Source, Msg: "the table was not sealed"}
}

// TableError reports a table that cannot run: a generator or loader bug, or
// a hand-built table that is incomplete.
type TableError struct {
	Machine string
	Source  string
	Msg     string
}

func (e *TableError) Error() string {
	where := e.Machine
	if e.Source != "" {
		where = e.Source + " (" + e.Machine + ")"
	}
	return "fsm: table " + where + ": " + e.Msg
}

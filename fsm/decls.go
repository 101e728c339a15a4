package fsm

import "strconv"

// Decl is a kind of declaration of a table. The generated enums (State,
// Event, Guard, …) are thin typed views of a table's declarations: their
// String and Parse call Table.DeclName and Table.Parse with their Decl, so the
// lookup is written once here instead of once per enum per machine.
type Decl uint8

const (
	DeclState Decl = iota
	DeclEvent
	DeclGuard
	DeclAction
	DeclMessage
	DeclTimer
)

var declWords = [...]string{"State", "Event", "Guard", "Action", "Message", "Timer"}

// count is how many declarations of kind k the table has.
func (t *Table) count(k Decl) int {
	switch k {
	case DeclState:
		return len(t.States)
	case DeclEvent:
		return len(t.Events)
	case DeclGuard:
		return len(t.Guards)
	case DeclAction:
		return len(t.Actions)
	case DeclMessage:
		return len(t.Messages)
	case DeclTimer:
		return len(t.Timers)
	}
	return 0
}

// name is the spec name of declaration i (0-based) of kind k.
func (t *Table) name(k Decl, i int) string {
	switch k {
	case DeclState:
		return t.States[i].Name
	case DeclEvent:
		return t.Events[i].Name
	case DeclGuard:
		return t.Guards[i]
	case DeclAction:
		return t.Actions[i]
	case DeclMessage:
		return t.Messages[i]
	}
	return t.Timers[i].Name
}

// DeclName is the spec name of declaration id of kind k, or Kind(n) (State(9),
// Guard(0)) for a value the table does not declare.
func (t *Table) DeclName(k Decl, id uint8) string {
	if id >= 1 && int(id) <= t.count(k) {
		return t.name(k, int(id)-1)
	}
	if int(k) >= len(declWords) {
		return "Decl(" + strconv.Itoa(int(k)) + ")"
	}
	return declWords[k] + "(" + strconv.Itoa(int(id)) + ")"
}

// Parse finds the declaration of kind k with the given spec name; an
// unknown name is an *InvalidError ("state name", "guard name", …).
func (t *Table) Parse(k Decl, name string) (uint8, error) {
	for i, n := 0, t.count(k); i < n; i++ {
		if t.name(k, i) == name {
			return uint8(i + 1), nil
		}
	}
	what := "declaration name"
	if int(k) < len(declWords) {
		what = string(declWords[k][0]|0x20) + declWords[k][1:] + " name"
	}
	return 0, &InvalidError{Machine: t.Name, What: what, Value: Quote(name)}
}

// As converts the result of Table.Parse to a generated enum:
// fsm.As[State](Table.Parse(fsm.DeclState, name)).
func As[T ~uint8](id uint8, err error) (T, error) { return T(id), err }

// StateOf is the declaration of s, or a zero declaration for an invalid s
// (never nil, so a generated accessor is one expression).
func (t *Table) StateOf(s StateID) *StateDecl {
	if !t.ValidState(s) {
		return &zeroState
	}
	return &t.States[s-1]
}

// EventOf is the declaration of e, or a zero declaration for an invalid e.
func (t *Table) EventOf(e EventID) *EventDecl {
	if !t.ValidEvent(e) {
		return &zeroEvent
	}
	return &t.Events[e-1]
}

// TimerOf is the declaration of tm, or a zero declaration for an invalid tm.
func (t *Table) TimerOf(tm TimerID) *TimerDecl {
	if tm < 1 || int(tm) > len(t.Timers) {
		return &zeroTimer
	}
	return &t.Timers[tm-1]
}

// The zero declarations StateOf, EventOf and TimerOf return for an invalid
// ID; nobody writes them.
var (
	zeroState StateDecl
	zeroEvent EventDecl
	zeroTimer TimerDecl
)

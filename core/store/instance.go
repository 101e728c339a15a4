package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/machines"
)

// Core persists the machine instances that outlive a connection (a
// suspension attempt, a workspace write, a Turn) by their machine's state.
// Every such write is a Move: conditional on the state the writer last
// saw, and checked against the machine's table, so a state the spec does
// not have, or a move it cannot make, never reaches the database.

// Move is one conditional move of a persisted instance of Machine (a name
// of fsm/machines) from state From to state To. From "" creates the
// instance.
type Move struct {
	Machine string
	Key     string
	From    string
	To      string
	// Version, when non-zero, must also match the stored instance's
	// (Instances only): a writer that read an instance can move it only
	// if nobody moved it since, even back to the same state.
	Version uint64
	At      time.Time
}

// NotSent is the settled state of an instance whose first frame never left
// Core (refused locally, or the connection went first): nothing happened
// on the Runtime, and no state of the machine describes that. Only an
// instance still in its machine's initial state moves to it.
const NotSent = "unsent"

// Validate checks the move against its machine's table: both states are
// the machine's, From is not terminal, and the table reaches To from From
// through its rules. Reaching, not one rule: Core writes the states it
// persists, and a connection's driver may step an instance through states
// in between (decision: the text fixes the machines, not which of their
// states a Core stores; daemon-protocol.txt:78, 185).
func (m Move) Validate() error {
	t := machines.ByName(m.Machine)
	if t == nil {
		return fmt.Errorf("%w: move of %s %q: no machine %q in the spec", ErrInvalid, m.Machine, m.Key, m.Machine)
	}
	to, err := t.ParseState(m.To)
	if m.To == NotSent {
		to, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s %q: move to %q: %v", ErrInvalid, m.Machine, m.Key, m.To, err)
	}
	if m.From == "" {
		return nil
	}
	from, err := t.ParseState(m.From)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s %q: move from %q: %v", ErrInvalid, m.Machine, m.Key, m.From, err)
	case t.State(from).Outcome != fsm.OutcomeNone:
		return fmt.Errorf("%w: %s %q: %s is terminal", ErrInvalid, m.Machine, m.Key, m.From)
	case to == 0 && from != t.Initial:
		return fmt.Errorf("%w: %s %q: only an instance in %s can end %s", ErrInvalid, m.Machine, m.Key, t.StateName(t.Initial), NotSent)
	case to != 0 && !reachOf(t)[from][to]:
		return fmt.Errorf("%w: %s %q: the %s machine cannot reach %s from %s", ErrInvalid, m.Machine, m.Key, m.Machine, m.To, m.From)
	}
	return nil
}

// Settles reports whether To ends the instance: a terminal state of its
// machine, or NotSent. It assumes a valid move.
func (m Move) Settles() bool {
	if m.To == NotSent {
		return true
	}
	t := machines.ByName(m.Machine)
	if t == nil {
		return false
	}
	s, err := t.ParseState(m.To)
	return err == nil && t.State(s).Outcome != fsm.OutcomeNone
}

// Instance is a persisted instance of a Core machine that keeps no record
// of its own beyond its state: a new Core machine persists through
// Instances with no new store code.
type Instance struct {
	Machine   string
	Key       string
	State     string
	Version   uint64 // 1 when created, one more per move
	Settled   bool
	UpdatedAt time.Time
}

// Instances persists machine instances generically, each move one
// conditional write.
type Instances interface {
	// MoveInstance applies m (Validate first: ErrInvalid). From "" creates
	// the instance at version 1, ErrConflict when it exists. Otherwise the
	// instance moves if it is in From (and at m.Version when non-zero),
	// ErrStale if not or if it is settled, ErrNotFound if it does not
	// exist. It returns the instance as stored after the move.
	MoveInstance(ctx context.Context, m Move) (Instance, error)
	GetInstance(ctx context.Context, machine, key string) (Instance, error)
	// OpenInstances lists the unsettled instances of machine, oldest move
	// first.
	OpenInstances(ctx context.Context, machine string) ([]Instance, error)
}

// reaches caches, per table, which states its rules reach from which.
var reaches sync.Map // *fsm.Table → map[fsm.StateID]map[fsm.StateID]bool

func reachOf(t *fsm.Table) map[fsm.StateID]map[fsm.StateID]bool {
	if r, ok := reaches.Load(t); ok {
		return r.(map[fsm.StateID]map[fsm.StateID]bool)
	}
	direct := movesOf(t)
	out := map[fsm.StateID]map[fsm.StateID]bool{}
	for s := fsm.StateID(1); t.ValidState(s); s++ {
		seen := map[fsm.StateID]bool{}
		next := []fsm.StateID{s}
		for len(next) > 0 {
			cur := next[len(next)-1]
			next = next[:len(next)-1]
			for to := range direct[cur] {
				if !seen[to] {
					seen[to] = true
					next = append(next, to)
				}
			}
		}
		out[s] = seen
	}
	r, _ := reaches.LoadOrStore(t, out)
	return r.(map[fsm.StateID]map[fsm.StateID]bool)
}

// movesOf returns, for each state of t, the states one rule moves it to.
func movesOf(t *fsm.Table) map[fsm.StateID]map[fsm.StateID]bool {
	out := map[fsm.StateID]map[fsm.StateID]bool{}
	for s := fsm.StateID(1); t.ValidState(s); s++ {
		for e := fsm.EventID(1); t.ValidEvent(e); e++ {
			for _, c := range t.Cells[t.CellIndex(s, e)].Cands {
				if c.Disp == fsm.Moved && c.To != s {
					if out[s] == nil {
						out[s] = map[fsm.StateID]bool{}
					}
					out[s][c.To] = true
				}
			}
		}
	}
	return out
}

// ValidateFor is Validate for a store method that moves one machine's
// instances: m must name that machine.
func (m Move) ValidateFor(machine string) error {
	if m.Machine != machine {
		return fmt.Errorf("%w: a move of %s %q given for a %s", ErrInvalid, m.Machine, m.Key, machine)
	}
	return m.Validate()
}

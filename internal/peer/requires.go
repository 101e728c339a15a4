package peer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// requirement is a catalog requirement resolved against this driver's
// tables (see wire.Requirement).
type requirement struct {
	table       *fsm.Table
	allowed     []bool // by StateID: the states a state requirement allows, or those one in flight counts as settled
	oneInFlight bool
	doc         string
}

// ErrRequirement matches every refusal of a frame whose cross-machine
// requirement does not hold.
var ErrRequirement = errors.New("peer: cross-machine requirement not met")

// resolveRequirements resolves the catalog's requirements for tables; a
// requirement on a machine not among them is left out.
func resolveRequirements(tables map[string]*fsm.Table) (map[string][]requirement, error) {
	requires := map[string][]requirement{}
	for _, e := range wire.Entries() {
		for _, r := range e.Requires {
			t, ok := tables[r.Machine]
			if !ok {
				continue
			}
			req := requirement{table: t, oneInFlight: r.OneInFlight}
			// allowed is, for a state requirement, the states the connection
			// may be in; for one in flight, the non-terminal states that
			// count as settled.
			req.allowed = make([]bool, len(t.States)+1)
			for _, name := range r.States {
				s, err := t.ParseState(name)
				if err != nil {
					return nil, fmt.Errorf("peer: %s requires %s: %w", e.Type, r.Machine, err)
				}
				req.allowed[s] = true
			}
			if !r.OneInFlight {
				req.doc = r.Machine + " in " + strings.Join(r.States, " or ")
			} else {
				req.doc = "no other unsettled " + r.Machine + " of this id"
			}
			requires[e.Type] = append(requires[e.Type], req)
		}
	}
	return requires, nil
}

// checkRequirements tells whether msg, addressed to targets, may fire now.
// A state requirement is about the connection's one instance; a driver that
// never opened that instance (one that does not run the connection's
// lifecycle) has nothing to check it against. A one-in-flight requirement
// refuses a target when another unsettled instance of its machine shares
// the target's envelope id (the Run of an input).
func (d *Driver) checkRequirements(msg *wire.Message, targets []Target) error {
	for _, r := range d.requires[msg.Type] {
		if !r.oneInFlight {
			i, ok := d.instances[Key{Machine: r.table.Name}]
			if ok && !r.allowed[i.State()] {
				return fmt.Errorf("%w: %s needs %s; it is %s", ErrRequirement, msg.Type, r.doc, i.StateName())
			}
			continue
		}
		for _, tg := range targets {
			if tg.Key.Machine != r.table.Name {
				continue
			}
			prefix := CompositeID(msg.ID, "")
			for k, i := range d.instances {
				if k.Machine == r.table.Name && k.ID != tg.Key.ID && strings.HasPrefix(k.ID, prefix) && !i.Terminal() && !r.allowed[i.State()] {
					return fmt.Errorf("%w: %s needs %s; %q is still in flight", ErrRequirement, msg.Type, r.doc, boundedID(strings.TrimPrefix(k.ID, prefix)))
				}
			}
		}
	}
	return nil
}

package peer

import (
	"errors"

	"github.com/agentwire/agentwire/fsm"
	wire "github.com/agentwire/agentwire/spec/wire"
)

// CatalogRouter routes by the drives of the wire catalog: each drive names
// the machine and the event a frame fires. The instance is the envelope id,
// with two exceptions the catalog does not yet declare: the Run that an
// execution_start names (its run_id, also reachable by the preparation
// request ID as an alias), and the Run a preparation_status reports on
// (through that alias; a status for a preparation with no Run reaches only
// the preparation). Machines this peer was not given are skipped.
func CatalogRouter(tables []*fsm.Table) Router {
	type drive struct {
		table  *fsm.Table
		events map[string]fsm.EventID
	}
	byName := map[string]*drive{}
	for _, t := range tables {
		dr := &drive{table: t, events: map[string]fsm.EventID{}}
		for i, e := range t.Events {
			dr.events[e.Name] = fsm.EventID(i + 1)
		}
		byName[t.Name] = dr
	}
	return RouterFunc(func(msg *wire.Message, idx Index, out []Target) ([]Target, error) {
		start := len(out)
		for _, drv := range msg.Entry.Drives {
			dr, ok := byName[drv.Machine]
			if !ok {
				continue
			}
			name := drv.EventFor(msg.Payload)
			if name == "" {
				continue
			}
			ev, ok := dr.events[name]
			if !ok {
				return nil, errors.New("the catalog names event " + name + " that machine " + drv.Machine + " does not declare")
			}
			target := Target{Key: Key{Machine: drv.Machine, ID: msg.ID}, Event: ev}
			switch p := msg.Payload.(type) {
			case wire.ExecutionStart:
				if drv.Machine == "run" {
					target.Key.ID, target.Alias = p.RunID, msg.ID
				}
			case wire.PreparationStatus:
				if drv.Machine == "run" {
					id, ok := idx.Alias("run", msg.ID)
					if !ok {
						continue
					}
					target.Key.ID = id
				}
			}
			out = append(out, target)
		}
		if len(out) == start {
			return out, errors.New("no machine of this peer handles " + msg.Type)
		}
		return out, nil
	})
}

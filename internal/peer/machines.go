package peer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agentwire/agentwire/fsm"
)

// machineSet is what a driver derives from its tables alone: the tables by
// name, each one's connection-loss event and the catalog's requirements
// resolved against them. Every connection of a peer runs the same tables,
// so drivers share one read-only set instead of building a copy each
// (about 2.4 KiB per connection, issue 21).
type machineSet struct {
	tables   map[string]*fsm.Table
	lost     map[*fsm.Table]fsm.EventID
	requires map[string][]requirement
}

// machineSets caches the sets by machineSetKey.
var machineSets sync.Map

// machineSetKey identifies the set of tables (by identity: a table is
// sealed and read-only) and lost-event overrides a driver is built from.
func machineSetKey(tables []*fsm.Table, lostEvents map[string]string) string {
	var b strings.Builder
	for _, t := range tables {
		fmt.Fprintf(&b, "%p;", t)
	}
	for _, k := range slices.Sorted(maps.Keys(lostEvents)) {
		fmt.Fprintf(&b, "%s=%s;", k, lostEvents[k])
	}
	return b.String()
}

// machinesOf returns the shared set for tables, building it on first use.
func machinesOf(tables []*fsm.Table, lostEvents map[string]string) (*machineSet, error) {
	key := machineSetKey(tables, lostEvents)
	if ms, ok := machineSets.Load(key); ok {
		return ms.(*machineSet), nil
	}
	ms := &machineSet{tables: map[string]*fsm.Table{}, lost: map[*fsm.Table]fsm.EventID{}}
	for _, t := range tables {
		if err := t.Seal(); err != nil {
			return nil, err
		}
		if _, dup := ms.tables[t.Name]; dup {
			return nil, fmt.Errorf("peer: machine %s given twice", t.Name)
		}
		ms.tables[t.Name] = t
		lost := "connection_lost"
		if name, ok := DefaultLostEvents[t.Name]; ok {
			lost = name
		}
		if name, ok := lostEvents[t.Name]; ok {
			lost = name
		}
		if id, err := t.ParseEvent(lost); err == nil {
			ms.lost[t] = id
		} else if _, named := lostEvents[t.Name]; named {
			return nil, fmt.Errorf("peer: LostEvents: %w", err)
		}
	}
	var err error
	if ms.requires, err = resolveRequirements(ms.tables); err != nil {
		return nil, err
	}
	actual, _ := machineSets.LoadOrStore(key, ms)
	return actual.(*machineSet), nil
}

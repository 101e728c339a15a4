package peer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// CatalogRouter routes by the wire catalog, which is generated from
// spec/catalog.yaml: each drive of a message type names the machine, the
// event (or the payload member that picks it), where the instance key comes
// from (the envelope id, a payload member, both, an alias an earlier frame
// registered, or the delivery ID the instance sent) and which names the
// frame registers for its instance. Everything is resolved against the
// given tables once; routing a frame compares no names and allocates
// nothing for the common sources. Drives of machines not in tables are
// skipped, so a peer may run a subset.
func CatalogRouter(tables []*fsm.Table) (Router, error) {
	byName := map[string]*fsm.Table{}
	for _, t := range tables {
		byName[t.Name] = t
	}
	r := &catalogRouter{byType: map[string][]route{}}
	for _, e := range wire.Entries() {
		for i := range e.Drives {
			d := &e.Drives[i]
			t, ok := byName[d.Machine]
			if !ok {
				continue
			}
			rt := route{drive: d, table: t}
			resolve := func(name string) (fsm.EventID, error) {
				id, err := t.ParseEvent(name)
				if err != nil {
					return 0, fmt.Errorf("peer: the catalog drives %s event %q, which the table lacks: %w", t.Name, name, err)
				}
				return id, nil
			}
			var err error
			if d.By == "" {
				rt.event, err = resolve(d.Event)
			} else {
				rt.keyed = make([]fsm.EventID, len(d.Events))
				for k, kv := range d.Events {
					if rt.keyed[k], err = resolve(kv[1]); err != nil {
						break
					}
				}
			}
			if err != nil {
				return nil, err
			}
			r.byType[e.Type] = append(r.byType[e.Type], rt)
		}
	}
	return r, nil
}

// MustCatalogRouter is CatalogRouter for tables known to match the catalog
// (the generated ones); a mismatch is a generator bug.
func MustCatalogRouter(tables []*fsm.Table) Router {
	r, err := CatalogRouter(tables)
	if err != nil {
		panic(err)
	}
	return r
}

type catalogRouter struct {
	byType map[string][]route
}

type route struct {
	drive *wire.Drive
	table *fsm.Table
	event fsm.EventID   // unkeyed drives
	keyed []fsm.EventID // keyed drives, parallel to drive.Events
}

var errNoInstance = errors.New("the frame addresses no instance this peer has")

func (r *catalogRouter) Route(msg *wire.Message, idx Index, out []Target) ([]Target, error) {
	routes, ok := r.byType[msg.Type]
	if !ok {
		return out, errors.New("no machine of this peer handles " + msg.Type)
	}
	start := len(out)
	for i := range routes {
		rt := &routes[i]
		ev := rt.event
		if rt.keyed != nil {
			ev = 0
			if k, ok := msg.Payload.(interface{ DriveKey() string }); ok {
				key := k.DriveKey()
				for n, kv := range rt.drive.Events {
					if kv[0] == key {
						ev = rt.keyed[n]
						break
					}
				}
			}
			if ev == 0 {
				continue // this value drives no event of that machine
			}
		}
		id, ok := instanceKey(rt.drive, rt.table.Name, msg, idx)
		if !ok {
			continue
		}
		out = append(out, Target{Key: Key{Machine: rt.table.Name, ID: id}, Event: ev, Registers: rt.drive.Registers})
	}
	if len(out) == start {
		return out, errNoInstance
	}
	return out, nil
}

// instanceKey finds the instance a drive addresses; false when an alias or
// delivery ID names no instance of this connection.
func instanceKey(d *wire.Drive, machine string, msg *wire.Message, idx Index) (string, bool) {
	src := &d.Instance
	switch src.Kind {
	case wire.InstanceByField:
		return src.Field(msg.Payload), true
	case wire.InstanceByIDAndField:
		return CompositeID(msg.ID, src.Field(msg.Payload)), true
	case wire.InstanceByAlias:
		return idx.Alias(machine, src.Name, msg.ID)
	case wire.InstanceByDelivery:
		return idx.Alias(machine, deliveryAlias, src.Field(msg.Payload))
	case wire.InstanceConnection:
		return "", true
	}
	return msg.ID, true
}

// deliveryAlias is the alias kind under which delivery IDs are registered.
const deliveryAlias = "delivery"

// CompositeID is the instance ID of a machine keyed by an envelope id and a
// payload member (a Run's input ID, a Run's call ID). NUL never occurs in a
// valid id, so the two parts cannot run together.
func CompositeID(id, member string) string { return id + "\x00" + member }

// SplitCompositeID is CompositeID's inverse: the envelope id and the
// member; ok is false for an ID that is not composite.
func SplitCompositeID(key string) (id, member string, ok bool) { return strings.Cut(key, "\x00") }

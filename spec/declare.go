package spec

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file parses the declarations the protocol checks (checks.go) read:
// an event's failed_send and dispatch, a budget timer's parts, resources
// and the actions that acquire and release them.

// eventRefs keeps an event's references to other events until every event
// of the machine is declared.
type eventRefs struct {
	ev         *Event
	failedSend *yaml.Node
	budget     []string // the part names of a budget timer
	budgetNode *yaml.Node
}

// budgetParts splits a timer value such as "native_write + receipt_send"
// into its part names; it returns nil for anything that is not a sum of
// names (a plain duration such as 15s).
func budgetParts(s string) []string {
	if !strings.Contains(s, "+") {
		return nil
	}
	var parts []string
	for _, p := range strings.Split(s, "+") {
		parts = append(parts, strings.TrimSpace(p))
	}
	return parts
}

// resolveEventRefs resolves failed_send names and budget parts once every
// event is known, and computes a budget's duration as the sum of its parts.
func (d *decoder) resolveEventRefs(refs []eventRefs, events map[string]*Event, broken map[string]bool) {
	for _, r := range refs {
		ev := r.ev
		if r.failedSend != nil {
			name, _ := d.str(r.failedSend, "failed_send")
			fs, ok := events[name]
			switch {
			case !ok && broken[name]:
			case !ok:
				d.errs.add(d.pos(r.failedSend), "message event %q names unknown failed_send event %q%s", ev.Name, name, suggest(name, keys(events)))
			case fs.Kind != EventLocal:
				d.errs.add(d.pos(r.failedSend), "failed_send of %q must be a local event the sender observes, not the %s event %q", ev.Name, fs.Kind, name)
			case fs.By != RoleBoth && fs.By != ev.From:
				d.errs.add(d.pos(r.failedSend), "failed_send of %q names %q, which only %s observes, but %s sends %s", ev.Name, name, fs.By, ev.From, ev.Message)
			default:
				ev.FailedSend = fs
			}
		}
		if r.budgetNode == nil {
			continue
		}
		if len(r.budget) < 2 {
			d.errs.add(d.pos(r.budgetNode), "budget %q must sum at least two timers", ev.Name)
			continue
		}
		seen := map[string]bool{}
		ok := true
		for _, name := range r.budget {
			part, found := events[name]
			switch {
			case name == "":
				d.errs.add(d.pos(r.budgetNode), "budget %q has an empty part; write it as timer + timer", ev.Name)
			case seen[name]:
				d.errs.add(d.pos(r.budgetNode), "budget %q counts timer %q twice", ev.Name, name)
			case !found && broken[name]:
			case !found || part.Kind != EventTimer:
				d.errs.add(d.pos(r.budgetNode), "budget %q sums %q, which is not a declared timer%s", ev.Name, name, suggest(name, keys(events)))
			case part.Budget != nil || part == ev:
				d.errs.add(d.pos(r.budgetNode), "budget %q sums %q, which is itself a budget; sum plain timers", ev.Name, name)
			case part.By != ev.By:
				d.errs.add(d.pos(r.budgetNode), "budget %q belongs to %s but its part %q to %s; a budget is one peer's", ev.Name, ev.By, name, part.By)
			default:
				seen[name] = true
				ev.Budget = append(ev.Budget, part)
				continue
			}
			ok = false
		}
		if !ok {
			ev.Budget = nil
			continue
		}
		for _, part := range ev.Budget {
			ev.Duration += part.Duration
		}
	}
}

// resource parses one entry of resources:.
func (d *decoder) resource(n *yaml.Node, index int) *Resource {
	f := d.fields(n, "a resource", "name", "doc", "held_by", "kept_when_unknown")
	if f == nil {
		return nil
	}
	name, ok := "", false
	if f["name"] == nil {
		d.errs.add(d.pos(n), "a resource has no name")
		return nil
	}
	if name, ok = d.ident(f["name"], "resource name"); !ok {
		return nil
	}
	r := &Resource{Name: name, Index: index, Pos: d.pos(n)}
	if f["doc"] == nil {
		d.errs.add(d.pos(n), "resource %q has no doc", name)
	} else {
		r.Doc, _ = d.str(f["doc"], "doc")
	}
	if f["held_by"] == nil {
		d.errs.add(d.pos(n), "resource %q needs held_by: core, runtime or both", name)
		return nil
	}
	if r.HeldBy, ok = d.role(f["held_by"], "held_by", true); !ok {
		return nil
	}
	if v := f["kept_when_unknown"]; v != nil {
		r.KeptWhenUnknown, _ = d.boolean(v, "kept_when_unknown")
	}
	return r
}

// action parses one entry of actions:, with the resource it acquires or
// releases.
func (d *decoder) action(n *yaml.Node, index int, resources map[string]*Resource) *Action {
	f := d.fields(n, "an action", "name", "doc", "acquires", "releases")
	if f == nil {
		return nil
	}
	name, doc, ok := d.namedFields(n, f, "an action")
	if !ok {
		return nil
	}
	a := &Action{Name: name, Doc: doc, Index: index, Pos: d.pos(n)}
	for _, k := range []string{"acquires", "releases"} {
		v := f[k]
		if v == nil {
			continue
		}
		rname, _ := d.str(v, k)
		r, found := resources[rname]
		if !found {
			d.errs.add(d.pos(v), "action %q %s unknown resource %q%s", name, k, rname, suggest(rname, keys(resources)))
			continue
		}
		if k == "acquires" {
			a.Acquires = r
		} else {
			a.Releases = r
		}
	}
	if a.Acquires != nil && a.Releases != nil {
		d.errs.add(d.pos(n), "action %q both acquires and releases; declare two actions", name)
	}
	return a
}

package spec

import (
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// InvariantsFile holds the cross-machine properties the model checker
// (package modelcheck) checks on every composed state of a Core and a
// Runtime driver. The loader checks every name in it against the machines.
const InvariantsFile = "invariants.yaml"

// InvariantKind is one class of property the checker knows how to check;
// the file declares instances of them with their parameters.
type InvariantKind string

const (
	// KindEvidence: the role's copy settles success or failure only on a
	// frame received from the peer, or on an event listed in Allow.
	KindEvidence InvariantKind = "evidence"
	// KindNoReplay: no frame of the listed types carries an identity that
	// was already dispatched on an earlier connection.
	KindNoReplay InvariantKind = "no_replay"
	// KindEffectOnlyOn: the role performs Action only on one of Events.
	KindEffectOnlyOn InvariantKind = "effect_only_on"
	// KindEffectRequires: when the role performs Action on event On, the
	// instance of Requires.Machine named by the frame's envelope id is in
	// one of Requires.States.
	KindEffectRequires InvariantKind = "effect_requires"
	// KindResources: a settled instance holds no resource its table
	// declares, unless it settled unknown and the resource is
	// kept_when_unknown.
	KindResources InvariantKind = "resources"
	// KindProjection: while connected and quiescent, both copies of an
	// instance of Machine map to the same state.
	KindProjection InvariantKind = "projection"
	// KindSettles: from every explored state a settled state stays
	// reachable, and no state is stuck (nothing can move, nothing settled).
	KindSettles InvariantKind = "settles"
	// KindFollows: a peer's own machine (Machine, peers: core) accepts every
	// event the composition fires on it, and settles once what it follows
	// settled.
	KindFollows InvariantKind = "follows"
)

var invariantKinds = []InvariantKind{KindEvidence, KindNoReplay, KindEffectOnlyOn, KindEffectRequires, KindResources, KindProjection, KindSettles, KindFollows}

// Invariant is one declared property. Which fields are set depends on Kind.
type Invariant struct {
	Name string
	Kind InvariantKind
	Doc  string
	Pos  Pos

	Role     Role
	Machines []string // evidence
	// Allow (evidence) and Events (effect_only_on) are machine.event names;
	// an Allow entry may add " from state, state" to hold only there.
	Allow  []string
	Events []string
	Types  []string // no_replay: wire types
	Action string   // effect_*: machine.action
	On     string   // effect_requires: machine.event
	// Requires (effect_requires): the machine and states the frame's
	// envelope id must name.
	Requires struct {
		Machine string
		States  []string
	}
	// Machine, Alone, Agree (projection): the states one side has alone,
	// and the pairs of different states (Core's, the Runtime's) that still
	// agree.
	Machine string
	Alone   map[Role][]string
	Agree   [][2]string
	// Settled (settles): per machine, the live states that count as settled
	// besides the terminal and initial ones (e.g. a connection that is live).
	Settled map[string][]string
}

func parseInvariants(name string, src []byte, model *Model, errs *errorList) []*Invariant {
	d := &decoder{file: name, errs: errs}
	root := parseDocument(name, src, errs)
	if root == nil {
		return nil
	}
	f := d.fields(root, "the invariant list", "invariants")
	if f == nil || f["invariants"] == nil {
		errs.add(d.pos(root), "the invariant list has no invariants key")
		return nil
	}
	var out []*Invariant
	seen := map[string]Pos{}
	for _, n := range d.seq(f["invariants"], "invariants") {
		inv := d.invariant(n, model)
		if inv == nil {
			continue
		}
		if prev, dup := seen[inv.Name]; dup {
			errs.add(inv.Pos, "invariant %q is already declared at %s", inv.Name, prev)
			continue
		}
		seen[inv.Name] = inv.Pos
		out = append(out, inv)
	}
	return out
}

func (d *decoder) invariant(n *yaml.Node, model *Model) *Invariant {
	f := d.fields(n, "an invariant", "name", "kind", "doc", "role", "machines", "allow", "events", "types",
		"action", "on", "requires", "machine", "alone", "agree", "settled")
	if f == nil {
		return nil
	}
	name, doc, ok := d.namedFields(n, f, "an invariant")
	if !ok {
		return nil
	}
	inv := &Invariant{Name: name, Doc: doc, Pos: d.pos(n)}
	if f["kind"] == nil {
		d.errs.add(d.pos(n), "invariant %q has no kind (one of %s)", name, kindList())
		return nil
	}
	k, _ := d.str(f["kind"], "kind")
	inv.Kind = InvariantKind(k)
	known := false
	for _, kk := range invariantKinds {
		known = known || kk == inv.Kind
	}
	if !known {
		d.errs.add(d.pos(f["kind"]), "invariant %q: unknown kind %q (one of %s)", name, k, kindList())
		return nil
	}
	allowed := map[InvariantKind][]string{
		KindEvidence:       {"role", "machines", "allow"},
		KindNoReplay:       {"types"},
		KindEffectOnlyOn:   {"role", "action", "events"},
		KindEffectRequires: {"role", "action", "on", "requires"},
		KindResources:      {},
		KindProjection:     {"machine", "alone", "agree"},
		KindSettles:        {"settled"},
		KindFollows:        {"machine"},
	}[inv.Kind]
	required := map[InvariantKind][]string{
		KindEvidence:       {"role", "machines"},
		KindNoReplay:       {"types"},
		KindEffectOnlyOn:   {"role", "action", "events"},
		KindEffectRequires: {"role", "action", "on", "requires"},
		KindProjection:     {"machine"},
		KindFollows:        {"machine"},
	}[inv.Kind]
	before := len(d.errs.errs)
	for key, v := range f {
		switch key {
		case "name", "kind", "doc":
			continue
		}
		if !contains(allowed, key) {
			d.errs.add(d.pos(v), "invariant %q: key %q does not apply to kind %s", name, key, inv.Kind)
		}
	}
	for _, key := range required {
		if f[key] == nil {
			d.errs.add(d.pos(n), "invariant %q: kind %s needs %q", name, inv.Kind, key)
		}
	}
	if len(d.errs.errs) > before {
		return nil
	}
	if v := f["role"]; v != nil {
		inv.Role, _ = d.role(v, "role", false)
	}
	for _, m := range d.listOf(f["machines"], "machines") {
		if d.machine(m, model) != nil {
			inv.Machines = append(inv.Machines, m.Value)
		}
	}
	for _, e := range d.listOf(f["allow"], "allow") {
		// "machine.event" or "machine.event from state, state"
		ev, from, scoped := strings.Cut(e.Value, " from ")
		n := *e
		n.Value = strings.TrimSpace(ev)
		if !d.qualified(&n, model, "event") {
			continue
		}
		if scoped {
			m, _ := model.Machine(strings.SplitN(n.Value, ".", 2)[0])
			var states []*yaml.Node
			for _, st := range strings.Split(from, ",") {
				sn := *e
				sn.Value = strings.TrimSpace(st)
				states = append(states, &sn)
			}
			if len(d.states(m, states)) != len(states) {
				continue
			}
		}
		inv.Allow = append(inv.Allow, e.Value)
	}
	for _, e := range d.listOf(f["events"], "events") {
		if d.qualified(e, model, "event") {
			inv.Events = append(inv.Events, e.Value)
		}
	}
	if v := f["action"]; v != nil && d.qualified(v, model, "action") {
		inv.Action = v.Value
	}
	if v := f["on"]; v != nil && d.qualified(v, model, "event") {
		inv.On = v.Value
	}
	for _, t := range d.listOf(f["types"], "types") {
		if model.Catalog != nil {
			if _, ok := model.Catalog.Message(t.Value); !ok {
				d.errs.add(d.pos(t), "invariant %q: the catalog has no wire type %q", name, t.Value)
				continue
			}
		}
		inv.Types = append(inv.Types, t.Value)
	}
	if v := f["requires"]; v != nil {
		if g := d.fields(v, "requires", "machine", "states"); g != nil && g["machine"] != nil && g["states"] != nil {
			if m := d.machine(g["machine"], model); m != nil {
				inv.Requires.Machine = m.Name
				inv.Requires.States = d.states(m, d.listOf(g["states"], "states"))
			}
		} else if g != nil {
			d.errs.add(d.pos(v), "invariant %q: requires needs machine and states", name)
		}
	}
	var pm *Machine
	if v := f["machine"]; v != nil {
		if pm = d.machine(v, model); pm != nil {
			inv.Machine = pm.Name
		}
		if pm != nil && inv.Kind == KindFollows && pm.Peers == RoleBoth {
			d.errs.add(d.pos(v), "invariant %q: %s is run by both peers; follows is for a peer's own machine (peers: core)", name, pm.Name)
		}
	}
	if v := f["alone"]; v != nil && pm != nil {
		inv.Alone = map[Role][]string{}
		for r, list := range d.byRole(v, "alone") {
			inv.Alone[r] = d.states(pm, d.listOf(list, "alone"))
		}
	}
	if v := f["agree"]; v != nil && pm != nil {
		for _, pair := range d.seq(v, "agree") {
			if pair.Kind != yaml.SequenceNode || len(pair.Content) != 2 {
				d.errs.add(d.pos(pair), "an agree entry is a pair [core state, runtime state]")
				continue
			}
			if len(d.states(pm, pair.Content)) == 2 {
				inv.Agree = append(inv.Agree, [2]string{pair.Content[0].Value, pair.Content[1].Value})
			}
		}
	}
	if v := f["settled"]; v != nil {
		inv.Settled = map[string][]string{}
		if v.Kind != yaml.MappingNode {
			d.errs.add(d.pos(v), "settled must map machine names to state lists")
		} else {
			for i := 0; i+1 < len(v.Content); i += 2 {
				if m := d.machine(v.Content[i], model); m != nil {
					inv.Settled[m.Name] = d.states(m, d.listOf(v.Content[i+1], "settled"))
				}
			}
		}
	}
	if len(d.errs.errs) > before {
		return nil
	}
	return inv
}

func kindList() string {
	s := make([]string, len(invariantKinds))
	for i, k := range invariantKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (d *decoder) listOf(n *yaml.Node, what string) []*yaml.Node {
	if n == nil {
		return nil
	}
	return d.names(n, what)
}

// byRole reads a mapping keyed by core and runtime.
func (d *decoder) byRole(n *yaml.Node, what string) map[Role]*yaml.Node {
	out := map[Role]*yaml.Node{}
	f := d.fields(n, what, "core", "runtime")
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := RoleCore
		if k == "runtime" {
			r = RoleRuntime
		}
		out[r] = f[k]
	}
	return out
}

func (d *decoder) machine(n *yaml.Node, model *Model) *Machine {
	s, ok := d.str(n, "machine")
	if !ok {
		return nil
	}
	m, ok := model.Machine(s)
	if !ok {
		d.errs.add(d.pos(n), "no machine %q", s)
		return nil
	}
	return m
}

func (d *decoder) states(m *Machine, list []*yaml.Node) []string {
	var out []string
	for _, n := range list {
		found := false
		for _, s := range m.States {
			found = found || s.Name == n.Value
		}
		if !found {
			d.errs.add(d.pos(n), "machine %s has no state %q", m.Name, n.Value)
			continue
		}
		out = append(out, n.Value)
	}
	return out
}

// qualified checks a machine.event or machine.action name.
func (d *decoder) qualified(n *yaml.Node, model *Model, what string) bool {
	s, ok := d.str(n, what)
	if !ok {
		return false
	}
	mname, item, ok := strings.Cut(s, ".")
	if !ok {
		d.errs.add(d.pos(n), "%q: want machine.%s", s, what)
		return false
	}
	m, ok := model.Machine(mname)
	if !ok {
		d.errs.add(d.pos(n), "%q: no machine %q", s, mname)
		return false
	}
	switch what {
	case "event":
		for _, e := range m.Events {
			if e.Name == item {
				return true
			}
		}
	case "action":
		for _, a := range m.Actions {
			if a.Name == item {
				return true
			}
		}
	}
	d.errs.add(d.pos(n), "%q: machine %s has no %s %q", s, mname, what, item)
	return false
}

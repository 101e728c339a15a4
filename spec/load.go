package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/agentwire/agentwire/fsm"
)

// LoadDir loads every *.yaml file directly in dir of fsys. The file names in
// errors are prefix joined with the file's base name, so callers choose
// whether errors say "spec/run.yaml" or an absolute path.
func LoadDir(fsys fs.FS, dir, prefix string) (*Model, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read spec directory: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".yaml" {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read spec file: %w", err)
		}
		files[path.Join(prefix, e.Name())] = b
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("read spec directory %s: no *.yaml files", dir)
	}
	return Load(files)
}

// Load parses and validates a set of spec files keyed by the name errors
// should use. It never panics on malformed input: every problem of every file
// is returned at once as a joined error of *Error values.
func Load(files map[string][]byte) (*Model, error) {
	names := make([]string, 0, len(files))
	var catalogName, capsName, invName string
	for n := range files {
		switch path.Base(n) {
		case CatalogFile:
			catalogName = n
		case InvariantsFile:
			invName = n
		case CapabilitiesFile:
			capsName = n
		default:
			names = append(names, n)
		}
	}
	sort.Strings(names)

	var errs errorList
	model := &Model{}
	byName := map[string]*Machine{}
	// The catalog is checked against the machines that loaded; drives of a
	// machine whose file has errors are skipped, since that file already
	// reports them. A file too broken to name its machine stops the check,
	// which would otherwise blame the catalog for it.
	failed, nameless := map[string]bool{}, false
	for _, name := range names {
		m, mname := parseFile(name, files[name], &errs)
		if m == nil {
			failed[mname] = true
			nameless = nameless || mname == ""
			continue
		}
		if prev, dup := byName[m.Name]; dup {
			errs.add(m.Pos, "machine %q is already declared at %s", m.Name, prev.Pos)
			continue
		}
		byName[m.Name] = m
		model.Machines = append(model.Machines, m)
	}
	sort.Slice(model.Machines, func(i, j int) bool { return model.Machines[i].Name < model.Machines[j].Name })
	if capsName != "" {
		model.Capabilities = parseCapabilities(capsName, files[capsName], &errs)
	}
	if catalogName != "" && !nameless {
		model.Catalog = parseCatalog(catalogName, files[catalogName], model, failed, &errs)
	}
	if invName != "" && len(failed) == 0 {
		// Invariants name machines; a machine that did not load reports
		// its own errors.
		model.Invariants = parseInvariants(invName, files[invName], model, &errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return model, nil
}

var identRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// node helpers: every accessor records a positioned error instead of failing.
type decoder struct {
	file string
	errs *errorList
	// failed names the machines whose files did not load (catalog only).
	failed map[string]bool
}

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line} }

// fields checks that n is a mapping with only the allowed keys, each once,
// and returns the values by key.
func (d *decoder) fields(n *yaml.Node, what string, allowed ...string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		d.errs.add(d.pos(n), "%s must be a mapping, found %s", what, kindName(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errs.add(d.pos(k), "%s has a key that is not a plain name", what)
			continue
		}
		ok := false
		for _, a := range allowed {
			if a == k.Value {
				ok = true
				break
			}
		}
		if !ok {
			d.errs.add(d.pos(k), "%s has unknown key %q (allowed: %s)", what, k.Value, strings.Join(allowed, ", "))
			continue
		}
		if _, dup := out[k.Value]; dup {
			d.errs.add(d.pos(k), "%s repeats key %q", what, k.Value)
			continue
		}
		out[k.Value] = v
	}
	return out
}

func (d *decoder) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errs.add(d.pos(n), "%s must be a string, found %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) ident(n *yaml.Node, what string) (string, bool) {
	s, ok := d.str(n, what)
	if !ok {
		return "", false
	}
	if !identRE.MatchString(s) {
		d.errs.add(d.pos(n), "%s %q must be lower_snake_case (a-z, 0-9, single underscores)", what, s)
		return "", false
	}
	return s, true
}

func (d *decoder) boolean(n *yaml.Node, what string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		d.errs.add(d.pos(n), "%s must be true or false, found %s", what, kindName(n))
		return false, false
	}
	return n.Value == "true", true
}

// names accepts one scalar or a sequence of scalars.
func (d *decoder) names(n *yaml.Node, what string) []*yaml.Node {
	switch n.Kind {
	case yaml.ScalarNode:
		return []*yaml.Node{n}
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.errs.add(d.pos(n), "%s must not be an empty list", what)
		}
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				d.errs.add(d.pos(c), "%s entries must be names, found %s", what, kindName(c))
				return nil
			}
		}
		return n.Content
	default:
		d.errs.add(d.pos(n), "%s must be a name or a list of names, found %s", what, kindName(n))
		return nil
	}
}

func (d *decoder) seq(n *yaml.Node, what string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		d.errs.add(d.pos(n), "%s must be a list, found %s", what, kindName(n))
		return nil
	}
	return n.Content
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// rawRule keeps a rule's nodes until every state and event name is known.
type rawRule struct {
	node                    *yaml.Node
	from, on                []*yaml.Node
	id, guard, to, ign, rej *yaml.Node
	effects                 []*yaml.Node
}

// parseFile parses and validates one machine file. It returns nil when the
// file has errors, with the machine's name when the file got that far.
func parseFile(name string, src []byte, errs *errorList) (*Machine, string) {
	m := parseMachine(name, src, errs)
	if m == nil {
		return nil, machineName(src)
	}
	return m, m.Name
}

// machineName reads the machine: key of a file that failed to load, or "".
func machineName(src []byte) string {
	var doc struct {
		Machine string `yaml:"machine"`
	}
	if yaml.Unmarshal(src, &doc) != nil || !identRE.MatchString(doc.Machine) {
		return ""
	}
	return doc.Machine
}

func parseMachine(name string, src []byte, errs *errorList) *Machine {
	d := &decoder{file: name, errs: errs}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		errs.add(Pos{File: name, Line: 1}, "empty spec file: it needs a machine, doc, scope, states, events and rules")
		return nil
	} else if err != nil {
		errs.add(Pos{File: name, Line: yamlErrLine(err, src)}, "not valid YAML: %s", yamlErrText(err))
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		errs.add(d.pos(&extra), "a spec file holds exactly one YAML document")
	} else if !errors.Is(err, io.EOF) {
		errs.add(Pos{File: name, Line: yamlErrLine(err, src)}, "a spec file holds exactly one YAML document, and the next one is not valid YAML: %s", yamlErrText(err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		errs.add(Pos{File: name, Line: 1}, "empty spec file")
		return nil
	}
	root := doc.Content[0]
	before := len(errs.errs)
	f := d.fields(root, "the machine", "machine", "doc", "instance", "peers", "states", "events", "guards", "actions", "resources", "rules")
	if f == nil {
		return nil
	}
	m := &Machine{Pos: d.pos(root)}
	for _, req := range []string{"machine", "doc", "instance", "states", "events", "rules"} {
		if f[req] == nil {
			errs.add(d.pos(root), "the machine has no %q key", req)
		}
	}
	if n := f["machine"]; n != nil {
		m.Name, _ = d.ident(n, "machine name")
		m.Pos = d.pos(n)
	}
	if n := f["doc"]; n != nil {
		m.Doc, _ = d.str(n, "doc")
	}
	if n := f["instance"]; n != nil {
		if g := d.fields(n, "the instance", "identity", "doc"); g != nil {
			if g["identity"] == nil || g["doc"] == nil {
				errs.add(d.pos(n), "the instance needs identity: (what keys one instance) and doc:")
			} else {
				m.Instance, _ = d.ident(g["identity"], "instance identity")
				m.Scope, _ = d.str(g["doc"], "instance doc")
				m.InstancePos = d.pos(g["identity"])
			}
		}
	}
	m.Peers = RoleBoth
	if n := f["peers"]; n != nil {
		m.Peers, _ = d.role(n, "peers", true)
		m.PeersPos = d.pos(n)
	}
	// Go on after a problem in the header: the rest of the file is checked
	// too, so one run reports everything.

	symbols := map[string]Pos{} // states, events, guards and actions share one namespace
	declare := func(n *yaml.Node, kind, id string) bool {
		if prev, dup := symbols[id]; dup {
			errs.add(d.pos(n), "%s %q is already declared at %s", kind, id, prev)
			return false
		}
		symbols[id] = d.pos(n)
		return true
	}
	// "same" and "*" have meaning in rules and can't name anything.
	reserved := map[string]bool{"same": true}

	var stateTimers []struct {
		st    *State
		nodes []*yaml.Node
	}
	if n := f["states"]; n != nil {
		for _, sn := range d.seq(n, "states") {
			sf := d.fields(sn, "a state", "name", "doc", "initial", "terminal", "timers")
			if sf == nil {
				continue
			}
			st := &State{Pos: d.pos(sn), Index: len(m.States)}
			if sf["name"] == nil {
				errs.add(d.pos(sn), "a state has no name")
				continue
			}
			var ok bool
			if st.Name, ok = d.ident(sf["name"], "state name"); !ok {
				continue
			}
			if reserved[st.Name] {
				errs.add(d.pos(sf["name"]), "%q is reserved and cannot name a state", st.Name)
				continue
			}
			if !declare(sf["name"], "state", st.Name) {
				continue
			}
			if v := sf["doc"]; v != nil {
				st.Doc, _ = d.str(v, "state doc")
			} else {
				errs.add(d.pos(sn), "state %q has no doc (a one-line meaning)", st.Name)
			}
			if v := sf["initial"]; v != nil {
				st.Initial, _ = d.boolean(v, "initial")
			}
			if v := sf["terminal"]; v != nil {
				s, _ := d.str(v, "terminal")
				switch s {
				case "success":
					st.Outcome = OutcomeSuccess
				case "failure":
					st.Outcome = OutcomeFailure
				case "unknown":
					st.Outcome = OutcomeUnknown
				default:
					errs.add(d.pos(v), "terminal must be success, failure or unknown, found %q", s)
				}
			}
			if v := sf["timers"]; v != nil {
				stateTimers = append(stateTimers, struct {
					st    *State
					nodes []*yaml.Node
				}{st, d.names(v, "timers")})
			}
			m.States = append(m.States, st)
		}
	}
	// broken remembers events that failed to parse, so references to them
	// do not also report "unknown" for a name that is in fact declared.
	broken := map[string]bool{}
	var refs []eventRefs
	if n := f["events"]; n != nil {
		for _, en := range d.seq(n, "events") {
			ev, ref := d.event(en, len(m.Events))
			if ev == nil {
				if en.Kind == yaml.MappingNode {
					for i := 0; i+1 < len(en.Content); i += 2 {
						if en.Content[i].Value == "name" {
							broken[en.Content[i+1].Value] = true
						}
					}
				}
				continue
			}
			if declare(en, "event", ev.Name) {
				m.Events = append(m.Events, ev)
				ref.ev = ev
				refs = append(refs, ref)
			}
		}
	}
	// Resources come before actions, which name them.
	resources := map[string]*Resource{}
	if n := f["resources"]; n != nil {
		for _, rn := range d.seq(n, "resources") {
			if r := d.resource(rn, len(m.Resources)); r != nil && declare(rn, "resource", r.Name) {
				m.Resources = append(m.Resources, r)
				resources[r.Name] = r
			}
		}
	}
	if n := f["guards"]; n != nil {
		for _, gn := range d.seq(n, "guards") {
			name, doc, ok := d.named(gn, "a guard")
			if ok && declare(gn, "guard", name) {
				if len(m.Guards) == fsm.MaxGuards {
					d.errs.add(d.pos(gn), "guard %q is one too many: a machine declares at most %d guards (a GuardSet is one 64-bit mask)", name, fsm.MaxGuards)
				}
				m.Guards = append(m.Guards, &Guard{Name: name, Doc: doc, Index: len(m.Guards), Pos: d.pos(gn)})
			}
		}
	}
	if n := f["actions"]; n != nil {
		for _, an := range d.seq(n, "actions") {
			if a := d.action(an, len(m.Actions), resources); a != nil && declare(an, "action", a.Name) {
				m.Actions = append(m.Actions, a)
			}
		}
	}

	states := map[string]*State{}
	for _, s := range m.States {
		states[s.Name] = s
	}
	events := map[string]*Event{}
	for _, e := range m.Events {
		events[e.Name] = e
	}
	d.resolveEventRefs(refs, events, broken)
	for _, st := range stateTimers {
		for _, tn := range st.nodes {
			e, ok := events[tn.Value]
			switch {
			case !ok && broken[tn.Value]:
				// already reported where the timer is declared
			case !ok:
				errs.add(d.pos(tn), "state %q arms unknown timer %q", st.st.Name, tn.Value)
			case e.Kind != EventTimer:
				errs.add(d.pos(tn), "state %q arms %q, which is a %s event, not a timer", st.st.Name, tn.Value, e.Kind)
			case st.st.Armed(e):
				errs.add(d.pos(tn), "state %q arms timer %q twice", st.st.Name, tn.Value)
			default:
				st.st.Timers = append(st.st.Timers, e)
			}
		}
	}

	var raws []rawRule
	if n := f["rules"]; n != nil {
		for _, rn := range d.seq(n, "rules") {
			rf := d.fields(rn, "a rule", "id", "from", "on", "guard", "to", "ignore", "reject", "effects")
			if rf == nil {
				continue
			}
			r := rawRule{node: rn, id: rf["id"], guard: rf["guard"], to: rf["to"], ign: rf["ignore"], rej: rf["reject"]}
			if rf["from"] == nil || rf["on"] == nil {
				errs.add(d.pos(rn), "a rule needs both from and on")
				continue
			}
			r.from = d.names(rf["from"], "from")
			r.on = d.names(rf["on"], "on")
			if v := rf["effects"]; v != nil {
				r.effects = d.seq(v, "effects")
			}
			raws = append(raws, r)
		}
	}
	if len(errs.errs) > before {
		return nil
	}
	clashes := resolveRules(d, m, raws, states, events, broken)
	if len(errs.errs) > before {
		return nil
	}
	validate(m, errs)
	if len(errs.errs) > before {
		return nil
	}
	for _, c := range clashes {
		c.report(errs)
	}
	if len(errs.errs) > before {
		return nil
	}
	return m
}

func (d *decoder) named(n *yaml.Node, what string) (name, doc string, ok bool) {
	f := d.fields(n, what, "name", "doc")
	if f == nil {
		return "", "", false
	}
	return d.namedFields(n, f, what)
}

// namedFields reads the name and the required doc of an entry whose keys
// fields already checked.
func (d *decoder) namedFields(n *yaml.Node, f map[string]*yaml.Node, what string) (name, doc string, ok bool) {
	if f["name"] == nil {
		d.errs.add(d.pos(n), "%s has no name", what)
		return "", "", false
	}
	if name, ok = d.ident(f["name"], what+" name"); !ok {
		return "", "", false
	}
	if f["doc"] == nil {
		d.errs.add(d.pos(n), "%s %q has no doc", what, name)
		return "", "", false
	}
	doc, ok = d.str(f["doc"], "doc")
	return name, doc, ok
}

func (d *decoder) role(n *yaml.Node, what string, allowBoth bool) (Role, bool) {
	s, ok := d.str(n, what)
	if !ok {
		return 0, false
	}
	switch s {
	case "core":
		return RoleCore, true
	case "runtime":
		return RoleRuntime, true
	case "both":
		if allowBoth {
			return RoleBoth, true
		}
	}
	if allowBoth {
		d.errs.add(d.pos(n), "%s must be core, runtime or both, found %q", what, s)
	} else {
		d.errs.add(d.pos(n), "%s must be core or runtime, found %q", what, s)
	}
	return 0, false
}

func (d *decoder) event(n *yaml.Node, index int) (*Event, eventRefs) {
	var ref eventRefs
	f := d.fields(n, "an event", "name", "doc", "message", "from", "failed_send", "dispatch", "timer", "by", "local", "policy")
	if f == nil {
		return nil, ref
	}
	if f["name"] == nil {
		d.errs.add(d.pos(n), "an event has no name")
		return nil, ref
	}
	ev := &Event{Index: index, Pos: d.pos(n)}
	var ok bool
	if ev.Name, ok = d.ident(f["name"], "event name"); !ok {
		return nil, ref
	}
	if f["doc"] == nil {
		d.errs.add(d.pos(n), "event %q has no doc", ev.Name)
	} else {
		ev.Doc, _ = d.str(f["doc"], "doc")
	}
	kinds := 0
	for _, k := range []string{"message", "timer", "local"} {
		if f[k] != nil {
			kinds++
		}
	}
	if kinds != 1 {
		d.errs.add(d.pos(n), "event %q must have exactly one of message, timer or local", ev.Name)
		return nil, ref
	}
	switch {
	case f["message"] != nil:
		ev.Kind = EventMessage
		if ev.Message, ok = d.ident(f["message"], "message type"); !ok {
			return nil, ref
		}
		if f["from"] == nil {
			d.errs.add(d.pos(n), "message event %q needs from: core or runtime", ev.Name)
			return nil, ref
		}
		if ev.From, ok = d.role(f["from"], "from", false); !ok {
			return nil, ref
		}
		if f["by"] != nil {
			d.errs.add(d.pos(f["by"]), "message event %q takes from:, not by:", ev.Name)
		}
		ref.failedSend = f["failed_send"]
		if v := f["dispatch"]; v != nil {
			ev.Dispatch, _ = d.boolean(v, "dispatch")
		}
	case f["timer"] != nil:
		ev.Kind = EventTimer
		s, ok := d.str(f["timer"], "timer duration")
		if !ok {
			return nil, ref
		}
		if parts := budgetParts(s); parts != nil {
			// The duration is the sum of the parts, known once they resolve.
			ref.budget, ref.budgetNode = parts, f["timer"]
		} else if dur, err := time.ParseDuration(s); err != nil || dur <= 0 {
			d.errs.add(d.pos(f["timer"]), "timer %q needs a positive duration such as 30s or 5m, found %q (a budget sums timers: a + b)", ev.Name, s)
			return nil, ref
		} else {
			ev.Duration = dur
		}
		if f["by"] == nil {
			d.errs.add(d.pos(n), "timer %q needs by: core, runtime or both", ev.Name)
			return nil, ref
		}
		if ev.By, ok = d.role(f["by"], "by", true); !ok {
			return nil, ref
		}
		if v := f["policy"]; v != nil {
			ev.Policy, _ = d.boolean(v, "policy")
		}
	default:
		ev.Kind = EventLocal
		if ev.By, ok = d.role(f["local"], "local", true); !ok {
			return nil, ref
		}
	}
	for _, k := range []string{"failed_send", "dispatch"} {
		if ev.Kind != EventMessage && f[k] != nil {
			d.errs.add(d.pos(f[k]), "event %q is not a message; %s: only applies to messages", ev.Name, k)
		}
	}
	if ev.Kind != EventTimer && f["policy"] != nil {
		d.errs.add(d.pos(f["policy"]), "event %q is not a timer; policy: only applies to timers", ev.Name)
	}
	if ev.Kind != EventMessage && f["from"] != nil {
		d.errs.add(d.pos(f["from"]), "event %q is not a message; from: only applies to messages", ev.Name)
	}
	if ev.Kind == EventLocal && f["by"] != nil {
		d.errs.add(d.pos(f["by"]), "local event %q names its observer in local:, not by:", ev.Name)
	}
	return ev, ref
}

// yamlErrLine finds the line a parse error refers to. The YAML reader's own
// errors (invalid UTF-8, control characters) carry no position, so for those
// the line of the first offending byte is used; never 0.
func yamlErrLine(err error, src []byte) int {
	var line int
	if _, scanErr := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); scanErr == nil && line > 0 {
		return line
	}
	line = 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if (r == utf8.RuneError && size == 1) || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
			return line
		}
		if r == '\n' {
			line++
		}
		i += size
	}
	return 1
}

func yamlErrText(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.Index(s, ": "); i >= 0 && strings.HasPrefix(s, "line ") {
		s = s[i+2:]
	}
	return strings.ReplaceAll(s, "\n", "; ")
}

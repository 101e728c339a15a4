package spec

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Names of the two spec files that are not machines.
const (
	CatalogFile      = "catalog.yaml"
	CapabilitiesFile = "capabilities.yaml"
)

// Catalog is every wire message type, declared once in spec/catalog.yaml.
type Catalog struct {
	Version    string
	Identities []*Identity
	Families   []*Family
	Messages   []*Message // in declaration order
	Pos        Pos
}

// Message looks a message type up.
func (c *Catalog) Message(typ string) (*Message, bool) {
	for _, m := range c.Messages {
		if m.Type == typ {
			return m, true
		}
	}
	return nil, false
}

// Identity is what Envelope.id carries for a message type.
type Identity struct {
	Name string
	Doc  string
	UUID bool // the id must be a canonical non-nil UUID
	Pos  Pos
}

// Family groups message types as the protocol's message-families table does.
type Family struct {
	Name string
	Doc  string
	Pos  Pos
}

// Message is one wire type.
type Message struct {
	Type   string
	From   Role // the sender
	Family *Family
	// ID is what Envelope.id carries; IDs lists every identity it may
	// carry, ID first. Only a type that serves several uses has more than
	// one (interaction_decision_ack, daemon-protocol.txt:80).
	ID      *Identity
	IDs     []*Identity
	Payload string // the Go payload type in package wire
	Doc     string
	Drives  []*Drive
	// RepliesTo and Answers (a result type only): the request type it
	// answers, and for each of its outcomes the request steps that outcome
	// may answer, in declaration order.
	RepliesTo *Message
	Answers   []Answer
	// Requires are the cross-machine conditions a frame of this type needs,
	// checked before any of its drives fires, in both directions.
	Requires []*Requirement
	Pos      Pos
}

// Requirement is one cross-machine rule a message type declares: either
// the connection's one instance of Machine must be in one of States (no
// admission before the first valid heartbeat), or (OneInFlight) no other
// unsettled instance of Machine may exist for the same envelope id (one
// active input at a time per Run); for OneInFlight, States are the
// non-terminal states that count as settled all the same (an input whose
// outcome Core already recorded unknown, still open for a late receipt).
type Requirement struct {
	Machine     *Machine
	States      []*State
	OneInFlight bool
	Pos         Pos
}

// Answer is one outcome of a result type and the request steps it may
// answer.
type Answer struct {
	Outcome string
	Steps   []string
}

// MayAnswer reports whether outcome may answer request step step.
func (m *Message) MayAnswer(outcome, step string) bool {
	for _, a := range m.Answers {
		if a.Outcome == outcome {
			for _, s := range a.Steps {
				if s == step {
					return true
				}
			}
		}
	}
	return false
}

// Drive is the machine event a message fires: always Event, or, when By is
// set, the event listed for the value the payload reports for that member.
type Drive struct {
	Machine *Machine
	Event   *Event // unkeyed
	By      string
	Keyed   []KeyedEvent // keyed, in declaration order
	// IDs are the identities whose frames this drive routes to Machine,
	// when the message has several; nil otherwise.
	IDs []*Identity
	// Instance says which instance of Machine the frame addresses, and
	// Registers which other names the frame gives that instance.
	Instance  InstanceSource
	Registers []Registration
	Pos       Pos
}

// InstanceKind is where a drive finds its instance key.
type InstanceKind uint8

const (
	InstanceByID         InstanceKind = iota // the envelope id (the default)
	InstanceByField                          // a payload member (execution_start's run_id)
	InstanceByIDAndField                     // the envelope id and a payload member (a Run's input ID)
	InstanceByAlias                          // the instance an earlier frame registered under this id
	InstanceByDelivery                       // the instance that sent the delivery ID the payload echoes
	InstanceConnection                       // the connection's one instance
)

func (k InstanceKind) String() string {
	switch k {
	case InstanceByID:
		return "id"
	case InstanceByField:
		return "field"
	case InstanceByIDAndField:
		return "id_and"
	case InstanceByAlias:
		return "alias"
	case InstanceByDelivery:
		return "delivery"
	case InstanceConnection:
		return "connection"
	}
	return "invalid"
}

// InstanceSource is where one drive's instance key comes from.
type InstanceSource struct {
	Kind  InstanceKind
	Field string // the payload member (JSON name) of field, id_and and delivery
	Alias string // the alias of alias
}

// Registration is another name a frame gives its instance once applied:
// the envelope id as an alias (preparation_status later finds the Run that
// an execution_start named), or a payload member as a delivery ID (a
// receipt later finds the instance that sent it).
type Registration struct {
	Alias string // register the envelope id under this alias
	Field string // or register this payload member's value as a delivery ID
}

// EventFor returns the keyed event of value v, or nil.
func (dr *Drive) EventFor(v string) *Event {
	for _, k := range dr.Keyed {
		if k.Value == v {
			return k.Event
		}
	}
	return nil
}

// KeyedEvent is one value of a keyed drive.
type KeyedEvent struct {
	Value string
	Event *Event
}

// Capability is one field of the capability declaration.
type Capability struct {
	Name string
	Doc  string
	Pos  Pos
}

var (
	goTypeRE   = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	versionRE  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	keyValueRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(:[a-z][a-z0-9_]*)?$`)
)

// parseDocument decodes one YAML document, reporting problems at file:line.
func parseDocument(name string, src []byte, errs *errorList) *yaml.Node {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		errs.add(Pos{File: name, Line: 1}, "empty spec file")
		return nil
	} else if err != nil {
		errs.add(Pos{File: name, Line: yamlErrLine(err, src)}, "not valid YAML: %s", yamlErrText(err))
		return nil
	}
	if len(doc.Content) != 1 {
		errs.add(Pos{File: name, Line: 1}, "empty spec file")
		return nil
	}
	return doc.Content[0]
}

func parseCapabilities(name string, src []byte, errs *errorList) []*Capability {
	d := &decoder{file: name, errs: errs}
	root := parseDocument(name, src, errs)
	if root == nil {
		return nil
	}
	f := d.fields(root, "the capability list", "fields")
	if f == nil || f["fields"] == nil {
		errs.add(d.pos(root), "the capability list has no fields key")
		return nil
	}
	var out []*Capability
	seen := map[string]Pos{}
	for _, n := range d.seq(f["fields"], "fields") {
		cname, doc, ok := d.named(n, "a capability")
		if !ok {
			continue
		}
		if prev, dup := seen[cname]; dup {
			errs.add(d.pos(n), "capability %q is already declared at %s", cname, prev)
			continue
		}
		seen[cname] = d.pos(n)
		out = append(out, &Capability{Name: cname, Doc: doc, Pos: d.pos(n)})
	}
	if len(out) == 0 {
		errs.add(d.pos(root), "the capability list declares no field")
	}
	return out
}

func parseCatalog(name string, src []byte, model *Model, failed map[string]bool, errs *errorList) *Catalog {
	d := &decoder{file: name, errs: errs, failed: failed}
	root := parseDocument(name, src, errs)
	if root == nil {
		return nil
	}
	f := d.fields(root, "the catalog", "version", "identities", "families", "messages")
	if f == nil {
		return nil
	}
	c := &Catalog{Pos: d.pos(root)}
	for _, req := range []string{"version", "identities", "families", "messages"} {
		if f[req] == nil {
			errs.add(d.pos(root), "the catalog has no %q key", req)
		}
	}
	if n := f["version"]; n != nil {
		if v, ok := d.str(n, "version"); ok {
			if !versionRE.MatchString(v) {
				errs.add(d.pos(n), "version %q must be major.minor.patch", v)
			}
			c.Version = v
		}
	}
	ids := map[string]*Identity{}
	if n := f["identities"]; n != nil {
		for _, in := range d.seq(n, "identities") {
			fs := d.fields(in, "an identity", "name", "doc", "uuid")
			if fs == nil || fs["name"] == nil || fs["doc"] == nil {
				errs.add(d.pos(in), "an identity needs a name and a doc")
				continue
			}
			id := &Identity{Pos: d.pos(in)}
			var ok bool
			if id.Name, ok = d.ident(fs["name"], "identity name"); !ok {
				continue
			}
			id.Doc, _ = d.str(fs["doc"], "doc")
			if u := fs["uuid"]; u != nil {
				id.UUID, _ = d.boolean(u, "uuid")
			}
			if _, dup := ids[id.Name]; dup {
				errs.add(id.Pos, "identity %q is declared twice", id.Name)
				continue
			}
			ids[id.Name] = id
			c.Identities = append(c.Identities, id)
		}
	}
	fams := map[string]*Family{}
	if n := f["families"]; n != nil {
		for _, fn := range d.seq(n, "families") {
			fname, doc, ok := d.named(fn, "a family")
			if !ok {
				continue
			}
			if _, dup := fams[fname]; dup {
				errs.add(d.pos(fn), "family %q is declared twice", fname)
				continue
			}
			fams[fname] = &Family{Name: fname, Doc: doc, Pos: d.pos(fn)}
			c.Families = append(c.Families, fams[fname])
		}
	}
	types := map[string]*Message{}
	payloads := map[string]*Message{}
	var replies []replyRef
	if n := f["messages"]; n != nil {
		for _, mn := range d.seq(n, "messages") {
			msg, reply := d.message(mn, ids, fams, model)
			if msg == nil {
				continue
			}
			if reply.node != nil {
				reply.msg = msg
				replies = append(replies, reply)
			}
			if prev, dup := types[msg.Type]; dup {
				errs.add(msg.Pos, "message type %q is already declared at %s", msg.Type, prev.Pos)
				continue
			}
			if prev, dup := payloads[msg.Payload]; dup {
				errs.add(msg.Pos, "payload type %s already belongs to %q at %s: each payload type travels under one message type", msg.Payload, prev.Type, prev.Pos)
				continue
			}
			types[msg.Type], payloads[msg.Payload] = msg, msg
			c.Messages = append(c.Messages, msg)
		}
	}
	d.resolveReplies(replies, types)
	checkCatalogAgainstMachines(c, model, errs)
	checkWireObligations(c, model, errs)
	checkAnswers(c, errs)
	return c
}

func (d *decoder) message(n *yaml.Node, ids map[string]*Identity, fams map[string]*Family, model *Model) (*Message, replyRef) {
	var reply replyRef
	f := d.fields(n, "a message", "type", "from", "family", "id", "payload", "doc", "replies_to", "answers", "drives", "requires")
	if f == nil {
		return nil, reply
	}
	for _, req := range []string{"type", "from", "family", "id", "payload", "doc"} {
		if f[req] == nil {
			d.errs.add(d.pos(n), "a message needs %q", req)
			return nil, reply
		}
	}
	msg := &Message{Pos: d.pos(n)}
	var ok bool
	if msg.Type, ok = d.ident(f["type"], "message type"); !ok {
		return nil, reply
	}
	if msg.From, ok = d.role(f["from"], "from", false); !ok {
		return nil, reply
	}
	fam, _ := d.str(f["family"], "family")
	if msg.Family = fams[fam]; msg.Family == nil {
		d.errs.add(d.pos(f["family"]), "message %q names unknown family %q", msg.Type, fam)
		return nil, reply
	}
	if msg.IDs = d.identities(f["id"], msg.Type, ids); msg.IDs == nil {
		return nil, reply
	}
	msg.ID = msg.IDs[0]
	if msg.Payload, ok = d.str(f["payload"], "payload"); !ok || !goTypeRE.MatchString(msg.Payload) {
		d.errs.add(d.pos(f["payload"]), "message %q: payload must be an exported Go type name such as ExecutionPrepare", msg.Type)
		return nil, reply
	}
	msg.Doc, _ = d.str(f["doc"], "doc")
	if f["replies_to"] != nil || f["answers"] != nil {
		reply = d.answers(n, f["replies_to"], f["answers"], msg)
	}
	if f["requires"] != nil {
		msg.Requires = d.requirements(f["requires"], msg, model)
	}
	if f["drives"] == nil {
		return msg, reply
	}
	nodes := d.seq(f["drives"], "drives")
	for _, dn := range nodes {
		if dr := d.drive(dn, msg, model); dr != nil {
			msg.Drives = append(msg.Drives, dr)
		}
	}
	if len(msg.Drives) < len(nodes) {
		return msg, reply // a drive was skipped or is in error; its identities are unknown
	}
	routed := map[*Identity]bool{}
	for _, dr := range msg.Drives {
		for _, id := range dr.IDs {
			routed[id] = true
		}
	}
	if len(msg.IDs) > 1 && len(msg.Drives) > 0 {
		for _, id := range msg.IDs {
			if !routed[id] {
				d.errs.add(d.pos(f["id"]), "message %q may carry identity %q, but no drive routes it to a machine", msg.Type, id.Name)
			}
		}
	}
	return msg, reply
}

// identities reads a message's id: one identity, or a list when the type
// serves several uses. Listed identities must share their form (a UUID or
// not), so the envelope check is the same whichever one a frame carries.
func (d *decoder) identities(n *yaml.Node, typ string, ids map[string]*Identity) []*Identity {
	var out []*Identity
	seen := map[string]bool{}
	for _, in := range d.names(n, "id") {
		id := ids[in.Value]
		switch {
		case id == nil:
			d.errs.add(d.pos(in), "message %q names unknown identity %q", typ, in.Value)
			return nil
		case seen[id.Name]:
			d.errs.add(d.pos(in), "message %q lists identity %q twice", typ, id.Name)
			return nil
		case len(out) > 0 && id.UUID != out[0].UUID:
			d.errs.add(d.pos(in), "message %q lists identities %q and %q, which differ in form (uuid); a frame's id is checked the same way whichever it carries", typ, out[0].Name, id.Name)
			return nil
		}
		seen[id.Name] = true
		out = append(out, id)
	}
	return out
}

func (d *decoder) drive(n *yaml.Node, msg *Message, model *Model) *Drive {
	f := d.fields(n, "a drive", "machine", "id", "event", "by", "events", "instance", "registers")
	if f == nil || f["machine"] == nil {
		d.errs.add(d.pos(n), "a drive needs a machine")
		return nil
	}
	dr := &Drive{Pos: d.pos(n)}
	switch {
	case f["id"] != nil && len(msg.IDs) < 2:
		d.errs.add(d.pos(f["id"]), "message %q carries one identity, so its drives name none", msg.Type)
		return nil
	case f["id"] == nil && len(msg.IDs) > 1:
		d.errs.add(d.pos(n), "message %q carries several identities, so each drive names the ones it routes (id:)", msg.Type)
		return nil
	case f["id"] != nil:
		for _, in := range d.names(f["id"], "id") {
			var found *Identity
			for _, id := range msg.IDs {
				if id.Name == in.Value {
					found = id
				}
			}
			if found == nil {
				d.errs.add(d.pos(in), "drive of %q routes identity %q, which the message does not carry", msg.Type, in.Value)
				return nil
			}
			dr.IDs = append(dr.IDs, found)
		}
	}
	mname, _ := d.str(f["machine"], "machine")
	m, ok := model.Machine(mname)
	if !ok && d.failed[mname] {
		return nil // that machine's file reports its own errors
	}
	if !ok {
		d.errs.add(d.pos(f["machine"]), "message %q drives unknown machine %q", msg.Type, mname)
		return nil
	}
	dr.Machine = m
	event := func(en *yaml.Node) *Event {
		name, _ := d.str(en, "event")
		for _, e := range m.Events {
			if e.Name != name {
				continue
			}
			switch {
			case e.Kind != EventMessage:
				d.errs.add(d.pos(en), "message %q drives %s event %q, which is a %s event", msg.Type, m.Name, name, e.Kind)
			case e.Message != msg.Type:
				d.errs.add(d.pos(en), "message %q drives %s event %q, which the machine declares for %q", msg.Type, m.Name, name, e.Message)
			case e.From != msg.From:
				d.errs.add(d.pos(en), "message %q is sent by %s, but %s event %q says %s sends it", msg.Type, msg.From, m.Name, name, e.From)
			default:
				return e
			}
			return nil
		}
		d.errs.add(d.pos(en), "message %q drives unknown %s event %q%s", msg.Type, m.Name, name, suggest(name, eventNames(m)))
		return nil
	}
	switch {
	case f["event"] != nil && f["by"] == nil && f["events"] == nil:
		if dr.Event = event(f["event"]); dr.Event == nil {
			return nil
		}
	case f["event"] == nil && f["by"] != nil && f["events"] != nil:
		dr.By, _ = d.ident(f["by"], "by")
		evs := f["events"]
		if evs.Kind != yaml.MappingNode || len(evs.Content) == 0 {
			d.errs.add(d.pos(evs), "events must map each %s value to an event", dr.By)
			return nil
		}
		for i := 0; i+1 < len(evs.Content); i += 2 {
			k, v := evs.Content[i], evs.Content[i+1]
			if !keyValueRE.MatchString(k.Value) {
				d.errs.add(d.pos(k), "key value %q must be lower_snake_case, optionally qualified as value:detail", k.Value)
				continue
			}
			if e := event(v); e != nil {
				dr.Keyed = append(dr.Keyed, KeyedEvent{Value: k.Value, Event: e})
			}
		}
		if len(dr.Keyed) == 0 {
			return nil
		}
	default:
		d.errs.add(d.pos(n), "a drive has either event, or by and events")
		return nil
	}
	if !d.instanceSource(f["instance"], dr) || !d.registrations(f["registers"], dr) {
		return nil
	}
	return dr
}

// instanceSource reads a drive's instance: (absent for the envelope id).
func (d *decoder) instanceSource(n *yaml.Node, dr *Drive) bool {
	if n == nil {
		return true
	}
	if n.Kind == yaml.ScalarNode {
		switch n.Value {
		case "id":
			dr.Instance.Kind = InstanceByID
		case "connection":
			dr.Instance.Kind = InstanceConnection
		default:
			d.errs.add(d.pos(n), "instance must be id, connection, or one of {field: …}, {id_and: …}, {alias: …}, {delivery: …}; found %q", n.Value)
			return false
		}
		return true
	}
	f := d.fields(n, "an instance source", "field", "id_and", "alias", "delivery")
	if f == nil || len(f) != 1 {
		d.errs.add(d.pos(n), "an instance source has exactly one of field, id_and, alias or delivery")
		return false
	}
	for key, kind := range map[string]InstanceKind{"field": InstanceByField, "id_and": InstanceByIDAndField, "alias": InstanceByAlias, "delivery": InstanceByDelivery} {
		v := f[key]
		if v == nil {
			continue
		}
		name, ok := d.ident(v, key)
		if !ok {
			return false
		}
		dr.Instance.Kind = kind
		if kind == InstanceByAlias {
			dr.Instance.Alias = name
		} else {
			dr.Instance.Field = name
		}
	}
	return true
}

// registrations reads a drive's registers: list.
func (d *decoder) registrations(n *yaml.Node, dr *Drive) bool {
	if n == nil {
		return true
	}
	for _, item := range d.seq(n, "registers") {
		f := d.fields(item, "a registration", "alias", "delivery")
		if f == nil || len(f) != 1 {
			d.errs.add(d.pos(item), "a registration has exactly one of alias or delivery")
			return false
		}
		var r Registration
		var ok bool
		if v := f["alias"]; v != nil {
			r.Alias, ok = d.ident(v, "alias")
		} else {
			r.Field, ok = d.ident(f["delivery"], "delivery")
		}
		if !ok {
			return false
		}
		dr.Registers = append(dr.Registers, r)
	}
	return true
}

func eventNames(m *Machine) []string {
	out := make([]string, 0, len(m.Events))
	for _, e := range m.Events {
		out = append(out, e.Name)
	}
	sort.Strings(out)
	return out
}

// checkCatalogAgainstMachines makes the catalog and the machines agree: each
// machine message event is driven by its message, and each wire type a
// machine names (as an event or a send effect) exists, sent by the right peer.
func checkCatalogAgainstMachines(c *Catalog, model *Model, errs *errorList) {
	checkInstances(c, model, errs)
	driven := map[*Event]bool{}
	for _, msg := range c.Messages {
		for _, dr := range msg.Drives {
			if dr.Event != nil {
				driven[dr.Event] = true
			}
			for _, k := range dr.Keyed {
				driven[k.Event] = true
			}
		}
	}
	for _, m := range model.Machines {
		for _, e := range m.Events {
			if e.Kind != EventMessage {
				continue
			}
			msg, ok := c.Message(e.Message)
			switch {
			case !ok:
				errs.add(e.Pos, "event %q names wire type %q, which %s does not declare", e.Name, e.Message, c.Pos.File)
			case !driven[e]:
				errs.add(e.Pos, "event %q is never fired: no drive of %q in %s names it", e.Name, msg.Type, c.Pos.File)
			}
		}
		for _, r := range m.Rules {
			for _, ef := range r.Effects {
				if ef.Kind != EffectSend {
					continue
				}
				msg, ok := c.Message(ef.Message)
				switch {
				case !ok:
					errs.add(r.Pos, "effect %q sends wire type %q, which %s does not declare", ef.String(), ef.Message, c.Pos.File)
				case ef.Role != RoleBoth && ef.Role != msg.From:
					errs.add(r.Pos, "effect %q: %s is sent by %s, not %s", ef.String(), msg.Type, msg.From, ef.Role)
				}
			}
		}
	}
}

// requirements reads a message's requires: list.
func (d *decoder) requirements(n *yaml.Node, msg *Message, model *Model) []*Requirement {
	var out []*Requirement
	for _, item := range d.seq(n, "requires") {
		f := d.fields(item, "a requirement", "machine", "states", "one_in_flight", "settled")
		if f == nil {
			continue
		}
		r := &Requirement{Pos: d.pos(item)}
		name := ""
		switch {
		case f["machine"] != nil && f["states"] != nil && f["one_in_flight"] == nil && f["settled"] == nil:
			name, _ = d.ident(f["machine"], "machine")
		case f["one_in_flight"] != nil && f["machine"] == nil && f["states"] == nil:
			name, _ = d.ident(f["one_in_flight"], "one_in_flight")
			r.OneInFlight = true
		default:
			d.errs.add(d.pos(item), "a requirement is either {machine: …, states: […]} or {one_in_flight: …[, settled: […]]}")
			continue
		}
		m, ok := model.Machine(name)
		if !ok {
			if !d.failed[name] {
				d.errs.add(d.pos(item), "message %q requires unknown machine %q", msg.Type, name)
			}
			continue
		}
		r.Machine = m
		if !r.OneInFlight {
			if m.Instance != "connection" {
				d.errs.add(d.pos(item), "message %q requires a state of %s, but only the connection's one instance can be required (%s instances are keyed by %s)", msg.Type, m.Name, m.Name, m.Instance)
				continue
			}
			for _, sn := range d.names(f["states"], "states") {
				found := false
				for _, st := range m.States {
					if st.Name == sn.Value {
						r.States, found = append(r.States, st), true
					}
				}
				if !found {
					d.errs.add(d.pos(sn), "message %q requires unknown %s state %q", msg.Type, m.Name, sn.Value)
				}
			}
		} else if f["settled"] != nil {
			for _, sn := range d.names(f["settled"], "settled") {
				found := false
				for _, st := range m.States {
					if st.Name == sn.Value {
						found = true
						if st.Terminal() {
							d.errs.add(d.pos(sn), "message %q: %s state %q is terminal, so it is settled already", msg.Type, m.Name, sn.Value)
							continue
						}
						r.States = append(r.States, st)
					}
				}
				if !found {
					d.errs.add(d.pos(sn), "message %q: settled names unknown %s state %q", msg.Type, m.Name, sn.Value)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

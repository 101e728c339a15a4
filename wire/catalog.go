package wire

import "slices"

// Entry is one message type of the catalog (spec/catalog.yaml).
type Entry struct {
	Type      string
	Direction Direction // the way frames of this type travel
	Family    string
	Identity  Identity // what Envelope.id carries
	// Identities lists every identity Envelope.id may carry when the type
	// serves several uses (Identity first); nil when Identity is the only
	// one. They share one form, so CheckID checks Identity alone.
	Identities []Identity
	Payload    string // the Go payload type's name
	Doc        string
	// Drives lists the machine events a frame fires, one per machine; a
	// frame that drives several machines is routed by its id to one.
	Drives []Drive
	// Answers maps each outcome of a result type to the request steps it
	// may answer (spec/catalog.yaml answers:); nil for other types.
	Answers map[string][]string
	// Requires are the cross-machine conditions a frame of this type needs
	// (spec/catalog.yaml requires:), checked by the peer driver before any
	// drive fires.
	Requires []Requirement
	decode   func(raw []byte) (Payload, error)
}

// Requirement is one cross-machine condition: the connection's instance of
// Machine in one of States, or (OneInFlight) no other unsettled instance of
// Machine for the same envelope id, where an instance in one of States
// counts as settled although it is not terminal.
type Requirement struct {
	Machine     string
	States      []string
	OneInFlight bool
}

// MayAnswer reports whether a result of this type with the given outcome
// may answer the request step step, as the catalog declares it.
func (e *Entry) MayAnswer(outcome, step string) bool {
	return e != nil && slices.Contains(e.Answers[outcome], step)
}

// Drive is the machine event a message type fires: Event, or, when By is
// set, the event paired with the payload's DriveKey in Events.
type Drive struct {
	Machine string
	Event   string
	By      string
	Events  [][2]string // {value of the By member, event}
	// Identities are the identities whose frames reach Machine, when the
	// type carries several (Entry.Identities); nil otherwise.
	Identities []Identity
	// Instance says which instance of Machine a frame addresses; Registers
	// the other names the frame gives that instance once it is applied.
	Instance  InstanceSource
	Registers []Registration
}

// InstanceKind is where a drive finds its instance key.
type InstanceKind uint8

const (
	InstanceByID         InstanceKind = iota // the envelope id
	InstanceByField                          // a payload member
	InstanceByIDAndField                     // the envelope id and a payload member
	InstanceByAlias                          // the instance registered under this alias of the envelope id
	InstanceByDelivery                       // the instance that registered the payload's delivery ID
	InstanceConnection                       // the connection's one instance
)

// InstanceSource is where a drive's instance key comes from. Field reads
// the payload member (generated from the catalog, so no member is looked up
// by name at run time).
type InstanceSource struct {
	Kind  InstanceKind
	Name  string // the member (JSON name) or the alias, for messages and docs
	Field func(Payload) string
}

// Registration is another name a frame gives its instance: the envelope id
// under Alias, or the payload member Field as a delivery ID.
type Registration struct {
	Alias string
	Name  string // the member's JSON name, for a delivery ID
	Field func(Payload) string
}

// EventFor returns the event this drive fires for payload p, or "" when
// the payload's key has no event on this machine.
func (d Drive) EventFor(p Payload) string {
	if d.By == "" {
		return d.Event
	}
	k, ok := p.(driveKeyer)
	if !ok {
		return ""
	}
	key := k.DriveKey()
	for _, kv := range d.Events {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

// driveKeyer is implemented by payloads whose event depends on a member
// (a status's state, a result's outcome).
type driveKeyer interface{ DriveKey() string }

// driveKeyIn is the DriveKey of a payload whose event a member names: the
// member's value v when it is one of keys, and "" (no event) otherwise.
func driveKeyIn(v string, keys []string) string {
	if slices.Contains(keys, v) {
		return v
	}
	return ""
}

// driveKeyOf is the DriveKey of a receipt whose event a required boolean
// names: yes or no, and "" (no event) while the boolean is missing.
func driveKeyOf(b *bool, yes, no string) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return yes
	}
	return no
}

// Lookup finds the catalog entry of a message type.
func Lookup(typ string) (*Entry, bool) {
	e, ok := byType[typ]
	return e, ok
}

// Entries returns every catalog entry in declaration order.
func Entries() []*Entry {
	out := make([]*Entry, len(catalog))
	for i := range catalog {
		out[i] = &catalog[i]
	}
	return out
}

var byType = func() map[string]*Entry {
	m := make(map[string]*Entry, len(catalog))
	for i := range catalog {
		m[catalog[i].Type] = &catalog[i]
	}
	return m
}()

// decodeAny adapts decodePayload to the catalog's untyped table.
func decodeAny[T interface {
	validator
	Payload
}](raw []byte) (Payload, error) {
	var zero T
	p, err := decodePayload[T](zero.MessageType(), raw)
	if err != nil {
		return nil, err
	}
	return p, nil
}

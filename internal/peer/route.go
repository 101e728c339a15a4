package peer

import (
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/wire"
)

// Target is one instance event a frame fires.
type Target struct {
	Key   Key
	Event fsm.EventID
	// Registers are the names the frame gives the instance once the event
	// is applied (an alias of the envelope id, a delivery ID).
	Registers []wire.Registration
}

// Router maps a decoded frame to the instance events it fires, in the order
// they must fire: a machine that refuses its event stops the ones after it
// (a refused execution_start never reaches the Run). The same routes serve
// received frames and this peer's own sends, since both peers fire the same
// wire events. A route may consult the driver's instances (Index) to settle
// an identity the frame alone leaves ambiguous.
//
// Route appends the targets to buf (which may be nil) and returns it, so a
// driver can reuse one buffer and routing allocates nothing.
type Router interface {
	Route(msg *wire.Message, idx Index, buf []Target) ([]Target, error)
}

// Index is the read-only view of the driver's instances a Router gets.
type Index interface {
	Lookup(k Key) (*Instance, bool)
	// Alias finds the instance of machine registered under (name, value).
	Alias(machine, name, value string) (string, bool)
}

// RouterFunc adapts a function to Router.
type RouterFunc func(msg *wire.Message, idx Index, buf []Target) ([]Target, error)

// Route calls f.
func (f RouterFunc) Route(msg *wire.Message, idx Index, buf []Target) ([]Target, error) {
	return f(msg, idx, buf)
}

// aliasKey is one registered name of an instance.
type aliasKey struct{ machine, name, value string }

// SetAlias records that (name, value) also names instance k of its
// machine: the envelope id of the execution_start that named a Run, the
// delivery ID a decision or cancellation carried. Aliases go with their
// instance (and their connection).
func (d *Driver) SetAlias(k Key, name, value string) {
	if d.aliases == nil {
		d.aliases = map[aliasKey]string{}
	}
	a := aliasKey{k.Machine, name, value}
	if id, ok := d.aliases[a]; !ok || id != k.ID {
		d.noteAlias(k, a)
	}
	d.aliases[a] = k.ID
}

// Alias resolves a name registered with SetAlias.
func (d *Driver) Alias(machine, name, value string) (string, bool) {
	id, ok := d.aliases[aliasKey{machine, name, value}]
	return id, ok
}

// register applies a target's registrations for msg.
func (d *Driver) register(k Key, regs []wire.Registration, msg *wire.Message) {
	for i := range regs {
		r := &regs[i]
		if r.Alias != "" {
			d.SetAlias(k, r.Alias, msg.ID)
		} else if v := r.Field(msg.Payload); v != "" {
			d.SetAlias(k, deliveryAlias, v)
		}
	}
}

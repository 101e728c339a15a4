package peer

import (
	"github.com/agentwire/agentwire/fsm"
	wire "github.com/agentwire/agentwire/spec/wire"
)

// Target is one instance event a frame fires.
type Target struct {
	Key   Key
	Event fsm.EventID
	// Alias, when set, is recorded as another name of the instance once
	// the event is applied (see Driver.SetAlias).
	Alias string
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
	Alias(machine, alias string) (string, bool)
}

// RouterFunc adapts a function to Router.
type RouterFunc func(msg *wire.Message, idx Index, buf []Target) ([]Target, error)

// Route calls f.
func (f RouterFunc) Route(msg *wire.Message, idx Index, buf []Target) ([]Target, error) {
	return f(msg, idx, buf)
}

// Alias records that alias also names the instance k of its machine, for
// routes whose frames carry another identity (a preparation_status names
// the preparation request, not the Run it started). Aliases go with the
// instance's connection.
func (d *Driver) SetAlias(k Key, alias string) {
	if d.aliases == nil {
		d.aliases = map[Key]string{}
	}
	d.aliases[Key{Machine: k.Machine, ID: alias}] = k.ID
}

// Alias resolves an alias set with SetAlias.
func (d *Driver) Alias(machine, alias string) (string, bool) {
	id, ok := d.aliases[Key{Machine: machine, ID: alias}]
	return id, ok
}

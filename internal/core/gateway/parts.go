package gateway

import (
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/connection"
	"github.com/agentwire/agentwire/fsm/machines"
	"github.com/agentwire/agentwire/fsm/preparation"
	"github.com/agentwire/agentwire/fsm/suspension"
	transferfsm "github.com/agentwire/agentwire/fsm/transfer"
	"github.com/agentwire/agentwire/fsm/workspace_export"
	"github.com/agentwire/agentwire/fsm/workspace_write"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/export"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/input"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/interaction"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/link"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/read"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/suspend"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/transfer"
	"github.com/agentwire/agentwire/internal/core/gateway/internal/write"
	"github.com/agentwire/agentwire/internal/peer"
)

// parts are the lifecycle modules of one connection. Each keeps its own
// records and its machine's hooks (the workspace and environment
// lifecycles in internal/, the Turn's execution in this package); this
// file is the one place that composes them: what the connection's
// driver binds (through the generated fsm/machines), what it tells them
// after each step, and what it tells them when the connection ends.
type parts struct {
	execBook                    // preparations and Runs (execution.go)
	questions *interaction.Book // the questions Runs ask
	inputs    *input.Book       // the active inputs Runs are sent
	reads     read.Book         // workspace reads in flight
	xfers     transfer.Book     // transfers and initializations
	exports   export.Book       // workspace exports in flight
	susp      *suspend.Book     // the suspension attempts the connection carries
	writes    *write.Book       // workspace writes in flight
}

// initParts sets up c's modules; c.log and c.g are set.
func (c *conn) initParts() {
	g := c.g
	c.execBook = newExecBook()
	// Their hooks' writes fail the Turn and abort the connection when the
	// store fails them (persistence.go).
	c.questions = interaction.New(interHost{c}, hookStore{g.cfg.Store, c})
	c.inputs = input.New(inputHost{c}, hookStore{g.cfg.Store, c})
	base := link.Conn{Clock: g.cfg.Clock, Log: c.log, StoreCtx: c.storeCtx, Released: g.kick}
	c.susp = suspend.NewBook(suspend.Deps{Conn: base, Store: g.cfg.Store, Durations: g.cfg.Durations,
		Epoch: func() uint64 { return c.epoch }})
	c.writes = write.NewBook(write.Deps{Conn: base, Store: g.cfg.Store})
}

// Binding implements peer.App.
func (c *conn) Binding(machine string) fsm.Binding[*peer.Event] {
	return machines.CoreHooks[*peer.Event]{
		Connection:      c,
		Preparation:     execHooks{c},
		Run:             execHooks{c},
		Input:           c.inputs.Hooks(),
		Interaction:     c.questions.Hooks(),
		WorkspaceRead:   c.reads.Hooks(),
		Transfer:        c.xfers.Hooks(c.log),
		Suspension:      c.susp.Hooks(),
		WorkspaceWrite:  c.writes.Hooks(),
		WorkspaceExport: c.exports.Hooks(),
	}.Binding(machine)
}

// moved is the driver's Saver: each module learns where its instances
// moved.
func (c *conn) moved(list []*peer.Instance) {
	for _, i := range list {
		switch i.Key.Machine {
		case preparation.Name:
			c.prepMoved(i)
		case transferfsm.Name:
			c.xfers.Moved(i)
		case suspension.Name:
			c.susp.Moved(i)
		case connection.Name:
			c.connMoved(i) // suspension.go: a live connection adopts its device's open attempts
		case workspace_write.Name:
			c.writes.Moved(i)
		case workspace_export.Name:
			c.exports.Moved(i)
		}
	}
}

// abandonAll runs once the connection's loop ended: the modules whose
// callers wait on it let them go.
func (c *conn) abandonAll() {
	c.abandonExec()
}

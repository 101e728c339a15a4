// Package peer drives the generated protocol machines for one physical
// connection, for either role. Both the Runtime daemon and Core stand on
// it, so neither writes routing, timer or effect plumbing of its own.
//
// The package has two layers, split the way etcd's raft splits its state
// machine from its node:
//
//   - Driver is pure: it owns the connection's machine instances (one per
//     Run, admission handle, interaction, transfer, …), routes decoded frames
//     to them, steps them through the engine in fsm, keeps their timers as
//     absolute deadlines with generations, and performs the effects the
//     steps ask for through the peer's bindings. It does no I/O and reads
//     the clock only through Clock; its own sends come out as Writes that
//     the caller performs and reports back with Written, and only then are
//     the send events fired (a failed write fires the failed-send event).
//     The model checker composes two Drivers over a simulated channel.
//
//   - Conn runs one Driver on one goroutine over a Transport (a coder/websocket
//     connection or an in-memory pipe): a reader goroutine feeds frames in,
//     the loop delivers them, flushes writes with a deadline on every write,
//     fires expired timers, and turns a transport failure into
//     connection_lost on every instance.
//
// Guards and actions are the embedding peer's: it implements the generated
// CoreHooks or RuntimeHooks of each machine and hands the bindings to the
// driver (App.Binding). Hooks run on the connection's goroutine, must not
// block, and start native work on goroutines of their own, reporting back
// with Conn.Local.
package peer

// Package harness is the contract between the Runtime daemon and a
// Harness: the code that runs one agent kind natively (a CLI, a model
// client, a script).
//
// # Writing a Harness
//
// An Adapter declares the kind and prepares Executors:
//
//   - Declaration returns the kind, whether it can run now (Available),
//     its version and its capabilities. Every capability field must be
//     decided; Supports (or MustSupport) builds a declaration from the
//     names of the supported ones and marks every other one unsupported,
//     including any capability the protocol adds later. EveryTurn lists
//     what Core requires for any Turn; a Session adds what its
//     Environment and Agent need (environment_none for a Session without
//     an Environment, subagent_control for an Agent without multi-agent).
//   - NewExecutor prepares one Executor for a Session's immutable
//     configuration. It may be slow; it runs outside the receive loop.
//
// An Executor runs that Session's Turns one at a time: Run streams events
// through Emit (deltas, tool calls, questions…) and returns the final
// wire.Done; Close releases the native resource. The optional operations
// (optional.go) are interfaces the Executor also implements: Steerer for
// active input, which every Turn requires, and Decider for answers to the
// questions a Turn asks. Inbox is a Steerer to embed for a Turn that takes
// steered input as more input when it is ready for it. The daemon checks a request against the Turn's
// declaration snapshot before it calls any of them, and the gate
// functions (CheckConfiguration, CheckSteer, CheckAnswer) let an adapter
// run the same check on its side.
//
// # Registering
//
// A Registry maps kinds to Adapters. Register validates the declaration
// whole (daemon-protocol.txt:23): there is no implicit default, so a
// declaration with one undecided field never reaches the registry. Each
// admitted Executor and Turn keeps the declaration it was admitted with;
// a later registration cannot add operations to an existing owner
// (daemon-protocol.txt:27). The daemon package runs a Registry.
//
// runtime/harnesstest is the conformance kit that checks a Harness keeps
// what it declares.
package harness

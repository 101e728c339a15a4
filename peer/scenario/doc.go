// Package scenario is the contract kit: it runs the protocol's transcripts
// (spec/scenarios, cockroachdb/datadriven files listing the frames each
// peer sends, in order) against a real peer over a real WebSocket, so an
// implementation of either side is checked against the same text.
//
//   - RunWireRuntime and RunWireCore run the shared transcripts of
//     spec/scenarios/wire on one side each: the real Runtime against a
//     scripted Core that plays the "core: …" lines and asserts the
//     "runtime: …" ones, or the real Core against a scripted Runtime.
//   - RunScripted runs spec/scenarios/runtime against a real Runtime, and
//     RunScriptedRuntime runs spec/scenarios/core against a real Core,
//     whose state beyond the wire (Turn status, journal, API answers) a
//     CoreSide reports through directives the runner passes on.
//
// Values a peer generates (Run IDs, handles) are written as "$name"
// placeholders: the first frame that carries one binds it, and later lines
// must repeat it. `go test -rewrite` records the expected output of a new
// directive. The driver-level transcripts (spec/scenarios/driver), which
// run agentwire's own drivers on both sides, are this module's concern and
// live in internal/peer/transcript.
package scenario

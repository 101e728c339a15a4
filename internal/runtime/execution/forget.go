package execution

import (
	"github.com/agentwire/agentwire/fsm/interaction"
	"github.com/agentwire/agentwire/fsm/preparation"
	"github.com/agentwire/agentwire/fsm/run"
	"github.com/agentwire/agentwire/fsm/workspace_read"
	"github.com/agentwire/agentwire/internal/peer"
)

var _ peer.Forgetter = (*Session)(nil)

// Forgot implements peer.Forgetter: the driver forgot a settled instance
// (evicted at its machine's bound, 1024 Runs and 64 preparations per
// connection, or past its retention), so the Session drops its record of
// it too. A long-lived connection then keeps per Turn what the driver
// keeps, instead of every Turn it ever ran with its whole final output.
//
// A record that native work or cleanup still holds stays until that work
// settles: a Run's record is what Shutdown cancels and Active counts, so
// it goes only once the Run settled and published done.
//
// decision: an identity the driver forgot is new again here, as it is to
// the driver: a later execution_start naming a forgotten Run ID is no
// run_conflict, and a forgotten handle starts nothing (its admission is
// gone). daemon-protocol.txt:116 keeps these records connection-local and
// bounded, and :165 makes request IDs no durable idempotency keys.
func (s *Session) Forgot(i *peer.Instance) {
	id := i.Key.ID
	switch i.Key.Machine {
	case preparation.Table.Name:
		// Every terminal preparation state ran settle_cleanup (or handed
		// the Executor to a Run); the close holds the record itself.
		if a := record(i); a != nil && s.admissions[id] == a && (a.settling || a.transferred) {
			delete(s.admissions, id)
			s.reads.Unfence("handle:" + a.handle)
		}
	case run.Table.Name:
		if r := s.runs[id]; r != nil {
			r.forgotten = true
			s.dropRun(r)
		}
	case workspace_read.Table.Name:
		s.reads.Forgot(id)
	case interaction.Table.Name:
		s.asks.Forget(id)
	}
}

// dropRun forgets a Run the driver forgot once its native work settled
// and its done went out (publishDone calls it again then).
func (s *Session) dropRun(r *runState) {
	if !r.forgotten || !r.settled || r.holding || s.runs[r.id] != r {
		return
	}
	delete(s.runs, r.id)
	s.reads.Unfence("run:" + r.id)
	s.asks.ForgetRun(r.id)
	s.inputs.Forget(r.id)
}

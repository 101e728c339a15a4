package execution

import (
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/write"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
)

// writeHost is what the write lifecycle (internal/write) sees of its
// Session.
type writeHost struct{ loop }

var _ write.Host = writeHost{}

func (h writeHost) Workspace(env string) (*workspace.Workspace, bool) {
	return h.s.cfg.Environments.Lookup(env)
}

// HeldElsewhere: a runtime_prepare transfer into the same Environment,
// its quiesce and a shutdown refuse a write as they refuse execution
// (wire-reference §2.10, daemon-protocol.txt:96), and so do execution and
// an export there.
func (h writeHost) HeldElsewhere(env string) bool {
	s := h.s
	return s.exp.Holds(env) || s.xfer.Holds(env) ||
		s.fence.Held(env) || s.shutting || s.executionHolds(env)
}

func (h writeHost) Post(fn func(d *peer.Driver)) bool { return h.s.post(fn) }
func (h writeHost) Released(d *peer.Driver)           { h.s.susp.CheckDrain(d) }

// executionHolds reports whether execution holds env's workspace: a Run of
// env that has not settled, an execution preparation of env (not the
// read-only profile) that has not been released or handed to a Run, or
// whose Executor is still owned, or an Executor of env whose close failed
// (the Pool holds it).
//
// decision: an idle Executor, or one being closed after its Turn settled
// (or after its admission was released, before any Turn), no longer
// executes, so it does not hold the workspace; one whose close failed may
// still be running and holds it, as it keeps its capacity
// (daemon-protocol.txt:116, :185).
func (s *Session) executionHolds(env string) bool {
	if s.cfg.Pool.HeldIn(env) > 0 {
		return true
	}
	for _, r := range s.runs {
		if !r.settled && r.envID == env {
			return true
		}
	}
	for _, a := range s.admissions {
		if !a.readOnly && a.env == env && (a.exe != nil || (!a.releasing && !a.transferred)) {
			return true
		}
	}
	return false
}

// workspaceHeld reports whether a write or an export holds env's
// workspace, which refuses execution there (daemon-protocol.txt:185).
// Environment none ("") has no workspace to hold.
func (s *Session) workspaceHeld(env string) bool {
	if env == "" {
		return false
	}
	return s.wr.Holds(env) || s.exp.Holds(env)
}

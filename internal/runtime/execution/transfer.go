package execution

import (
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/transfer"
	rtransfer "github.com/agentwire/agentwire/internal/runtime/transfer"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
)

// xferHost is what the transfer lifecycle (internal/transfer) sees of its
// Session.
type xferHost struct{ loop }

var _ transfer.Host = xferHost{}

func (h xferHost) Workspace(env string) (*workspace.Workspace, bool) {
	return h.s.cfg.Environments.Lookup(env)
}

func (h xferHost) Area() *rtransfer.Area             { return h.s.cfg.Area }
func (h xferHost) Fenced(env string) bool            { return h.s.fence.Held(env) }
func (h xferHost) Busy(env string) bool              { return h.s.busyExecuting(env) }
func (h xferHost) Post(fn func(d *peer.Driver)) bool { return h.s.post(fn) }

// busyExecuting reports whether an admission, a Run, a workspace read,
// write or export of the Environment env is active on this connection.
func (s *Session) busyExecuting(env string) bool {
	if s.wr.Holds(env) || s.exp.Holds(env) {
		return true
	}
	for _, a := range s.admissions {
		if !a.releasing && !a.transferred && a.env == env {
			return true
		}
	}
	return s.activeIn(env)
}

// activeIn reports whether a Run or a workspace read of env has not
// settled yet.
func (s *Session) activeIn(env string) bool {
	for _, r := range s.runs {
		if !r.settled && r.envID == env {
			return true
		}
	}
	return s.reads.ActiveIn(env)
}

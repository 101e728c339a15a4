package execution

import (
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/suspend"
)

// Fence is the Runtime's suspension state, which the daemon shares between
// its Sessions (internal/suspend).
type Fence = suspend.Fence

// NewFence returns an open fence.
func NewFence() *Fence { return suspend.NewFence() }

// suspHost is what the suspension lifecycle (internal/suspend) sees of its
// Session.
type suspHost struct{ s *Session }

var _ suspend.Host = suspHost{}

func (h suspHost) Bound(env string) bool { return h.s.cfg.Environments.Has(env) }
func (h suspHost) Busy(env string) bool  { return h.s.busyDraining(env) }

// busyDraining reports whether native work of env on this connection is
// active: a Run, a read, the transfer, a workspace write or export, or a
// preparation not yet granted.
func (s *Session) busyDraining(env string) bool {
	if s.activeIn(env) || s.xfer.Holds(env) ||
		s.wr.Holds(env) || s.exp.Holds(env) {
		return true
	}
	for _, a := range s.admissions {
		if a.env == env && !a.releasing && !a.transferred && a.expiresAt == 0 {
			return true
		}
	}
	return false
}

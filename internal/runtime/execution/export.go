package execution

import (
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/export"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/runtime/harness"
)

// exportHost is what the export lifecycle (internal/export) sees of its
// Session.
type exportHost struct{ loop }

var _ export.Host = exportHost{}

func (h exportHost) ReadOnlyOwner(handle string) (string, harness.Declaration, bool) {
	for _, a := range h.s.admissions {
		if a.handle == handle && a.readOnly && !a.releasing && a.expiresAt != 0 {
			return a.env, a.decl, true
		}
	}
	return "", harness.Declaration{}, false
}

func (h exportHost) Workspace(env string) (*workspace.Workspace, bool) {
	return h.s.cfg.Environments.Lookup(env)
}

func (h exportHost) HeldElsewhere(env string) bool {
	s := h.s
	return s.wr.Holds(env) || s.xfer.Holds(env) || s.fence.Held(env) || s.shutting
}

func (h exportHost) Post(fn func(d *peer.Driver)) bool { return h.s.post(fn) }
func (h exportHost) Released(d *peer.Driver)           { h.s.susp.CheckDrain(d) }

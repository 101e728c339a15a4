package execution

import (
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/read"
	"github.com/agentwire/agentwire/internal/runtime/workspace"
	"github.com/agentwire/agentwire/wire"
)

// MaxReadsInFlight bounds the workspace reads one connection runs at once
// (internal/read).
const MaxReadsInFlight = read.MaxInFlight

// readHost is what the read lifecycle (internal/read) sees of its Session.
type readHost struct{ loop }

var _ read.Host = readHost{}

// Owner finds the owner a read targets.
//
// decision: a Run started by prompt_request took over no preparation
// handle, so it is no read target (daemon-protocol.txt:177: the handle, or
// the Run it was transferred to).
func (h readHost) Owner(p wire.WorkspaceRead) (owner, env string, ok bool) {
	s := h.s
	if p.Handle != "" {
		for _, a := range s.admissions {
			if a.handle == p.Handle && !a.releasing && !a.transferred {
				return "handle:" + a.handle, envOf(a.cfg.Configuration), true
			}
		}
		return "", "", false
	}
	r := s.runs[p.RunID]
	if r == nil || r.settled || r.env == nil {
		return "", "", false
	}
	return "run:" + r.id, *r.env, true
}

func (h readHost) Workspace(env string) (*workspace.Workspace, bool) {
	return h.s.cfg.Environments.Lookup(env)
}

func (h readHost) Post(fn func(d *peer.Driver)) bool { return h.s.post(fn) }

func envOf(c wire.PromptRequest) string {
	if c.LocalEnvironment == nil {
		return ""
	}
	return c.LocalEnvironment.ID
}

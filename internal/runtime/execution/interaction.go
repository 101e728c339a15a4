package execution

import (
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/interaction"
	"github.com/agentwire/agentwire/runtime/harness"
)

// interactionHost is what the interaction lifecycle
// (internal/interaction) sees of its Session.
type interactionHost struct{ loop }

var _ interaction.Host = interactionHost{}

// Target: the Run lives here, has its Executor and has not settled.
func (h interactionHost) Target(runID string) (interaction.Target, bool) {
	r := h.s.runs[runID]
	if r == nil || r.exe == nil || r.settled {
		return interaction.Target{}, false
	}
	decider, _ := r.exe.(harness.Decider)
	return interaction.Target{Decider: decider, Caps: r.turn.Declaration.Capabilities, Hold: func() func() {
		r.em.hold()
		return r.em.release
	}}, true
}

func (h interactionHost) Post(fn func(d *peer.Driver)) bool { return h.s.post(fn) }

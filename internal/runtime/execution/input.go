package execution

import (
	"time"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/input"
	"github.com/agentwire/agentwire/internal/runtime/execution/internal/interaction"
	"github.com/agentwire/agentwire/runtime/harness"
)

// NativeWriteBound bounds an adapter's native write of one active input
// (daemon-protocol.txt:127); the input machine's native_write timer says
// the same and answers outcome_unknown when it fires first.
const NativeWriteBound = interaction.NativeWriteBound

// inputHost is what the input lifecycle (internal/input) sees of its
// Session.
type inputHost struct{ loop }

var _ input.Host = inputHost{}

// Target: the Run runs here with its Executor and has not settled.
func (h inputHost) Target(runID string) (input.Target, bool) {
	r := h.s.runs[runID]
	if r == nil || r.settled || r.exe == nil {
		return input.Target{}, false
	}
	steerer, _ := r.exe.(harness.Steerer)
	return input.Target{Steerer: steerer, Caps: r.turn.Declaration.Capabilities}, true
}

// Drained publishes a done held back for the Run's inputs in flight.
func (h inputHost) Drained(d *peer.Driver, runID string) {
	if r := h.s.runs[runID]; r != nil && r.holding {
		h.s.publishDone(d, r)
	}
}

func (h inputHost) Post(fn func(d *peer.Driver)) bool { return h.s.post(fn) }
func (h inputHost) WriteBound() time.Duration         { return NativeWriteBound }
func (h inputHost) Clock() peer.Clock                 { return h.s.cfg.Clock }

package execution_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/execution"
	"github.com/agentwire/agentwire/wire"
)

// TestRefusedFrameFailsTheRun: a frame of the Run that the driver refuses
// before it leaves (here a delta that is not valid UTF-8) ends the Turn
// with an error naming it, then done; the adapter settling quietly with
// what it produced does not make the Turn complete.
func TestRefusedFrameFailsTheRun(t *testing.T) {
	a := newCounting()
	a.emit = []wire.Payload{wire.Delta{Delta: "ok", Sequence: 1}, wire.Delta{Delta: "\xff", Sequence: 2}, wire.Delta{Delta: "late", Sequence: 3}}
	r := newRig(t, a, execution.Config{MaxActive: 4})
	r.send("prompt_request", "run", wire.PromptRequest{AgentKind: "test", RunID: "run",
		Input: wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "hi"}}}}})
	f := r.next()
	require.Equal(t, "delta", f.Type)
	assert.Equal(t, "ok", f.Payload["delta"])
	f = r.next()
	if f.Type == "delta" {
		// Queued before the refusal was known (the emit window); it is
		// valid and goes out.
		assert.Equal(t, "late", f.Payload["delta"])
		f = r.next()
	}
	require.Equal(t, "error", f.Type, "%+v", f)
	assert.Contains(t, f.Payload["error"], "delta")
	assert.Contains(t, f.Payload["error"], "UTF-8")
	f = r.next()
	require.Equal(t, "done", f.Type, "%+v", f)
	assert.Equal(t, "run", f.ID)
}

package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// A Turn whose next frame would pass its journal limit fails with the
// finite reason journal_limit: the events journaled before stay, the
// stream's last event says why it ends, the frame that did not fit and
// every later one (done included) are not journaled, and the connection
// stays up for the next Turn.
func TestTurnJournalLimit(t *testing.T) {
	e := newEnvStore(t, true, memory.New(), func(c *gateway.Config) { c.JournalLimit = 100 })
	tr := e.queueTurn("stream")
	r := e.runtime("dev-1", wiretest.Capabilities())
	s := r.start(first(r.prepare()))
	e.waitTurn(tr.ID, store.TurnRunning)

	r.send(s.RunID, wire.Delta{Delta: strings.Repeat("a", 40), Sequence: 1}) // about 60 bytes
	r.send(s.RunID, wire.Delta{Delta: strings.Repeat("b", 40), Sequence: 2}) // would pass 100
	r.send(s.RunID, wire.Delta{Delta: "late", Sequence: 3})
	r.send(s.RunID, wire.Done{})
	e.waitTurn(tr.ID, store.TurnFailed)

	got, err := e.store.GetTurn(context.Background(), tr.ID)
	require.NoError(t, err)
	assert.Equal(t, gateway.ReasonJournalLimit, got.Outcome.Reason)
	var types []string
	var firstDelta, last string
	for _, ev := range runEvents(t, e.store, tr.ID) {
		types = append(types, ev.Type)
		switch ev.Type {
		case "delta":
			firstDelta = string(ev.Payload)
		case "observation":
			last = string(ev.Payload)
		}
	}
	assert.Equal(t, []string{"delta", "observation"}, types, "what was journaled stays; nothing after the limit is, no done is invented")
	assert.Contains(t, firstDelta, strings.Repeat("a", 40))
	assert.JSONEq(t, `{"reason":"journal_limit","limit_bytes":100}`, last)
	assert.Contains(t, e.logs.String(), "turn journal limit")

	next := e.queueTurn("after")
	e.gw.Kick()
	s2 := r.start(first(r.prepare()))
	e.waitTurn(next.ID, store.TurnRunning)
	r.send(s2.RunID, wire.Delta{Delta: strings.Repeat("c", 40), Sequence: 1})
	r.send(s2.RunID, wire.Done{})
	e.waitTurn(next.ID, store.TurnCompleted)
}

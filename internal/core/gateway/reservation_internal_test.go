package gateway

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/agentwire/agentwire/core/store"
)

// turnStates answers GetTurn from a map; nothing else is used.
type turnStates struct {
	store.Store
	states map[string]store.TurnState
}

func (s turnStates) GetTurn(_ context.Context, id string) (store.Turn, error) {
	return store.Turn{ID: id, State: s.states[id]}, nil
}

// A read or write right after a Turn ended waits for the worker to drop
// the Turn's hold instead of answering session_busy; a Turn that still
// runs does not make it wait.
func TestAwaitFinishedTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &Gateway{}
		states := map[string]store.TurnState{"ended": store.TurnCompleted, "running": store.TurnRunning}
		g.cfg.Store = turnStates{states: states}
		g.holds = map[string]*sessionHold{"ses": {turns: map[string]turnHold{"ended": {}}}}
		done := make(chan struct{})
		go func() {
			g.awaitFinishedTurns(context.Background(), "ses")
			close(done)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("returned while the ended Turn still held the Session")
		default:
		}
		g.dropTurnHold("ses", "ended")
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("still waiting after the hold went")
		}

		g.holds = map[string]*sessionHold{"ses": {turns: map[string]turnHold{"running": {}}}}
		g.awaitFinishedTurns(context.Background(), "ses") // returns at once: the Run may be read through
	})
}

package api

import (
	"context"

	"github.com/agentwire/agentwire/core/store"
)

// A Turn whose record Core's store failed to write (core/gateway,
// persistence.go) has failed for Core, but the store may still hold it
// running while the disk is full, and a stream that waits for the store
// to say it ended would wait until Core restarts. The gateway tells the
// Journal about such a Turn; until its failure is written, the Journal
// shows it as failed with that outcome wherever it reads the Turn for a
// client (the event stream's end and its final status, GET of the Turn).

// unrecorded is the outcome of a Turn of Run runID not written yet.
type unrecorded struct {
	runID   string
	outcome store.Outcome
}

// Unrecorded records that the Turn's Run runID failed with o while its
// failure is not written yet, and wakes the Turn's streams, which end
// with it.
func (j *Journal) Unrecorded(turnID, runID string, o store.Outcome) {
	j.mu.Lock()
	if j.failed == nil {
		j.failed = map[string]unrecorded{}
	}
	j.failed[turnID] = unrecorded{runID: runID, outcome: o}
	j.mu.Unlock()
	j.Notify(turnID)
}

// Recorded forgets the Turn's unrecorded outcome: the store holds its
// record now (or the gateway gave up on it).
func (j *Journal) Recorded(turnID string) {
	j.mu.Lock()
	delete(j.failed, turnID)
	j.mu.Unlock()
	j.Notify(turnID)
}

// Turn reads the Turn from the store and, while the store holds it
// unfinished under the Run whose failure is not written yet, shows it
// failed with that outcome.
func (j *Journal) Turn(ctx context.Context, id string) (store.Turn, error) {
	t, err := j.Store.GetTurn(ctx, id)
	if err != nil || t.State.Terminal() {
		return t, err
	}
	j.mu.Lock()
	u, ok := j.failed[id]
	j.mu.Unlock()
	if ok && u.runID == t.RunID {
		t.State, t.Outcome = store.TurnFailed, u.outcome
	}
	return t, nil
}

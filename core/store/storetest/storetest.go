// Package storetest holds the conformance suites of Core's two store
// interfaces: Run for store.Store, RunCredentials for store.Credentials.
// Every implementation (memory, sqlite, an embedder's own) runs them with a
// constructor of fresh, empty stores. The race tests start many
// goroutines on one store: an implementation that reads, decides and
// writes back in two steps fails them.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// Open returns a fresh, empty store; the suite closes it.
type Open func(t *testing.T) store.Store

// T0 is the suite's base time (millisecond precision, UTC).
var T0 = time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// Run runs every conformance test.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"SessionsAndEnvironments", testSessions},
		{"TurnLifecycle", testTurnLifecycle},
		{"TurnDueOrder", testDueOrder},
		{"SessionTurns", testSessionTurns},
		{"CancelTurn", testCancelQueued},
		{"NativeSession", testNativeSession},
		{"ClaimRace", testClaimRace},
		{"Inputs", testInputs},
		{"InputCursorRace", testCursorRace},
		{"Journal", testJournal},
		{"JournalBatch", testJournalBatch},
		{"JournalConcurrentAppend", testJournalConcurrent},
		{"Interactions", testInteractions},
		{"InteractionAnswerRace", testInteractionRace},
		{"WorkspaceWrites", testWorkspaceWrites},
		{"WorkspaceWriteRace", testWorkspaceWriteRace},
		{"WorkspaceWriteStates", testWorkspaceWriteStates},
		{"WorkspaceWriteResolveRace", testWorkspaceWriteResolveRace},
		{"OwnerEpoch", testOwnerEpoch},
		{"OwnerEpochRace", testOwnerEpochRace},
		{"Suspensions", testSuspensions},
		{"SuspensionRace", testSuspensionRace},
		{"Instances", testInstances},
		{"Agents", testAgents},
		{"Secrets", testSecrets},
		{"InstanceRace", testInstanceRace},
		{"Initializations", testInitializations},
		{"DeviceAssignment", testDeviceAssignment},
		{"DeviceAssignmentRace", testDeviceAssignmentRace},
		{"EnvironmentList", testEnvironmentList},
		{"ProjectUsage", testProjectUsage},
		{"Replicas", testReplicas},
		{"Leases", testLeases},
		{"RetireLeases", testRetireLeases},
		{"ReapRace", testReapRace},
		{"SessionClaimRace", testSessionClaimRace},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

var ctx = context.Background()

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// seed creates an Environment, a Session and n queued Turns turn-0..n-1.
func seed(t *testing.T, s store.Store, n int) {
	t.Helper()
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", Binding: raw(`{}`), CreatedAt: T0}))
	require.NoError(t, s.CreateSession(ctx, store.Session{ID: "ses", Project: "p", AgentKind: "codex", EnvironmentID: "env", Options: raw(`{"model":"m"}`), CreatedAt: T0}))
	for i := 0; i < n; i++ {
		require.NoError(t, s.CreateTurn(ctx, store.Turn{
			ID: fmt.Sprintf("turn-%d", i), SessionID: "ses",
			Input: raw(`[{"content":[{"type":"input_text","text":"hi"}]}]`), CreatedAt: T0.Add(time.Duration(i) * time.Millisecond),
		}))
	}
}

// testSessionTurns: a Session's newest Turns, oldest first, another
// Session's never.
func testSessionTurns(t *testing.T, s store.Store) {
	seed(t, s, 4)
	require.NoError(t, s.CreateSession(ctx, store.Session{ID: "other", Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: T0}))
	require.NoError(t, s.CreateTurn(ctx, store.Turn{ID: "other-turn", SessionID: "other", Input: raw(`[]`), CreatedAt: T0.Add(time.Second)}))
	ids := func(ts []store.Turn) []string {
		var out []string
		for _, x := range ts {
			out = append(out, x.ID)
		}
		return out
	}
	all, err := s.SessionTurns(ctx, "ses", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"turn-0", "turn-1", "turn-2", "turn-3"}, ids(all))
	newest, err := s.SessionTurns(ctx, "ses", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"turn-2", "turn-3"}, ids(newest), "the newest, oldest first")
	assert.Equal(t, store.TurnQueued, newest[0].State)
	none, err := s.SessionTurns(ctx, "missing", 10)
	require.NoError(t, err)
	assert.Empty(t, none)
}

// race runs fn on n goroutines started together and returns how many
// returned nil; every other result must be wantErr.
func race(t *testing.T, n int, wantErr error, fn func(i int) error) int {
	t.Helper()
	var wins atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := fn(i); err != nil {
				errs <- err
				return
			}
			wins.Add(1)
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.ErrorIs(t, err, wantErr)
	}
	return int(wins.Load())
}

func testSessions(t *testing.T, s store.Store) {
	seed(t, s, 0)
	e, err := s.GetEnvironment(ctx, "env")
	require.NoError(t, err)
	assert.Equal(t, "none", e.Type)
	assert.JSONEq(t, `{}`, string(e.Binding))
	assert.True(t, e.CreatedAt.Equal(T0))

	x, err := s.GetSession(ctx, "ses")
	require.NoError(t, err)
	assert.Equal(t, "codex", x.AgentKind)
	assert.Equal(t, "env", x.EnvironmentID)
	assert.Equal(t, "p", x.Project)
	assert.JSONEq(t, `{"model":"m"}`, string(x.Options))
	assert.True(t, x.CreatedAt.Equal(T0), "got %v", x.CreatedAt)

	assert.ErrorIs(t, s.CreateSession(ctx, store.Session{ID: "ses", EnvironmentID: "env", CreatedAt: T0}), store.ErrConflict)
	assert.ErrorIs(t, s.CreateEnvironment(ctx, store.Environment{ID: "env", Type: "none", CreatedAt: T0}), store.ErrConflict)
	assert.ErrorIs(t, s.CreateSession(ctx, store.Session{ID: "other", EnvironmentID: "missing", CreatedAt: T0}), store.ErrNotFound)
	_, err = s.GetSession(ctx, "missing")
	assert.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.GetEnvironment(ctx, "missing")
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.ErrorIs(t, s.CreateTurn(ctx, store.Turn{ID: "t", SessionID: "missing", CreatedAt: T0}), store.ErrNotFound)
}

func testTurnLifecycle(t *testing.T, s store.Store) {
	seed(t, s, 1)
	tr, err := s.GetTurn(ctx, "turn-0")
	require.NoError(t, err)
	assert.Equal(t, store.TurnQueued, tr.State)
	assert.Equal(t, "queued", tr.Status().State)
	assert.JSONEq(t, `[{"content":[{"type":"input_text","text":"hi"}]}]`, string(tr.Input))
	assert.ErrorIs(t, s.CreateTurn(ctx, store.Turn{ID: "turn-0", SessionID: "ses", CreatedAt: T0}), store.ErrConflict)

	// Starting or finishing an unclaimed Turn is stale.
	assert.ErrorIs(t, s.MoveTurn(ctx, move("turn-0", "", store.TurnClaimed, store.TurnStarting, T0)), store.ErrStale)
	assert.ErrorIs(t, s.MoveTurn(ctx, ClaimMove("missing", store.Claim{RunID: "r", At: T0})), store.ErrNotFound)
	assert.ErrorIs(t, s.MoveTurn(ctx, move("turn-0", "", store.TurnQueued, store.TurnRunning, T0)), store.ErrInvalid, "the turn machine has no such rule")
	assert.ErrorIs(t, s.MoveTurn(ctx, move("turn-0", "", store.TurnQueued, "paused", T0)), store.ErrInvalid, "not a state of the turn machine")

	c := store.Claim{DeviceID: "dev", OwnerEpoch: 3, RunID: "run-1", At: T0.Add(time.Second)}
	require.NoError(t, s.MoveTurn(ctx, ClaimMove("turn-0", c)))
	assert.ErrorIs(t, s.MoveTurn(ctx, ClaimMove("turn-0", c)), store.ErrStale)
	tr, _ = s.GetTurn(ctx, "turn-0")
	assert.Equal(t, store.TurnClaimed, tr.State)
	assert.Equal(t, "queued", tr.Status().State, "preparation submits no input")
	assert.Equal(t, "dev", tr.DeviceID)
	assert.Equal(t, uint64(3), tr.OwnerEpoch)
	assert.Equal(t, 1, tr.Attempts)

	// preparation_capacity: back to the queue, not due before the backoff.
	requeue := move("turn-0", "other-run", store.TurnClaimed, store.TurnQueued, T0)
	assert.ErrorIs(t, s.MoveTurn(ctx, requeue), store.ErrStale)
	requeue.RunID, requeue.NotBefore, requeue.At = "run-1", T0.Add(time.Minute), T0.Add(2*time.Second)
	require.NoError(t, s.MoveTurn(ctx, requeue))
	due, err := s.DueTurns(ctx, T0.Add(30*time.Second), "", 10)
	require.NoError(t, err)
	assert.Empty(t, due)
	assert.ErrorIs(t, s.MoveTurn(ctx, ClaimMove("turn-0", store.Claim{RunID: "run-2", At: T0.Add(30 * time.Second)})), store.ErrStale)
	due, err = s.DueTurns(ctx, T0.Add(time.Minute), "", 10)
	require.NoError(t, err)
	require.Len(t, due, 1)

	require.NoError(t, s.MoveTurn(ctx, ClaimMove("turn-0", store.Claim{DeviceID: "dev", OwnerEpoch: 4, RunID: "run-2", At: T0.Add(time.Minute)})))
	assert.ErrorIs(t, s.MoveTurn(ctx, move("turn-0", "run-1", store.TurnClaimed, store.TurnStarting, T0)), store.ErrStale, "an old Run cannot start")
	require.NoError(t, s.MoveTurn(ctx, move("turn-0", "run-2", store.TurnClaimed, store.TurnStarting, T0.Add(61*time.Second))))
	tr, _ = s.GetTurn(ctx, "turn-0")
	assert.Equal(t, "queued", tr.Status().State, "nothing left before the start was written")
	require.NoError(t, s.MoveTurn(ctx, move("turn-0", "run-2", store.TurnStarting, store.TurnRunning, T0.Add(61*time.Second))))
	tr, _ = s.GetTurn(ctx, "turn-0")
	assert.Equal(t, "running", tr.Status().State)
	assert.Equal(t, 2, tr.Attempts)
	active, err := s.ActiveTurns(ctx)
	require.NoError(t, err)
	require.Len(t, active, 1)

	assert.ErrorIs(t, s.MoveTurn(ctx, FinishMove("turn-0", "run-2", store.TurnRunning, store.TurnRunning, store.Outcome{}, T0)), store.ErrInvalid)
	o := store.Outcome{Reason: store.ReasonEngineFailed, EngineErrorCode: "connection_failed", EngineHTTPStatus: 502, Evidence: raw(`{"error":"x"}`)}
	require.NoError(t, s.MoveTurn(ctx, FinishMove("turn-0", "run-2", store.TurnRunning, store.TurnFailed, o, T0.Add(62*time.Second))))
	assert.ErrorIs(t, s.MoveTurn(ctx, FinishMove("turn-0", "run-2", store.TurnRunning, store.TurnCompleted, store.Outcome{}, T0)), store.ErrStale, "terminal is final")
	tr, _ = s.GetTurn(ctx, "turn-0")
	assert.Equal(t, store.Status{State: "failed", Reason: "engine_failed", EngineErrorCode: "connection_failed", EngineHTTPStatus: 502}, tr.Status())
	assert.JSONEq(t, `{"error":"x"}`, string(tr.Outcome.Evidence))
	assert.True(t, tr.UpdatedAt.Equal(T0.Add(62*time.Second)))
	active, _ = s.ActiveTurns(ctx)
	assert.Empty(t, active)
}

func testCancelQueued(t *testing.T, s store.Store) {
	seed(t, s, 2)
	require.NoError(t, s.MoveTurn(ctx, FinishMove("turn-0", "", store.TurnQueued, store.TurnCancelled, store.Outcome{}, T0.Add(time.Second))))
	tr, err := s.GetTurn(ctx, "turn-0")
	require.NoError(t, err)
	assert.Equal(t, store.Status{State: "cancelled"}, tr.Status())
	assert.ErrorIs(t, s.MoveTurn(ctx, FinishMove("turn-0", "", store.TurnQueued, store.TurnCancelled, store.Outcome{}, T0)), store.ErrStale, "terminal is final")
	due, err := s.DueTurns(ctx, T0.Add(time.Hour), "", 10)
	require.NoError(t, err)
	require.Len(t, due, 1, "a cancelled Turn is never due")

	// A claimed Turn is the worker's: it is not cancelled as queued.
	require.NoError(t, s.MoveTurn(ctx, ClaimMove("turn-1", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-1", At: T0.Add(time.Second)})))
	assert.ErrorIs(t, s.MoveTurn(ctx, FinishMove("turn-1", "", store.TurnQueued, store.TurnCancelled, store.Outcome{}, T0)), store.ErrStale)
	assert.ErrorIs(t, s.MoveTurn(ctx, FinishMove("missing", "", store.TurnQueued, store.TurnCancelled, store.Outcome{}, T0)), store.ErrNotFound)
	// Cancelled after its claim: one of the racing moves wins.
	assert.Equal(t, 1, race(t, 8, store.ErrStale, func(int) error {
		return s.MoveTurn(ctx, move("turn-1", "run-1", store.TurnClaimed, store.TurnCancelling, T0))
	}))
	assert.Equal(t, 1, race(t, 8, store.ErrStale, func(int) error {
		return s.MoveTurn(ctx, FinishMove("turn-1", "run-1", store.TurnCancelling, store.TurnCancelled, store.Outcome{}, T0))
	}))
}

func testNativeSession(t *testing.T, s store.Store) {
	seed(t, s, 1)
	x, err := s.GetSession(ctx, "ses")
	require.NoError(t, err)
	assert.False(t, x.Started)
	assert.Empty(t, x.NativeSessionID)

	// Starting a Turn marks its Session started, in the same write.
	require.NoError(t, s.MoveTurn(ctx, ClaimMove("turn-0", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-1", At: T0})))
	x, _ = s.GetSession(ctx, "ses")
	assert.False(t, x.Started, "a claim submits no input")
	require.NoError(t, s.MoveTurn(ctx, move("turn-0", "run-1", store.TurnClaimed, store.TurnStarting, T0)))
	x, _ = s.GetSession(ctx, "ses")
	assert.False(t, x.Started, "the start is not written yet")
	require.NoError(t, s.MoveTurn(ctx, move("turn-0", "run-1", store.TurnStarting, store.TurnRunning, T0)))
	x, _ = s.GetSession(ctx, "ses")
	assert.True(t, x.Started)

	assert.ErrorIs(t, s.RecordNativeSession(ctx, "ses", ""), store.ErrInvalid)
	assert.ErrorIs(t, s.RecordNativeSession(ctx, "missing", "n"), store.ErrNotFound)
	assert.Equal(t, 1, race(t, 8, store.ErrStale, func(i int) error {
		return s.RecordNativeSession(ctx, "ses", fmt.Sprintf("native-%d", i))
	}), "one native identity wins")
	x, _ = s.GetSession(ctx, "ses")
	require.NotEmpty(t, x.NativeSessionID)
	require.NoError(t, s.RecordNativeSession(ctx, "ses", x.NativeSessionID), "the same identity again is a no-op")
	assert.ErrorIs(t, s.RecordNativeSession(ctx, "ses", "another"), store.ErrStale)
}

// testDueOrder: due Turns come oldest first, one per Session (its oldest
// queued Turn, only when that one is due), so one Session's backlog never
// fills the list.
func testDueOrder(t *testing.T, s store.Store) {
	seed(t, s, 5) // turn-0..4 of "ses"
	for i, id := range []string{"s1", "s2", "s3"} {
		require.NoError(t, s.CreateSession(ctx, store.Session{ID: id, Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: T0}))
		require.NoError(t, s.CreateTurn(ctx, store.Turn{ID: id + "-turn", SessionID: id, Input: raw(`[]`), CreatedAt: T0.Add(time.Second + time.Duration(i)*time.Millisecond)}))
	}
	ids := func(due []store.Turn) []string {
		var out []string
		for _, tr := range due {
			out = append(out, tr.ID)
		}
		return out
	}
	due, err := s.DueTurns(ctx, T0.Add(time.Hour), "", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"turn-0", "s1-turn", "s2-turn"}, ids(due), "the oldest of each Session, oldest first")
	// The next page starts after the last Turn of this one.
	due, err = s.DueTurns(ctx, T0.Add(time.Hour), "s2-turn", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"s3-turn"}, ids(due))
	due, err = s.DueTurns(ctx, T0.Add(time.Hour), "turn-0", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"s1-turn", "s2-turn"}, ids(due))
	due, err = s.DueTurns(ctx, T0.Add(time.Hour), "no-such-turn", 10)
	require.NoError(t, err)
	assert.Empty(t, due, "nothing comes after an unknown Turn")
	due, err = s.DueTurns(ctx, T0.Add(time.Hour), "", 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"turn-0", "s1-turn", "s2-turn", "s3-turn"}, ids(due))

	// Its oldest backing off, a Session has nothing due: the next one
	// never overtakes it.
	require.NoError(t, s.MoveTurn(ctx, ClaimMove("turn-0", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-1", At: T0.Add(time.Second)})))
	requeue := move("turn-0", "run-1", store.TurnClaimed, store.TurnQueued, T0.Add(2*time.Second))
	requeue.NotBefore = T0.Add(2 * time.Hour)
	require.NoError(t, s.MoveTurn(ctx, requeue))
	due, err = s.DueTurns(ctx, T0.Add(time.Hour), "", 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"s1-turn", "s2-turn", "s3-turn"}, ids(due))
	// A cursor that is no longer queued still places the page.
	due, err = s.DueTurns(ctx, T0.Add(time.Hour), "turn-0", 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"s1-turn", "s2-turn", "s3-turn"}, ids(due))
	// Once it left the queue, the Session's next Turn is its head.
	require.NoError(t, s.MoveTurn(ctx, FinishMove("turn-0", "", store.TurnQueued, store.TurnCancelled, store.Outcome{}, T0.Add(3*time.Second))))
	due, err = s.DueTurns(ctx, T0.Add(time.Hour), "", 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"turn-1", "s1-turn", "s2-turn", "s3-turn"}, ids(due))
}

func testClaimRace(t *testing.T, s store.Store) {
	seed(t, s, 1)
	wins := race(t, 16, store.ErrStale, func(i int) error {
		return s.MoveTurn(ctx, ClaimMove("turn-0", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: fmt.Sprintf("run-%d", i), At: T0}))
	})
	assert.Equal(t, 1, wins, "exactly one worker claims a Turn")
	tr, _ := s.GetTurn(ctx, "turn-0")
	assert.Equal(t, 1, tr.Attempts)
}

func testInputs(t *testing.T, s store.Store) {
	seed(t, s, 1)
	for i := 1; i <= 3; i++ {
		in, err := s.AppendInput(ctx, store.Input{TurnID: "turn-0", ID: fmt.Sprintf("in-%d", i), Content: raw(`[]`), CreatedAt: T0})
		require.NoError(t, err)
		assert.Equal(t, int64(i), in.Seq)
	}
	_, err := s.AppendInput(ctx, store.Input{TurnID: "turn-0", ID: "in-2", Content: raw(`[]`), CreatedAt: T0})
	assert.ErrorIs(t, err, store.ErrConflict)
	_, err = s.AppendInput(ctx, store.Input{TurnID: "missing", ID: "x", Content: raw(`[]`), CreatedAt: T0})
	assert.ErrorIs(t, err, store.ErrNotFound)

	list, err := s.Inputs(ctx, "turn-0", 1)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "in-2", list[0].ID)
	assert.Equal(t, "in-3", list[1].ID)

	require.NoError(t, s.AdvanceInputCursor(ctx, "turn-0", 0, 1))
	assert.ErrorIs(t, s.AdvanceInputCursor(ctx, "turn-0", 0, 1), store.ErrStale)
	assert.ErrorIs(t, s.AdvanceInputCursor(ctx, "turn-0", 1, 1), store.ErrStale, "the cursor only moves forward")
	assert.ErrorIs(t, s.AdvanceInputCursor(ctx, "turn-0", 1, 9), store.ErrStale, "not past the last input")
	require.NoError(t, s.AdvanceInputCursor(ctx, "turn-0", 1, 2))
	tr, _ := s.GetTurn(ctx, "turn-0")
	assert.Equal(t, int64(2), tr.InputCursor)
	assert.ErrorIs(t, s.AdvanceInputCursor(ctx, "missing", 0, 1), store.ErrNotFound)
}

func testCursorRace(t *testing.T, s store.Store) {
	seed(t, s, 1)
	_, err := s.AppendInput(ctx, store.Input{TurnID: "turn-0", ID: "in-1", Content: raw(`[]`), CreatedAt: T0})
	require.NoError(t, err)
	wins := race(t, 16, store.ErrStale, func(int) error { return s.AdvanceInputCursor(ctx, "turn-0", 0, 1) })
	assert.Equal(t, 1, wins, "an accepted input advances the cursor once")
}

func testJournal(t *testing.T, s store.Store) {
	seed(t, s, 2)
	for i := 1; i <= 5; i++ {
		e, err := s.AppendEvent(ctx, store.Event{TurnID: "turn-0", RunID: "run", Type: "delta", Payload: raw(fmt.Sprintf(`{"n":%d}`, i)), At: T0})
		require.NoError(t, err)
		assert.Equal(t, int64(i), e.Seq)
	}
	e, err := s.AppendEvent(ctx, store.Event{TurnID: "turn-1", RunID: "run-b", Type: "done", Payload: raw(`{}`), At: T0})
	require.NoError(t, err)
	assert.Equal(t, int64(1), e.Seq, "each Turn has its own sequence")
	_, err = s.AppendEvent(ctx, store.Event{TurnID: "missing", Type: "done", At: T0})
	assert.ErrorIs(t, err, store.ErrNotFound)

	got, err := s.Events(ctx, "turn-0", 2, 2)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, int64(3), got[0].Seq)
	assert.JSONEq(t, `{"n":3}`, string(got[0].Payload))
	assert.Equal(t, "delta", got[0].Type)
	assert.Equal(t, "run", got[0].RunID)
	assert.True(t, got[0].At.Equal(T0))
	all, err := s.Events(ctx, "turn-0", 0, 0)
	require.NoError(t, err)
	assert.Len(t, all, 5)
	none, err := s.Events(ctx, "turn-0", 5, 0)
	require.NoError(t, err)
	assert.Empty(t, none)
	// Sizes without payloads, in the same order and bounds.
	_, err = s.AppendEvent(ctx, store.Event{TurnID: "turn-0", RunID: "run", Type: "done", Payload: raw(`{"content":"` + strings.Repeat("é", 100) + `"}`), At: T0})
	require.NoError(t, err)
	sizes, err := s.EventSizes(ctx, "turn-0", 4, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.EventSize{{Seq: 5, Bytes: len(`{"n":5}`)}, {Seq: 6, Bytes: len(`{"content":""}`) + 200}}, sizes, "payload sizes in bytes")
	sizes, err = s.EventSizes(ctx, "turn-0", 0, 2)
	require.NoError(t, err)
	assert.Equal(t, []store.EventSize{{Seq: 1, Bytes: 7}, {Seq: 2, Bytes: 7}}, sizes)

	// The newest event of a type, whatever follows it.
	last, err := s.LastEvent(ctx, "turn-0", "delta")
	require.NoError(t, err)
	assert.Equal(t, int64(5), last.Seq)
	assert.JSONEq(t, `{"n":5}`, string(last.Payload))
	_, err = s.AppendEvent(ctx, store.Event{TurnID: "turn-0", RunID: "run", Type: "usage", Payload: raw(`{"model":"m"}`), At: T0})
	require.NoError(t, err)
	last, err = s.LastEvent(ctx, "turn-0", "delta")
	require.NoError(t, err)
	assert.Equal(t, int64(5), last.Seq)
	_, err = s.LastEvent(ctx, "turn-1", "usage")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// A batch interleaves Turns, keeps each Turn's order and numbering after
// what it had, and stores everything but the events of a missing Turn;
// each finish applies or fails on its own. Its Turns are of three
// Sessions, since a Session's Turns are claimed one at a time.
func testJournalBatch(t *testing.T, s store.Store) {
	seed(t, s, 1)
	for i := 1; i < 3; i++ {
		ses := fmt.Sprintf("ses-%d", i)
		require.NoError(t, s.CreateSession(ctx, store.Session{ID: ses, Project: "p", AgentKind: "codex", EnvironmentID: "env", CreatedAt: T0}))
		require.NoError(t, s.CreateTurn(ctx, store.Turn{ID: fmt.Sprintf("turn-%d", i), SessionID: ses, Input: raw(`[]`), CreatedAt: T0.Add(time.Duration(i) * time.Millisecond)}))
	}
	require.NoError(t, Start(s, "turn-0", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-0", At: T0}))
	_, err := s.AppendEvent(ctx, store.Event{TurnID: "turn-0", RunID: "run", Type: "delta", Payload: raw(`{"n":1}`), At: T0})
	require.NoError(t, err)
	batch := []store.Event{
		{TurnID: "turn-0", RunID: "run", Type: "delta", Payload: raw(`{"n":2}`), At: T0},
		{TurnID: "turn-1", RunID: "run-b", Type: "delta", Payload: raw(`{"n":1}`), At: T0},
		{TurnID: "missing", RunID: "run-x", Type: "delta", Payload: raw(`{}`), At: T0},
		{TurnID: "turn-0", RunID: "run", Type: "done", Payload: raw(`{}`), At: T0},
	}
	finishes := []store.TurnMove{
		FinishMove("turn-0", "run-0", store.TurnRunning, store.TurnCompleted, store.Outcome{}, T0),
		FinishMove("turn-1", "another-run", store.TurnRunning, store.TurnCompleted, store.Outcome{}, T0),
		FinishMove("turn-2", "", store.TurnRunning, store.TurnCompleted, store.Outcome{}, T0),
		FinishMove("nope", "run", store.TurnRunning, store.TurnCompleted, store.Outcome{}, T0),
		FinishMove("turn-1", "run-1", store.TurnRunning, store.TurnQueued, store.Outcome{}, T0),
	}
	moves := []store.TurnMove{
		ClaimMove("turn-1", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-1", At: T0}),
		ClaimMove("turn-0", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run-again", At: T0}),
		move("turn-1", "run-1", store.TurnClaimed, store.TurnStarting, T0),
		move("turn-2", "run-x", store.TurnClaimed, store.TurnStarting, T0),
		move("turn-1", "run-1", store.TurnStarting, store.TurnRunning, T0),
	}
	res, err := s.Commit(ctx, store.Batch{Moves: moves, Events: batch, Finishes: finishes})
	require.ErrorIs(t, err, store.ErrNotFound)
	assert.Contains(t, err.Error(), "missing", "the error names the Turn")
	out := res.Events
	require.Len(t, out, 4)
	require.Len(t, res.Finishes, 5)
	require.Len(t, res.Moves, 5)
	assert.NoError(t, res.Moves[0], "claimed in the batch, then started")
	assert.ErrorIs(t, res.Moves[1], store.ErrStale, "a claimed Turn is not claimed twice")
	assert.NoError(t, res.Moves[2])
	assert.ErrorIs(t, res.Moves[3], store.ErrStale, "a queued Turn does not start")
	assert.NoError(t, res.Moves[4])
	assert.NoError(t, res.Finishes[0])
	assert.ErrorIs(t, res.Finishes[1], store.ErrStale, "another Run's finish")
	assert.ErrorIs(t, res.Finishes[2], store.ErrStale, "a queued Turn is not finished")
	assert.ErrorIs(t, res.Finishes[3], store.ErrNotFound)
	assert.ErrorIs(t, res.Finishes[4], store.ErrInvalid, "an outcome with a state that is not terminal")
	done, err := s.GetTurn(ctx, "turn-0")
	require.NoError(t, err)
	assert.Equal(t, store.TurnCompleted, done.State)
	other, err := s.GetTurn(ctx, "turn-1")
	require.NoError(t, err)
	assert.Equal(t, store.TurnRunning, other.State, "started in the batch; its finish named another Run")
	ses, err := s.GetSession(ctx, other.SessionID)
	require.NoError(t, err)
	assert.True(t, ses.Started, "a start marks the Session started")
	assert.Equal(t, []int64{2, 1, 0, 3}, []int64{out[0].Seq, out[1].Seq, out[2].Seq, out[3].Seq})
	all, err := s.Events(ctx, "turn-0", 0, 0)
	require.NoError(t, err)
	require.Len(t, all, 3)
	assert.Equal(t, "done", all[2].Type)
	assert.JSONEq(t, `{"n":2}`, string(all[1].Payload))
	turn1, err := s.Events(ctx, "turn-1", 0, 0)
	require.NoError(t, err)
	assert.Len(t, turn1, 1)

	res, err = s.Commit(ctx, store.Batch{})
	require.NoError(t, err)
	assert.Empty(t, res.Events)
}

func testJournalConcurrent(t *testing.T, s store.Store) {
	seed(t, s, 1)
	const n = 32
	var mu sync.Mutex
	seen := map[int64]bool{}
	race(t, n, nil, func(i int) error {
		e, err := s.AppendEvent(ctx, store.Event{TurnID: "turn-0", RunID: "run", Type: "delta", Payload: raw(`{}`), At: T0})
		if err == nil {
			mu.Lock()
			seen[e.Seq] = true
			mu.Unlock()
		}
		return err
	})
	assert.Len(t, seen, n, "every append gets its own sequence number")
	for i := int64(1); i <= n; i++ {
		assert.True(t, seen[i], "seq %d", i)
	}
}

func testInteractions(t *testing.T, s store.Store) {
	seed(t, s, 1)
	i := store.Interaction{ID: "perm-1", TurnID: "turn-0", RunID: "run", Kind: "permission", Request: raw(`{"tool":"bash"}`), CreatedAt: T0}
	require.NoError(t, s.CreateInteraction(ctx, i))
	assert.ErrorIs(t, s.CreateInteraction(ctx, i), store.ErrConflict)
	got, err := s.GetInteraction(ctx, "perm-1")
	require.NoError(t, err)
	assert.Equal(t, store.InteractionPending, got.State)
	assert.JSONEq(t, `{"tool":"bash"}`, string(got.Request))

	require.NoError(t, s.TransitionInteraction(ctx, "perm-1", store.InteractionPending, store.InteractionAnswered, raw(`{"approved":true}`), T0.Add(time.Second)))
	assert.ErrorIs(t, s.TransitionInteraction(ctx, "perm-1", store.InteractionPending, store.InteractionAnswered, raw(`{}`), T0), store.ErrStale)
	require.NoError(t, s.TransitionInteraction(ctx, "perm-1", store.InteractionAnswered, store.InteractionApplied, nil, T0.Add(2*time.Second)))
	got, _ = s.GetInteraction(ctx, "perm-1")
	assert.Equal(t, store.InteractionApplied, got.State)
	assert.JSONEq(t, `{"approved":true}`, string(got.Answer), "a nil answer keeps the recorded one")
	assert.True(t, got.UpdatedAt.Equal(T0.Add(2*time.Second)))
	_, err = s.GetInteraction(ctx, "missing")
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.ErrorIs(t, s.TransitionInteraction(ctx, "missing", store.InteractionPending, store.InteractionAnswered, nil, T0), store.ErrNotFound)

	// A function call is found by its Turn and call_id; a call ID a later
	// Run of the Turn repeats finds the newest.
	_, err = s.FunctionCall(ctx, "turn-0", "call-1")
	assert.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, s.CreateInteraction(ctx, store.Interaction{ID: "fn-1", TurnID: "turn-0", RunID: "run", Kind: "function", CallID: "call-1", Request: raw(`{"call_id":"call-1"}`), CreatedAt: T0}))
	require.NoError(t, s.CreateInteraction(ctx, store.Interaction{ID: "fn-2", TurnID: "turn-0", RunID: "run-2", Kind: "function", CallID: "call-1", Request: raw(`{"call_id":"call-1"}`), CreatedAt: T0.Add(time.Second)}))
	got, err = s.FunctionCall(ctx, "turn-0", "call-1")
	require.NoError(t, err)
	assert.Equal(t, "fn-2", got.ID)
	assert.Equal(t, "call-1", got.CallID)
	assert.Equal(t, "run-2", got.RunID)
	_, err = s.FunctionCall(ctx, "other-turn", "call-1")
	assert.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.FunctionCall(ctx, "turn-0", "")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func testInteractionRace(t *testing.T, s store.Store) {
	seed(t, s, 1)
	require.NoError(t, s.CreateInteraction(ctx, store.Interaction{ID: "ask-1", TurnID: "turn-0", RunID: "run", Kind: "user_choice", Request: raw(`{}`), CreatedAt: T0}))
	wins := race(t, 16, store.ErrStale, func(i int) error {
		return s.TransitionInteraction(ctx, "ask-1", store.InteractionPending, store.InteractionAnswered, raw(fmt.Sprintf(`{"n":%d}`, i)), T0)
	})
	assert.Equal(t, 1, wins, "one answer wins")
}

func testWorkspaceWrites(t *testing.T, s store.Store) {
	seed(t, s, 0)
	w := store.WorkspaceWrite{MutationID: "m1", SessionID: "ses", Path: "a.txt", CreatedAt: T0, WriteDetail: store.WriteDetail{State: "beginning"}}
	require.NoError(t, s.ReserveWorkspaceWrite(ctx, w))
	assert.ErrorIs(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m2", SessionID: "ses", Path: "b", CreatedAt: T0, WriteDetail: store.WriteDetail{State: "beginning"}}), store.ErrConflict,
		"a successor mutation waits for exact settlement")
	assert.ErrorIs(t, s.SettleWorkspaceWrite(ctx, "m1", "", T0), store.ErrInvalid)
	require.NoError(t, s.SettleWorkspaceWrite(ctx, "m1", "completed", T0.Add(time.Second)))
	assert.ErrorIs(t, s.SettleWorkspaceWrite(ctx, "m1", "rejected", T0), store.ErrStale)
	got, err := s.GetWorkspaceWrite(ctx, "m1")
	require.NoError(t, err)
	assert.Equal(t, "completed", got.Outcome)
	assert.Equal(t, "a.txt", got.Path)
	assert.True(t, got.SettledAt.Equal(T0.Add(time.Second)))
	require.NoError(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m2", SessionID: "ses", Path: "b", CreatedAt: T0, WriteDetail: store.WriteDetail{State: "beginning"}}))
	assert.ErrorIs(t, s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "m1", SessionID: "other", CreatedAt: T0, WriteDetail: store.WriteDetail{State: "beginning"}}), store.ErrConflict)
	_, err = s.GetWorkspaceWrite(ctx, "missing")
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.ErrorIs(t, s.SettleWorkspaceWrite(ctx, "missing", "completed", T0), store.ErrNotFound)
}

func testWorkspaceWriteRace(t *testing.T, s store.Store) {
	seed(t, s, 0)
	wins := race(t, 16, store.ErrConflict, func(i int) error {
		return s.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: fmt.Sprintf("m%d", i), SessionID: "ses", Path: "p", CreatedAt: T0, WriteDetail: store.WriteDetail{State: "beginning"}})
	})
	assert.Equal(t, 1, wins, "one unsettled write per Session")
}

func testOwnerEpoch(t *testing.T, s store.Store) {
	_, err := s.GetDevice(ctx, "dev")
	assert.ErrorIs(t, err, store.ErrNotFound)
	e1, err := s.AcquireOwner(ctx, "dev", T0)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), e1)
	require.NoError(t, s.RecordDeclaration(ctx, "dev", e1, raw(`{"ts":1}`), T0.Add(time.Second)))
	d, err := s.GetDevice(ctx, "dev")
	require.NoError(t, err)
	assert.True(t, d.Connected)
	assert.JSONEq(t, `{"ts":1}`, string(d.Declaration))
	assert.True(t, d.LastSeen.Equal(T0.Add(time.Second)))

	e2, err := s.AcquireOwner(ctx, "dev", T0.Add(2*time.Second))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), e2)
	d, _ = s.GetDevice(ctx, "dev")
	assert.Nil(t, d.Declaration, "a new connection inherits no declaration")
	assert.ErrorIs(t, s.RecordDeclaration(ctx, "dev", e1, raw(`{}`), T0), store.ErrStale, "the old owner is fenced")
	assert.ErrorIs(t, s.ReleaseOwner(ctx, "dev", e1, T0), store.ErrStale, "the old owner cannot take the device offline")
	d, _ = s.GetDevice(ctx, "dev")
	assert.True(t, d.Connected)

	require.NoError(t, s.RecordDeclaration(ctx, "dev", e2, raw(`{"ts":2}`), T0))
	require.NoError(t, s.RecordDeclaration(ctx, "dev", e2, nil, T0), "an invalid heartbeat clears the snapshot")
	d, _ = s.GetDevice(ctx, "dev")
	assert.Nil(t, d.Declaration)
	require.NoError(t, s.ReleaseOwner(ctx, "dev", e2, T0.Add(3*time.Second)))
	d, _ = s.GetDevice(ctx, "dev")
	assert.False(t, d.Connected)
	assert.Equal(t, uint64(2), d.OwnerEpoch)
	assert.ErrorIs(t, s.RecordDeclaration(ctx, "dev", e2, raw(`{}`), T0), store.ErrStale, "a released owner records nothing")
	assert.ErrorIs(t, s.ReleaseOwner(ctx, "missing", 1, T0), store.ErrNotFound)
	assert.ErrorIs(t, s.RecordDeclaration(ctx, "missing", 1, nil, T0), store.ErrNotFound)

	_, err = s.AcquireOwner(ctx, "dev-b", T0)
	require.NoError(t, err)
	list, err := s.ListDevices(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "dev", list[0].ID)
	assert.Equal(t, "dev-b", list[1].ID)
}

func testOwnerEpochRace(t *testing.T, s store.Store) {
	const n = 16
	var mu sync.Mutex
	epochs := map[uint64]bool{}
	race(t, n, nil, func(int) error {
		e, err := s.AcquireOwner(ctx, "dev", T0)
		if err == nil {
			mu.Lock()
			epochs[e] = true
			mu.Unlock()
		}
		return err
	})
	assert.Len(t, epochs, n, "every connection gets its own epoch")
	d, err := s.GetDevice(ctx, "dev")
	require.NoError(t, err)
	assert.Equal(t, uint64(n), d.OwnerEpoch)
	assert.True(t, epochs[n])
}

func testClosed(t *testing.T, s store.Store) {
	require.NoError(t, s.Close())
	_, err := s.GetSession(ctx, "ses")
	assert.ErrorIs(t, err, store.ErrClosed)
	_, err = s.AcquireOwner(ctx, "dev", T0)
	assert.ErrorIs(t, err, store.ErrClosed)
}

// ClaimMove is the move that claims a queued Turn.
func ClaimMove(id string, c store.Claim) store.TurnMove {
	return store.TurnMove{TurnID: id, From: store.TurnQueued, To: store.TurnClaimed, Claim: &c, At: c.At}
}

// FinishMove is the move to a terminal state with its outcome.
func FinishMove(id, runID string, from, to store.TurnState, o store.Outcome, at time.Time) store.TurnMove {
	return store.TurnMove{TurnID: id, RunID: runID, From: from, To: to, Outcome: &o, At: at}
}

func move(id, runID string, from, to store.TurnState, at time.Time) store.TurnMove {
	return store.TurnMove{TurnID: id, RunID: runID, From: from, To: to, At: at}
}

// Start claims a queued Turn with c and moves it through starting to
// running, as Core's worker does: a fixture for tests of what follows.
func Start(s store.Store, id string, c store.Claim) error {
	for _, m := range []store.TurnMove{
		ClaimMove(id, c),
		move(id, c.RunID, store.TurnClaimed, store.TurnStarting, c.At),
		move(id, c.RunID, store.TurnStarting, store.TurnRunning, c.At),
	} {
		if err := s.MoveTurn(context.Background(), m); err != nil {
			return fmt.Errorf("storetest: moving Turn %s from %s to %s: %w", id, m.From, m.To, err)
		}
	}
	return nil
}

package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/fsm"
	fsmturn "github.com/agentwire/agentwire/fsm/turn"
	"github.com/agentwire/agentwire/internal/core/turn"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	ctx = context.Background()
	t0  = storetest.T0
)

// runID is the Run every fixture Turn is claimed under.
const runID = "run-1"

// claimOf is the placement the fixtures claim Turns with.
func claimOf(run string) store.Claim {
	return store.Claim{DeviceID: "dev", OwnerEpoch: 7, RunID: run, At: t0.Add(time.Second)}
}

// newStore is a memory store holding an Environment and a Session for
// the Turns of a test.
func newStore(t *testing.T) store.Store {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p", Type: "none", Binding: json.RawMessage(`{}`), CreatedAt: t0}))
	require.NoError(t, s.CreateSession(ctx, store.Session{ID: "ses", Project: "p", AgentKind: "codex", EnvironmentID: "env", Options: json.RawMessage(`{}`), CreatedAt: t0}))
	return s
}

// seedTurn creates Turn id and moves it, as Core's worker would, into
// state; it returns the Turn as the store holds it.
func seedTurn(t *testing.T, s store.Store, id string, state store.TurnState) store.Turn {
	t.Helper()
	// A Session of its own: a Session has one active Turn at a time.
	require.NoError(t, s.CreateSession(ctx, store.Session{ID: "ses-" + id, Project: "p", AgentKind: "codex", EnvironmentID: "env", Options: json.RawMessage(`{}`), CreatedAt: t0}))
	require.NoError(t, s.CreateTurn(ctx, store.Turn{ID: id, SessionID: "ses-" + id, Input: json.RawMessage(`[]`), CreatedAt: t0}))
	c := claimOf(runID)
	mv := func(from, to store.TurnState) store.TurnMove {
		return store.TurnMove{TurnID: id, RunID: runID, From: from, To: to, At: c.At}
	}
	var moves []store.TurnMove
	switch state {
	case store.TurnQueued:
	case store.TurnClaimed:
		moves = []store.TurnMove{storetest.ClaimMove(id, c)}
	case store.TurnCancelling:
		moves = []store.TurnMove{storetest.ClaimMove(id, c), mv(store.TurnClaimed, store.TurnCancelling)}
	case store.TurnStarting:
		moves = []store.TurnMove{storetest.ClaimMove(id, c), mv(store.TurnClaimed, store.TurnStarting)}
	case store.TurnRunning, store.TurnCompleted, store.TurnCancelled, store.TurnFailed:
		require.NoError(t, storetest.Start(s, id, c))
		if state != store.TurnRunning {
			o := store.Outcome{}
			if state == store.TurnFailed {
				o.Reason = store.ReasonEventStreamIncomplete
			}
			moves = []store.TurnMove{storetest.FinishMove(id, runID, store.TurnRunning, state, o, c.At)}
		}
	default:
		require.FailNow(t, "no fixture for state", "%q", state)
	}
	for _, m := range moves {
		require.NoError(t, s.MoveTurn(ctx, m), "fixture move %s -> %s", m.From, m.To)
	}
	tr, err := s.GetTurn(ctx, id)
	require.NoError(t, err)
	require.Equal(t, state, tr.State)
	return tr
}

// applyMove checks that a move Fire returned is one the table allows and
// that the store, holding the Turn in its From, accepts it; it returns the
// Turn after the move.
func applyMove(t *testing.T, s store.Store, m store.TurnMove) store.Turn {
	t.Helper()
	require.NoError(t, m.Validate(), "the move %s -> %s", m.From, m.To)
	require.NoError(t, s.MoveTurn(ctx, m), "the store refuses the move %s -> %s", m.From, m.To)
	tr, err := s.GetTurn(ctx, m.TurnID)
	require.NoError(t, err)
	require.Equal(t, m.To, tr.State)
	assert.ErrorIs(t, s.MoveTurn(ctx, m), store.ErrStale, "the move is conditional on From")
	return tr
}

var states = []store.TurnState{
	store.TurnQueued, store.TurnClaimed, store.TurnCancelling, store.TurnStarting,
	store.TurnRunning, store.TurnCompleted, store.TurnCancelled, store.TurnFailed,
}

// TestFire runs the interesting cells of the turn table through Fire and
// writes every move it returns to a store holding the Turn in From.
func TestFire(t *testing.T) {
	at := t0.Add(time.Minute)
	notBefore := t0.Add(time.Hour)
	claim := claimOf("run-2")
	claim.At = at
	engine := store.Outcome{Reason: "ignored", EngineErrorCode: "rate_limited", EngineHTTPStatus: 429, Evidence: json.RawMessage(`{"x":1}`)}

	type check func(t *testing.T, st turn.Step, after store.Turn)
	failedWith := func(reason string) check {
		return func(t *testing.T, st turn.Step, after store.Turn) {
			require.NotNil(t, st.Move.Outcome)
			assert.Equal(t, reason, st.Move.Outcome.Reason)
			assert.Equal(t, reason, after.Outcome.Reason)
			assert.Equal(t, "failed", after.Status().State)
			assert.Equal(t, reason, after.Status().Reason)
			assert.False(t, st.ReleaseAdmission)
			assert.False(t, st.SendCancel)
		}
	}
	noReason := func(t *testing.T, st turn.Step, after store.Turn) {
		require.NotNil(t, st.Move.Outcome)
		assert.Empty(t, st.Move.Outcome.Reason)
		assert.Empty(t, after.Outcome.Reason)
	}

	tests := []struct {
		name     string
		from     store.TurnState
		event    turn.Event
		args     turn.Args
		to       store.TurnState // "" for no move
		rejected bool
		check    check
	}{
		{name: "claim from queued", from: store.TurnQueued, event: turn.Claim, args: turn.Args{Claim: claim, At: at}, to: store.TurnClaimed,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				require.NotNil(t, st.Move.Claim)
				assert.Equal(t, claim, *st.Move.Claim)
				assert.Empty(t, st.Move.RunID, "a queued Turn has no Run")
				assert.Nil(t, st.Move.Outcome)
				assert.Equal(t, "run-2", after.RunID)
				assert.Equal(t, "dev", after.DeviceID)
				assert.Equal(t, uint64(7), after.OwnerEpoch)
				assert.Equal(t, 1, after.Attempts)
			}},
		{name: "requeue from claimed", from: store.TurnClaimed, event: turn.Requeue, args: turn.Args{NotBefore: notBefore, At: at}, to: store.TurnQueued,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				assert.Equal(t, notBefore, st.Move.NotBefore)
				assert.Nil(t, st.Move.Claim)
				assert.Nil(t, st.Move.Outcome)
				assert.Empty(t, after.RunID, "the placement is cleared")
				assert.True(t, after.NotBefore.Equal(notBefore))
			}},
		{name: "requeue from cancelling", from: store.TurnCancelling, event: turn.Requeue, args: turn.Args{NotBefore: notBefore, Outcome: engine, At: at}, to: store.TurnCancelled,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				noReason(t, st, after)
				assert.True(t, st.Move.NotBefore.IsZero(), "a cancelled Turn is not retried")
				assert.Equal(t, "cancelled", after.Status().State)
			}},
		{name: "start from claimed", from: store.TurnClaimed, event: turn.Start, args: turn.Args{At: at}, to: store.TurnStarting,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				assert.Nil(t, st.Move.Outcome)
				assert.False(t, st.ReleaseAdmission)
			}},
		{name: "start from cancelling", from: store.TurnCancelling, event: turn.Start, rejected: true},
		{name: "start_sent from starting", from: store.TurnStarting, event: turn.StartSent, args: turn.Args{At: at}, to: store.TurnRunning},
		{name: "cancel from queued", from: store.TurnQueued, event: turn.Cancel, args: turn.Args{At: at}, to: store.TurnCancelled,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				noReason(t, st, after)
				assert.False(t, st.ReleaseAdmission, "no admission exists")
				assert.False(t, st.SendCancel)
			}},
		{name: "cancel from claimed", from: store.TurnClaimed, event: turn.Cancel, args: turn.Args{At: at}, to: store.TurnCancelling,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				assert.True(t, st.ReleaseAdmission)
				assert.False(t, st.SendCancel)
				assert.Nil(t, st.Move.Outcome)
			}},
		{name: "cancel from cancelling", from: store.TurnCancelling, event: turn.Cancel, args: turn.Args{At: at},
			check: func(t *testing.T, st turn.Step, _ store.Turn) {
				assert.False(t, st.ReleaseAdmission, "the cancellation is under way")
			}},
		{name: "cancel from running", from: store.TurnRunning, event: turn.Cancel, args: turn.Args{At: at},
			check: func(t *testing.T, st turn.Step, _ store.Turn) {
				assert.True(t, st.SendCancel)
				assert.False(t, st.ReleaseAdmission)
			}},
		{name: "cancel from starting", from: store.TurnStarting, event: turn.Cancel, rejected: true},
		{name: "cancel from completed", from: store.TurnCompleted, event: turn.Cancel, rejected: true},
		{name: "released from cancelling", from: store.TurnCancelling, event: turn.Released, args: turn.Args{At: at}, to: store.TurnCancelled, check: noReason},
		{name: "engine_failed from running", from: store.TurnRunning, event: turn.EngineFailed, args: turn.Args{Outcome: engine, At: at}, to: store.TurnFailed,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				failedWith(store.ReasonEngineFailed)(t, st, after)
				assert.Equal(t, "rate_limited", st.Move.Outcome.EngineErrorCode)
				assert.Equal(t, 429, st.Move.Outcome.EngineHTTPStatus)
				assert.JSONEq(t, `{"x":1}`, string(st.Move.Outcome.Evidence))
				assert.Equal(t, "rate_limited", after.Status().EngineErrorCode)
				assert.Equal(t, 429, after.Status().EngineHTTPStatus)
			}},
		{name: "event_stream_incomplete from running", from: store.TurnRunning, event: turn.EventStreamIncomplete, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("event_stream_incomplete")},
		{name: "cancel_unconfirmed from running", from: store.TurnRunning, event: turn.CancelUnconfirmed, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("cancel_unconfirmed")},
		{name: "start_failed from running", from: store.TurnRunning, event: turn.StartFailed, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("start_failed")},
		{name: "delivery_unknown from running", from: store.TurnRunning, event: turn.DeliveryUnknown, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("delivery_unknown")},
		{name: "cancel_refused from running", from: store.TurnRunning, event: turn.CancelRefused, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("cancel_refused")},
		{name: "preparation_failed from claimed", from: store.TurnClaimed, event: turn.PreparationFailed, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("preparation_failed")},
		{name: "start_failed from starting", from: store.TurnStarting, event: turn.StartFailed, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("start_failed")},
		{name: "run_completed from running", from: store.TurnRunning, event: turn.RunCompleted, args: turn.Args{Outcome: store.Outcome{Reason: "x"}, At: at}, to: store.TurnCompleted,
			check: func(t *testing.T, st turn.Step, after store.Turn) {
				noReason(t, st, after)
				assert.Equal(t, "completed", after.Status().State)
			}},
		{name: "run_cancelled from running", from: store.TurnRunning, event: turn.RunCancelled, args: turn.Args{At: at}, to: store.TurnCancelled, check: noReason},
		{name: "late run_cancelled after failed", from: store.TurnFailed, event: turn.RunCancelled, args: turn.Args{At: at}},
		{name: "late run_completed after cancelled", from: store.TurnCancelled, event: turn.RunCompleted, args: turn.Args{At: at}},
		{name: "late engine_failed after completed", from: store.TurnCompleted, event: turn.EngineFailed, args: turn.Args{Outcome: engine, At: at}},
		{name: "restart from failed", from: store.TurnFailed, event: turn.Restart, rejected: true},
		{name: "restart from queued", from: store.TurnQueued, event: turn.Restart, args: turn.Args{At: at}},
		{name: "restart from claimed", from: store.TurnClaimed, event: turn.Restart, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("delivery_unknown")},
		{name: "restart from starting", from: store.TurnStarting, event: turn.Restart, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("delivery_unknown")},
		{name: "restart from running", from: store.TurnRunning, event: turn.Restart, args: turn.Args{At: at}, to: store.TurnFailed, check: failedWith("event_stream_incomplete")},
		{name: "restart from running, cancel journaled", from: store.TurnRunning, event: turn.Restart, args: turn.Args{CancelJournaled: true, At: at}, to: store.TurnFailed, check: failedWith("cancel_unconfirmed")},
		{name: "restart from cancelling", from: store.TurnCancelling, event: turn.Restart, args: turn.Args{At: at}, to: store.TurnCancelled, check: noReason},
		{name: "claim from claimed", from: store.TurnClaimed, event: turn.Claim, args: turn.Args{Claim: claim}, rejected: true},
		{name: "requeue from queued", from: store.TurnQueued, event: turn.Requeue, rejected: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			before := seedTurn(t, s, "turn", tc.from)
			r := turn.RefOf(before)
			st, err := turn.Fire(r, tc.event, tc.args)
			if tc.rejected {
				require.ErrorIs(t, err, turn.ErrRejected)
				assert.ErrorIs(t, err, fsm.ErrRejected, "the table's TransitionError is kept")
				assert.Equal(t, turn.Step{}, st)
				return
			}
			require.NoError(t, err)
			if tc.to == "" {
				assert.False(t, st.Moved())
				assert.Equal(t, store.TurnMove{}, st.Move, "no write for a Turn that stays")
				after, err := s.GetTurn(ctx, "turn")
				require.NoError(t, err)
				assert.Equal(t, before, after)
				if tc.check != nil {
					tc.check(t, st, after)
				}
				return
			}
			require.True(t, st.Moved())
			assert.Equal(t, "turn", st.Move.TurnID)
			assert.Equal(t, r.RunID, st.Move.RunID)
			assert.Equal(t, tc.from, st.Move.From)
			assert.Equal(t, tc.to, st.Move.To)
			assert.Equal(t, tc.args.At, st.Move.At)
			assert.Equal(t, tc.to.Terminal(), st.Move.Outcome != nil, "an outcome goes with a terminal state, and only with one")
			after := applyMove(t, s, st.Move)
			if tc.check != nil {
				tc.check(t, st, after)
			}
		})
	}
}

// TestFireEveryCell fires every event in every state (with and without
// the cancel_journaled guard): a rejection is ErrRejected, as the table's
// Transition says, and every move is one the table allows, that the store
// accepts from the Turn's stored state, with the outcome the target state
// needs.
func TestFireEveryCell(t *testing.T) {
	for _, from := range states {
		for e := turn.Event(1); e.Valid(); e++ {
			for _, journaled := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/journaled=%v", from, e, journaled), func(t *testing.T) {
					s := newStore(t)
					before := seedTurn(t, s, "turn", from)
					a := turn.Args{CancelJournaled: journaled, Claim: claimOf("run-2"), NotBefore: t0.Add(time.Hour), At: t0.Add(2 * time.Second)}
					st, err := turn.Fire(turn.RefOf(before), e, a)

					fromID, perr := fsmturn.ParseState(string(from))
					require.NoError(t, perr)
					var held fsmturn.GuardSet
					if journaled {
						held = held.With(fsmturn.GuardCancelJournaled)
					}
					want, terr := fsmturn.Transition(fromID, e, held)
					if terr != nil {
						require.ErrorIs(t, terr, fsm.ErrRejected)
						require.ErrorIs(t, err, turn.ErrRejected)
						assert.Equal(t, turn.Step{}, st)
						return
					}
					require.NoError(t, err)
					switch want.Disposition() {
					case fsm.Moved:
						require.True(t, st.Moved())
						assert.Equal(t, want.To().String(), string(st.Move.To))
					case fsm.Ignored:
						assert.False(t, st.Moved())
						assert.Equal(t, turn.Step{}, st)
					}
					if !st.Moved() {
						assert.Equal(t, store.TurnMove{}, st.Move)
						after, err := s.GetTurn(ctx, "turn")
						require.NoError(t, err)
						assert.Equal(t, before, after)
						return
					}
					after := applyMove(t, s, st.Move)
					if after.State == store.TurnFailed {
						assert.Contains(t, []string{"delivery_unknown", "event_stream_incomplete", "cancel_unconfirmed", "engine_failed", "cancel_refused", "start_failed", "preparation_failed", "invalid_configuration", "initialization_failed", "unplaceable", "journal_limit", "persistence_failed"}, after.Outcome.Reason)
						if e != turn.Restart {
							assert.Equal(t, e.String(), after.Outcome.Reason, "the event that failed the Turn names the reason")
						}
					} else {
						assert.Empty(t, after.Outcome.Reason)
					}
				})
			}
		}
	}
}

// TestFireInvalid: a state or event outside the table is an error, not a
// rejection by the table.
func TestFireInvalid(t *testing.T) {
	_, err := turn.Fire(turn.Ref{ID: "turn", State: "paused"}, turn.Cancel, turn.Args{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, turn.ErrRejected)

	_, err = turn.Fire(turn.Ref{ID: "turn", State: store.TurnQueued}, turn.Event(0), turn.Args{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, turn.ErrRejected)

	_, err = turn.Fire(turn.Ref{ID: "turn", State: store.TurnQueued}, turn.Restart+1, turn.Args{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, turn.ErrRejected)
}

// TestRefOf keeps a stored Turn's identity, Run and state.
func TestRefOf(t *testing.T) {
	s := newStore(t)
	tr := seedTurn(t, s, "turn", store.TurnStarting)
	assert.Equal(t, turn.Ref{ID: "turn", RunID: runID, State: store.TurnStarting}, turn.RefOf(tr))
}

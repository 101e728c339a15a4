// Package turn drives Core's turn machine (spec/turn.yaml, generated as
// package fsm/turn) over the store: the worker, the API, a Run's hooks and
// the reconciler fire its events, the table decides, and what a rule does
// becomes one store.TurnMove, a conditional write from the state the Turn
// was in. No code outside the table decides a Turn's next state.
//
// Fire is the pure step, for a Turn read from the store. An Instance is the
// machine of a Turn this process's worker claimed: the API's cancellation
// and the worker's start race on it, and its moves reach the store in the
// order they were made.
package turn

import (
	"errors"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	fsmturn "github.com/agentwire/agentwire/fsm/turn"
)

// Event is an event of the turn machine.
type Event = fsmturn.Event

// The events, as the table names them.
const (
	Claim                 = fsmturn.EventClaim
	Requeue               = fsmturn.EventRequeue
	Start                 = fsmturn.EventStart
	StartSent             = fsmturn.EventStartSent
	Cancel                = fsmturn.EventCancel
	Released              = fsmturn.EventReleased
	RunCompleted          = fsmturn.EventRunCompleted
	RunCancelled          = fsmturn.EventRunCancelled
	EngineFailed          = fsmturn.EventEngineFailed
	CancelRefused         = fsmturn.EventCancelRefused
	StartFailed           = fsmturn.EventStartFailed
	PreparationFailed     = fsmturn.EventPreparationFailed
	InvalidConfiguration  = fsmturn.EventInvalidConfiguration
	InitializationFailed  = fsmturn.EventInitializationFailed
	DeliveryUnknown       = fsmturn.EventDeliveryUnknown
	EventStreamIncomplete = fsmturn.EventEventStreamIncomplete
	CancelUnconfirmed     = fsmturn.EventCancelUnconfirmed
	JournalLimit          = fsmturn.EventJournalLimit
	Unplaceable           = fsmturn.EventUnplaceable
	PersistenceFailed     = fsmturn.EventPersistenceFailed
	Restart               = fsmturn.EventRestart
)

// Ref is what a step needs of a Turn: its identity, the Run it is claimed
// under ("" while queued) and its state.
type Ref struct {
	ID, RunID string
	State     store.TurnState
}

// RefOf is the Ref of a stored Turn.
func RefOf(t store.Turn) Ref { return Ref{ID: t.ID, RunID: t.RunID, State: t.State} }

// Args is what an event carries.
type Args struct {
	// Claim is the placement of a claim.
	Claim store.Claim
	// NotBefore is when a requeued Turn is due again.
	NotBefore time.Time
	// Outcome is the native evidence of an event that finishes the Turn
	// (engine code and status, evidence); its Reason is set from the
	// event that failed the Turn.
	Outcome store.Outcome
	// CancelJournaled holds the cancel_journaled guard (restart).
	CancelJournaled bool
	At              time.Time
}

// Step is what one event did to a Turn.
type Step struct {
	// Move is the store write of the step; its To is "" when the Turn
	// stayed where it was (an ignored event, or a cancellation sent to a
	// running Run).
	Move store.TurnMove
	// ReleaseAdmission: abandon the admission instead of starting it.
	ReleaseAdmission bool
	// SendCancel: send prompt_cancel to the running Run.
	SendCancel bool
}

// Moved reports whether the step changed the Turn's state.
func (s Step) Moved() bool { return s.Move.To != "" }

// ErrRejected wraps the table's refusal of an event in the Turn's state.
var ErrRejected = errors.New("turn: the event is refused in this state")

// Fire runs e on a Turn in the state r names and returns what the table
// did. It changes nothing itself; the caller writes Step.Move (a
// conditional move, so a Turn that moved meanwhile is ErrStale) and
// performs the other effects.
func Fire(r Ref, e Event, a Args) (Step, error) {
	from, err := fsmturn.ParseState(string(r.State))
	if err != nil {
		return Step{}, err
	}
	f := &firing{args: a}
	f.step.Move = store.TurnMove{TurnID: r.ID, RunID: r.RunID, From: r.State, At: a.At}
	m, err := fsmturn.NewCore[*firing](hooks{}, nil)
	if err != nil {
		return Step{}, err
	}
	if _, err := m.Restore(fsm.StateID(from)); err != nil {
		return Step{}, err
	}
	if err := m.Fire(fsm.EventID(e), f); err != nil {
		var te *fsm.TransitionError
		if errors.As(err, &te) {
			return Step{}, errors.Join(ErrRejected, err)
		}
		return Step{}, err
	}
	if to := fsmturn.State(m.State()); to != from {
		f.step.Move.To = store.TurnState(to.String())
	} else {
		f.step.Move = store.TurnMove{}
	}
	return f.step, nil
}

// firing is the argument the machine's hooks fill in.
type firing struct {
	args Args
	step Step
}

// hooks turn the table's effects into the parts of the move.
type hooks struct{}

var _ fsmturn.CoreHooks[*firing] = hooks{}

func (hooks) GuardCancelJournaled(f *fsm.Firing[*firing]) bool { return f.Arg.args.CancelJournaled }

func (hooks) DoPlace(f *fsm.Firing[*firing]) error {
	c := f.Arg.args.Claim
	f.Arg.step.Move.Claim = &c
	return nil
}

func (hooks) DoRetryLater(f *fsm.Firing[*firing]) error {
	f.Arg.step.Move.NotBefore = f.Arg.args.NotBefore
	return nil
}

func (hooks) DoReleaseAdmission(f *fsm.Firing[*firing]) error {
	f.Arg.step.ReleaseAdmission = true
	return nil
}

func (hooks) DoSendCancel(f *fsm.Firing[*firing]) error {
	f.Arg.step.SendCancel = true
	return nil
}

// DoRecordOutcome: a failed Turn's public reason is the name of the
// event that failed it (engine_failed, delivery_unknown, …); a completed
// or cancelled Turn has none.
func (hooks) DoRecordOutcome(f *fsm.Firing[*firing]) error {
	o := f.Arg.args.Outcome
	o.Reason = ""
	if fsmturn.State(f.To) == fsmturn.StateFailed {
		o.Reason = fsmturn.Event(f.Event).String()
	}
	f.Arg.step.Move.Outcome = &o
	return nil
}

package turn

import "github.com/agentwire/agentwire/fsm"

// The turn machine follows its Turn's preparation and Run. These mappings
// say which turn event an end of theirs fires, once, for every user: the
// gateway's hooks and the model checker, which explores every order the
// composition can produce them in against the turn table.

// RunEnd is the turn event that Core's action of the run machine fires,
// given the outcome the run table gives the state the step moved to; ok is
// false when the Turn stays where it is (the Run goes on, or a receipt
// still owns the outcome).
func RunEnd(action string, outcome fsm.Outcome) (e Event, ok bool) {
	switch action {
	case "close_stream":
		// done closing a clean stream, or one with error frames (a
		// confirmed engine failure, daemon-protocol.txt:106, 156); a
		// cancelled stream waits for its receipt.
		switch outcome {
		case fsm.OutcomeSuccess:
			return RunCompleted, true
		case fsm.OutcomeFailure:
			return EngineFailed, true
		}
	case "apply_cancel_receipt":
		if outcome == fsm.OutcomeSuccess {
			return RunCancelled, true
		}
		return CancelRefused, true
	case "record_error":
		// The only terminal state record_error leads to is the failed start.
		if outcome == fsm.OutcomeFailure {
			return StartFailed, true
		}
	case "mark_event_stream_incomplete":
		if outcome != fsm.OutcomeNone { // cancel_drained: the receipt still decides
			return EventStreamIncomplete, true
		}
	case "mark_cancel_unconfirmed":
		return CancelUnconfirmed, true
	case "journal_limit":
		// the gateway's mark_event_stream_incomplete for a Run it stopped
		// observing at the Turn's journal limit.
		if outcome != fsm.OutcomeNone {
			return JournalLimit, true
		}
	}
	return 0, false
}

// PreparationEnd is the turn event an admission that ended before its
// start fires, by the outcome of the state it ended in: a failure fails
// the Turn (but a preparation_capacity refusal already requeued it through
// the preparation's leave_turn_unclaimed), an unknown end (the connection
// went after execution_prepare) leaves its delivery unknown. A started or
// released admission fires nothing: the Run, or the release that ended a
// cancelled Turn, did.
func PreparationEnd(outcome fsm.Outcome, capacityRefusal bool) (e Event, ok bool) {
	switch {
	case outcome == fsm.OutcomeFailure && !capacityRefusal:
		return PreparationFailed, true
	case outcome == fsm.OutcomeUnknown:
		return DeliveryUnknown, true
	}
	return 0, false
}

package gateway

import (
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/run"
	"github.com/agentwire/agentwire/internal/peer"
)

// DefaultJournalLimit is the journal bytes a Turn keeps unless Core is
// told otherwise (docs/limits.md).
const DefaultJournalLimit = 64 << 20

// ReasonJournalLimit is the public reason of a Turn whose journal reached
// its limit (spec/turn.yaml, journal_limit).
const ReasonJournalLimit = "journal_limit"

// actionJournalLimit is how DoMarkEventStreamIncomplete tells turn.RunEnd
// that the observation ended at the journal limit.
const actionJournalLimit = "journal_limit"

// overLimit reports whether journaling n more bytes of r's frames would
// pass the Turn's journal limit; the first time, it journals why the
// journal ends (the observation {"reason":"journal_limit"}, whatever its
// size) and closes r's subscription, which fails the Turn journal_limit
// once the Run machine has settled it.
//
// decision: the limit ends Core's observation of the Run exactly as a
// subscriber overflow does (daemon-protocol.txt:151): the connection
// stays up, no error or done is invented, later frames of the Run are
// ignored, and every event journaled before stays. Core does not cancel
// the native work: a cancellation's receipt would own the Turn's outcome
// (daemon-protocol.txt:133), and the limit is Core's reason, not the
// Harness's. The Turn counts the bytes of its current Run's frames, which
// is all a Turn journals in bulk (a requeued Turn never started one).
func (c *conn) overLimit(r *runRec, n int64) bool {
	limit := c.g.cfg.JournalLimit
	if r.limited {
		return true
	}
	if limit <= 0 || r.overflowed || r.journaled+n <= limit {
		r.journaled += n
		return false
	}
	r.limited, r.overflowed = true, true
	c.log.Warn("gateway: turn journal limit: the Run's frames are no longer journaled", "run_id", r.runID, "turn_id", r.turnID,
		"journal_bytes", r.journaled, "limit_bytes", limit)
	_ = c.journalLimitObservation(r, limit)
	_ = c.d.Local(peer.Key{Machine: run.Table.Name, ID: r.runID}, fsm.EventID(run.EventSubscriptionOverflow), nil)
	return true
}

// journalLimitObservation is the stream's last event before the status:
// why the journal ends here.
func (c *conn) journalLimitObservation(r *runRec, limit int64) error {
	return execHooks{c: c}.journal(r, "observation", map[string]any{"reason": ReasonJournalLimit, "limit_bytes": limit})
}

package store

import "time"

// Suspension is one persisted suspension attempt of an Environment
// (daemon-protocol.txt:78: the suspension ID fences the attempt). Its ID
// is the wire suspend_id. State is the name of the suspension machine's
// state the attempt was last seen in (fsm/suspension), or NotSent;
// Settled is true once that state is terminal. The store never interprets
// the state names: the gateway reads them off the machine's table.
type Suspension struct {
	ID            string
	EnvironmentID string
	// DeviceID is the Runtime device the attempt was sent to; its resume
	// goes to that device, on whichever connection it has then.
	DeviceID string
	// OwnerEpoch is the owner epoch of the device connection that carries
	// the attempt: the one it was sent on, or the one that adopted it
	// since (AdoptSuspension); 0 in a record written before it was kept.
	// When that epoch's lease is reaped, the reaper reconciles the attempt.
	OwnerEpoch uint64
	State      string
	Settled    bool
	ErrorCode  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Initialization is the last initialization outcome Core saw for an
// Environment on one device connection (runtime_prepare,
// daemon-protocol.txt:104).
type Initialization struct {
	EnvironmentID string
	DeviceID      string
	OwnerEpoch    uint64
	// Outcome is "completed" when every declared step completed; otherwise
	// the transfer machine's terminal state that ended it (rejected,
	// failed, expired, unknown, aborted) or "not_sent".
	Outcome string
	// Step names the declared step that ended it: "configure" or a path.
	Step      string
	ErrorCode string
	// ExitCode is a failed command's exit code; -1 when absent.
	ExitCode int
	At       time.Time
}

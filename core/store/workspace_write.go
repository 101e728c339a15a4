package store

import (
	"context"
	"time"
)

// WorkspaceWrites are the store's operations on workspace-write
// reservations beyond reserving and reading one (daemon-protocol.txt:185).
// A reservation holds its Session's mutation owner while Outcome is
// empty: in flight, or with an unknown outcome. Every move is one
// conditional write on the expected state.
type WorkspaceWrites interface {
	// TransitionWorkspaceWrite applies m, a Move of the workspace_write
	// machine keyed by the mutation ID (ErrInvalid when m.Validate refuses
	// it). With release, the owner is released and Outcome becomes m.To.
	// code and reason are kept when non-empty. ErrStale when the write is
	// released or not in m.From.
	TransitionWorkspaceWrite(ctx context.Context, m Move, release bool, code, reason string) error
	// ResolveWorkspaceWrite records an operator's resolution of a write
	// whose outcome is unknown (State WriteStateUnknown, owner held) and
	// releases the owner with Outcome WriteResolved; ErrStale otherwise.
	ResolveWorkspaceWrite(ctx context.Context, mutationID, resolution, note string, at time.Time) error
	// OpenWorkspaceWrites lists every write that holds its owner, oldest
	// first.
	OpenWorkspaceWrites(ctx context.Context) ([]WorkspaceWrite, error)
	// UnsettledWorkspaceWrite returns the write holding the Session's
	// mutation owner; ErrNotFound when none does.
	UnsettledWorkspaceWrite(ctx context.Context, sessionID string) (WorkspaceWrite, error)
}

// WriteDetail is what a reservation keeps besides its identity.
type WriteDetail struct {
	// State is the workspace_write machine's state the write was last
	// recorded in (fsm/workspace_write); the store never interprets it
	// except WriteStateUnknown for ResolveWorkspaceWrite.
	State    string
	DeviceID string
	// OwnerEpoch is the owner epoch of the device connection the write
	// was reserved for (0 in a record written before it was kept): when
	// that epoch's lease is reaped, the reaper settles the write
	// (docs/deployment.md).
	OwnerEpoch uint64
	SizeBytes  int64
	SHA256     string
	ErrorCode  string
	Reason     string
	// Resolution and Note are an operator's answer to an unknown write.
	Resolution string
	Note       string
}

// WriteStateUnknown is the machine state of a write whose receipt is
// missing or ambiguous; only an operator's resolution releases it.
const WriteStateUnknown = "unknown"

// WriteResolved is the Outcome of a write released by an operator.
const WriteResolved = "resolved"

// Resolutions an operator may record for an unknown write.
const (
	ResolutionApplied    = "applied"     // the operator checked: the file was written
	ResolutionNotApplied = "not_applied" // the operator checked: the workspace is unchanged
)

package store

import "context"

// Usage is what a project holds in the store, for its quotas
// (docs/limits.md).
type Usage struct {
	// Sessions is how many Sessions the project has.
	Sessions int
	// QueuedTurns is how many of its Turns are queued (not yet claimed).
	QueuedTurns int
	// Bytes estimates the bytes the project's records hold: the Sessions'
	// options, the Turns' initial input, the active inputs and the
	// journal's event payloads. Identifiers, timestamps and the store's
	// own overhead are left out; these four are what a caller controls.
	Bytes int64
}

// Usages reads a project's Usage.
type Usages interface {
	ProjectUsage(ctx context.Context, project string) (Usage, error)
}

// Package conn is what every lifecycle module of the Runtime's execution
// Session uses of its connection: goroutines the Session waits for, its
// loop, the context of its native work and its logger. Each module's Host
// embeds Loop and adds what that lifecycle alone needs.
package conn

import (
	"context"
	"log/slog"

	"github.com/agentwire/agentwire/internal/peer"
)

// Loop is the connection as a lifecycle module drives work off and back
// onto its loop.
type Loop interface {
	// Go runs fn on a goroutine the connection waits for.
	Go(fn func())
	// Post runs fn on the connection's loop; false when the connection is
	// gone and fn did not run.
	Post(fn func(d *peer.Driver)) bool
	// Context ends with the connection's native work.
	Context() context.Context
	Logger() *slog.Logger
}

package daemon

import "github.com/agentwire/agentwire/internal/peer"

// WithOnConnected returns cfg with a hook called with each new
// connection's driver, for this package's tests.
func WithOnConnected(cfg Config, f func(*peer.Conn)) Config {
	cfg.onConnected = f
	return cfg
}

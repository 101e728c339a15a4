// Package core is agentwire's Core as a library: durable Sessions and
// Turns, the scheduler that places them on Runtime daemons, the Runtime
// WebSocket endpoint and the public HTTP API, in one http.Handler an
// embedder serves from its own server.
//
// What an embedder chooses:
//
//   - the store (Config.Store): core/store/sqlite for one machine,
//     core/store/memory for tests, or its own implementation of
//     store.Store proved by storetest.Run;
//   - how callers are authenticated (Config.Auth): agentwire's own keys
//     (credential.Issuer over a store.Credentials, the default) or its
//     own credential.Authenticator;
//   - how Turns are placed among eligible devices (Config.Placement):
//     placement.ByDeviceID by default;
//   - where the routes live: Core is an http.Handler; Register puts its
//     routes on the embedder's http.ServeMux instead, and http.StripPrefix
//     mounts it under a path (Config.PublicURL then names that path).
//
// Runtime WebSockets are accepted by whichever http.Server serves the
// request (the upgrade hijacks the connection), so TLS, listeners and
// server timeouts are the embedder's. Close ends Core's event streams and
// Runtime connections before that server's Shutdown.
package core

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/placement"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/core/console"
	"github.com/agentwire/agentwire/internal/core/server"
	"github.com/agentwire/agentwire/internal/core/vault"
)

// Config is what a Core is built from. Store is required; so is a way to
// authenticate: Auth, or Credentials, or a Store that keeps credentials
// too (the memory and SQLite stores do).
type Config struct {
	// Store keeps the protocol's durable state.
	Store store.Store
	// Auth authenticates Runtimes and API callers (nil: agentwire's own
	// credentials, credential.Issuer over Credentials).
	Auth credential.Authenticator
	// Credentials keeps the hashes of the credentials Core issues (nil:
	// Store, when it implements store.Credentials). Unused with Auth.
	Credentials store.Credentials
	// Placement orders the devices eligible for a Turn (nil:
	// placement.ByDeviceID).
	Placement placement.Policy
	// PublicURL is the URL Runtimes reach this Core at, with the path
	// prefix Core is mounted under, if any; the bootstrap answer names
	// the WebSocket URL from it. Without it, bootstrap answers 503.
	PublicURL string
	// Logger receives Core's logs (nil: slog.Default()).
	Logger *slog.Logger
	// VaultKey seals the Vault's secrets (32 bytes). Nil uses a key that
	// lives as long as the process: right for a store in memory, wrong for
	// a durable one, whose secrets would not open after a restart.
	VaultKey []byte
	// Quotas bound each project (nil: DefaultQuotas()).
	Quotas *Quotas
	// PlacementTimeout is how long a queued Turn waits for a device
	// before it fails unplaceable (0: 5 minutes).
	PlacementTimeout time.Duration
	// StallTimeout fails a running Turn that sends nothing for this long
	// (0: 10 minutes; negative: never).
	StallTimeout time.Duration
	// UploadDir holds upload bodies while they arrive (""; the system's
	// temporary directory).
	UploadDir string
	// Transcript, when set, receives every Runtime frame Core reads or
	// writes, one JSON line each (for debugging and the chaos checker).
	Transcript io.Writer
	// Console serves the web console at /console/ as well (docs/console.md):
	// pages opened by a login that exchanges a project API key for a
	// session cookie. Off unless set, so an embedder opts into a new
	// surface; `agentwire core serve` turns it on.
	Console bool
}

// Quotas bound what each project may hold and how fast it may ask; a 429
// names the quota a request met (docs/limits.md). A zero field bounds
// nothing.
type Quotas struct {
	// Sessions is how many Sessions a project may have.
	Sessions int
	// QueuedTurns is how many of a project's Turns may wait queued.
	QueuedTurns int
	// StoreBytes bounds a project's stored bytes (options, inputs, journal).
	StoreBytes int64
	// Rate and Burst are each project's request rate: Burst at once, then
	// Rate a second.
	Rate  float64
	Burst int
}

// DefaultQuotas are the bounds `agentwire core serve` applies.
func DefaultQuotas() Quotas {
	q := api.DefaultQuotas()
	return Quotas{Sessions: q.Sessions, QueuedTurns: q.QueuedTurns, StoreBytes: q.StoreBytes, Rate: q.Rate, Burst: q.Burst}
}

// Core is one Core: an http.Handler serving the Runtime endpoint and the
// public API.
type Core struct {
	srv     *server.Server
	console *console.Console // nil unless Config.Console
}

// New builds a Core and starts its scheduler. The error names the field
// of cfg at fault.
func New(cfg Config) (*Core, error) {
	if cfg.Store == nil {
		return nil, errors.New("core: Config.Store is required")
	}
	if _, keeps := cfg.Store.(store.Credentials); cfg.Auth == nil && cfg.Credentials == nil && !keeps {
		return nil, fmt.Errorf("core: no way to authenticate: set Config.Auth or Config.Credentials (%T keeps no credentials)", cfg.Store)
	}
	sealer := vault.Ephemeral()
	if cfg.VaultKey != nil {
		var err error
		if sealer, err = vault.New(cfg.VaultKey); err != nil {
			return nil, fmt.Errorf("core: Config.VaultKey: %w", err)
		}
	}
	q := DefaultQuotas()
	if cfg.Quotas != nil {
		q = *cfg.Quotas
	}
	srv := server.New(server.Config{
		Store: cfg.Store, Auth: cfg.Auth, Credentials: cfg.Credentials, Placement: cfg.Placement,
		PublicURL: cfg.PublicURL, Logger: cfg.Logger, Sealer: sealer, UploadDir: cfg.UploadDir,
		PlacementTimeout: cfg.PlacementTimeout, StallTimeout: cfg.StallTimeout, Transcript: cfg.Transcript,
		Quotas: api.Quotas{Sessions: q.Sessions, QueuedTurns: q.QueuedTurns, StoreBytes: q.StoreBytes, Rate: q.Rate, Burst: q.Burst},
	})
	c := &Core{srv: srv}
	if cfg.Console {
		con, err := console.New(console.Config{API: srv, Auth: srv.Authenticator(), Store: cfg.Store, Logger: cfg.Logger, Secure: strings.HasPrefix(cfg.PublicURL, "https://")})
		if err != nil {
			return nil, fmt.Errorf("core: Config.Console: %w", err)
		}
		c.console = con
	}
	return c, nil
}

// ServeHTTP serves Core's routes: the Runtime bootstrap and WebSocket
// (/api/v1/agent-daemon/...) and the public API (/api/v1/...).
// With Config.Console it serves the web console under /console/ too.
func (c *Core) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.console != nil && strings.HasPrefix(r.URL.Path, console.Prefix) {
		c.console.ServeHTTP(w, r)
		return
	}
	c.srv.ServeHTTP(w, r)
}

// Register puts Core's routes on mux, beside the embedder's own. The
// patterns are method-qualified paths under /api/v1/; mux panics, as
// http.ServeMux does, if one conflicts with a route already there.
// With Config.Console the console's pattern, /console/, goes there too.
func (c *Core) Register(mux *http.ServeMux) {
	c.srv.Register(mux)
	if c.console != nil {
		c.console.Register(mux)
	}
}

// Close ends every event stream with a shutdown event and every Runtime
// connection with a close frame saying Core is shutting down, then stops
// the scheduler. Call it before the serving http.Server's Shutdown, which
// does not wait for hijacked WebSockets.
func (c *Core) Close() {
	c.srv.BeginShutdown()
	c.srv.Close()
}

// Package gateway is Core's side of the daemon connection: the bootstrap
// route, the WebSocket upgrade and one peer.Driver per accepted connection.
// The generated connection machine decides every outcome (refusal,
// replacement, heartbeat, read deadline); this package supplies its guards'
// facts and performs its actions.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	policy "github.com/agentwire/agentwire/core/placement"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/agent"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/core/vault"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Routes of the daemon connection API (daemon-protocol.txt:12-13).
const (
	BootstrapPath = "/api/v1/agent-daemon/bootstrap"
	WSPath        = "/api/v1/agent-daemon/ws"
)

// Config is what a Gateway needs. Store and Credentials are required.
type Config struct {
	Store       store.Store
	Credentials credential.Authenticator
	// PublicURL is the base URL Runtimes reach Core at (http or https);
	// bootstrap answers 503 bootstrap_unavailable without it.
	PublicURL string
	// HeartbeatInterval is what bootstrap tells the Runtime (15 s).
	HeartbeatInterval time.Duration
	// ReadTimeout closes a connection silent for this long (60 s,
	// wire-reference.md §4 HeartbeatTimeout).
	ReadTimeout time.Duration
	// Durations overrides the connection machine's policy timers
	// (peer.Config.Durations), for tests.
	Durations map[string]time.Duration
	Clock     peer.Clock
	Logger    *slog.Logger
	// Journal receives each Run's events; it defaults to the store's
	// journal without subscribers.
	Journal Journal
	// PollInterval is how often the worker looks for due Turns without
	// being woken (1 s); RetryBase and RetryMax bound the backoff after
	// preparation_capacity (1 s, 30 s).
	PollInterval time.Duration
	// Transcript, when set, receives every frame of every Runtime
	// connection, one JSON line (TranscriptLine) each.
	Transcript io.Writer
	RetryBase  time.Duration
	RetryMax   time.Duration
	// PlacementTimeout is how long a queued Turn may wait for a device of
	// its project that declares what it requires before it fails
	// unplaceable (5 minutes; spec/turn.yaml, unplaceable).
	PlacementTimeout time.Duration
	// Sealer opens the Vault's secrets an Agent's MCP servers name; the
	// API seals them with the same one (vault.Ephemeral when nil).
	Sealer *vault.Sealer
	// JournalBacklog bounds the bytes of Run events a connection holds
	// uncommitted; a Run whose frame would exceed it loses its
	// subscription (DefaultJournalBacklog when 0).
	JournalBacklog int64
	// JournalLimit bounds the bytes of Run events one Turn's journal
	// keeps; the frame that would pass it ends the Turn journal_limit
	// (journal_limit.go). 0: no limit.
	JournalLimit int64
	// Placement orders the devices eligible for a Turn (nil:
	// placement.ByDeviceID); see placement.go.
	Placement policy.Policy
	// Profiles are the engine profiles by agent kind; a kind without one
	// declares no control and qualifies no Agent feature.
	Profiles agent.Profiles
	// Replica is this process among the Cores sharing the store
	// (lease.go); the zero value is a Core that owns its store alone.
	Replica Replica
	// StallTimeout is how long a running Run may send no Run frame before
	// Core cancels it with stalled as the cause (DefaultStallTimeout when
	// 0; negative disables it; spec/run.yaml, stall_wait).
	StallTimeout time.Duration
}

// Gateway accepts Runtime connections and keeps one per device.
type Gateway struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// stores is the context of the gateway's store work. It outlives ctx:
	// what connections record as they end at shutdown (a Run's terminal
	// record) is still written; Close cancels it once they have ended, so
	// store work started after that fails at once instead of waiting.
	stores     context.Context
	stopStores context.CancelFunc

	mu    sync.Mutex
	conns map[string]*conn // the current owner of each device
	// turns holds the machine of each Turn this gateway's worker is
	// executing, from its placement until the worker is done (turns.go).
	turns map[string]*turn.Instance
	// waiting is why each queued Turn the scheduler considered is not
	// placed (waiting.go).
	waiting map[string]Waiting
	// placeGen counts the changes of what decides whether a Turn's
	// requirements are met anywhere (connections, declarations, owners):
	// a Turn found unmet is not planned again until it moves
	// (scheduler.go, skipUnmet).
	placeGen atomic.Uint64
	// dueCursor is where the last pass stopped when it reached its page
	// bound; the next pass goes on from there (scheduler.go).
	dueCursor string
	passes    passes            // the scheduler's passes (Settled)
	sessions  map[string]string // the Turn in flight of each Session
	trans     *transcript
	wake      chan struct{}
	// holds are the Sessions' scheduling reservations (workspace_read.go).
	holds   map[string]*sessionHold
	holdSeq uint64
	// turnDropped is closed (and forgotten) when a Turn's hold goes; a
	// read waiting for a finished Turn's hold takes it (reservation.go).
	turnDropped chan struct{}
	// unwritten are the Turns whose record the store failed to write
	// (persistence.go).
	unwritten map[string]*unwritten
	// elsewhere are the devices connected to other replicas, as read at
	// elsewhereAt (waiting.go).
	elsewhere   []store.Device
	elsewhereAt time.Time
}

// New returns a Gateway; Close stops every connection it accepted.
func New(cfg Config) *Gateway {
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 15 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 60 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = peer.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Placement == nil {
		cfg.Placement = policy.ByDeviceID{}
	}
	if cfg.Profiles == nil {
		cfg.Profiles = agent.DefaultProfiles()
	}
	if cfg.Sealer == nil {
		cfg.Sealer = vault.Ephemeral()
	}
	if cfg.JournalBacklog <= 0 {
		cfg.JournalBacklog = DefaultJournalBacklog
	}
	if cfg.Journal == nil {
		cfg.Journal = nopJournal{cfg.Store}
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = time.Second
	}
	if cfg.PlacementTimeout == 0 {
		cfg.PlacementTimeout = DefaultPlacementTimeout
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = 30 * time.Second
	}
	cfg.Durations = stallDurations(cfg)
	cfg.Replica.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	stores, stopStores := context.WithCancel(context.Background())
	g := &Gateway{cfg: cfg, ctx: ctx, cancel: cancel, stores: stores, stopStores: stopStores, conns: map[string]*conn{}, turns: map[string]*turn.Instance{}, waiting: map[string]Waiting{}, sessions: map[string]string{}, wake: make(chan struct{}, 1)}
	if cfg.Transcript != nil {
		g.trans = &transcript{w: cfg.Transcript, now: cfg.Clock.Now}
	}
	g.reconcile()
	g.wg.Add(1)
	go g.schedule()
	if cfg.Replica.Shared {
		g.wg.Add(1)
		go g.leases()
	}
	return g
}

// Register adds the gateway's routes to mux.
func (g *Gateway) Register(mux *http.ServeMux) {
	mux.HandleFunc(BootstrapPath, g.bootstrap)
	mux.HandleFunc(WSPath, g.upgrade)
}

// Close ends every connection and waits for their goroutines.
// CloseConnections closes every live Runtime connection with a close
// frame (1001 going away, reason) and waits, bounded by the close
// handshake, until each was sent. The daemons reconnect with backoff.
func (g *Gateway) CloseConnections(reason string) {
	g.mu.Lock()
	list := make([]*conn, 0, len(g.conns))
	for _, c := range g.conns {
		list = append(list, c)
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.closeWS(peer.StatusGoingAway, reason)
		}()
	}
	wg.Wait()
}

func (g *Gateway) Close() {
	g.cancel()
	g.wg.Wait()
	g.stopStores()
}

// Connected lists the devices with a live connection.
func (g *Gateway) Connected() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.conns))
	for id := range g.conns {
		out = append(out, id)
	}
	return out
}

// Sync waits until the loop of the device's current connection has
// applied everything it had taken in (frames delivered, writes reported)
// and returns how many frames its driver has delivered; ok is false
// without a live connection. Tests and the contract suite use it to
// observe Core after a frame without sleeping.
func (g *Gateway) Sync(ctx context.Context, deviceID string) (frames int, ok bool) {
	g.mu.Lock()
	c := g.conns[deviceID]
	g.mu.Unlock()
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if pc == nil {
		return 0, true // accepted but not running yet: nothing delivered
	}
	err := pc.Do(ctx, func(d *peer.Driver) { frames = d.Stats().Frames })
	return frames, err == nil
}

// Snapshot returns the current admission snapshot of a device's
// connection: its last valid heartbeat, or false before the first, after
// an invalid one, or without a connection.
func (g *Gateway) Snapshot(deviceID string) (wire.Heartbeat, bool) {
	g.mu.Lock()
	c := g.conns[deviceID]
	g.mu.Unlock()
	if c == nil {
		return wire.Heartbeat{}, false
	}
	return c.snapshot()
}

// apiError is the error body of the connection API (wire-reference.md §1).
type apiError struct {
	Error  string `json:"error"`
	Detail string `json:"detail,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{Error: code, Detail: detail})
}

// authError maps a credential failure onto the connection API's codes.
func authError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, credential.ErrMissing):
		writeError(w, http.StatusUnauthorized, "missing_bearer", "the Authorization header carries no Bearer credential")
	case errors.Is(err, credential.ErrWrongKind):
		writeError(w, http.StatusForbidden, "wrong_runtime_type", "the credential is not a device credential")
	case errors.Is(err, credential.ErrWrongDevice):
		writeError(w, http.StatusUnauthorized, "unknown_device", "the credential was not issued for this device")
	case errors.Is(err, credential.ErrBad):
		writeError(w, http.StatusUnauthorized, "bad_credential", "the credential is unknown or revoked")
	default:
		writeError(w, http.StatusInternalServerError, "internal", "the credential could not be checked")
	}
}

// BootstrapRequest and BootstrapResponse are the bootstrap bodies
// (wire-reference.md §1).
type BootstrapRequest struct {
	DeviceID string `json:"device_id"`
}

type BootstrapResponse struct {
	DeviceID         string `json:"device_id"`
	WorkspaceID      string `json:"workspace_id"`
	WSURL            string `json:"ws_url"`
	HeartbeatSeconds int    `json:"heartbeat_seconds"`
	ProtocolVersion  string `json:"protocol_version"`
}

// maxBootstrapBody bounds the bootstrap request body.
const maxBootstrapBody = 64 << 10

// bootstrapBodyWait bounds the reading of bootstrap's small body.
const bootstrapBodyWait = 10 * time.Second

func (g *Gateway) bootstrap(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	secret := credential.BearerToken(r.Header.Get("Authorization"))
	if secret == "" {
		w.Header().Set("Connection", "close")
		authError(w, credential.ErrMissing)
		return
	}
	// The credential is checked before any body is read, so a caller
	// without one cannot hold the request open with a slow body; the body
	// then has a deadline of its own.
	cred, err := g.cfg.Credentials.Authenticate(r.Context(), secret, store.KindDevice)
	if err != nil {
		// Close after the answer: net/http would otherwise read the
		// unread body (up to 256 KiB) before answering.
		w.Header().Set("Connection", "close")
		authError(w, err)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bootstrapBodyWait))
	var req BootstrapRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBootstrapBody))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", "the body is not a JSON object with device_id")
		return
	}
	if strings.TrimSpace(req.DeviceID) == "" {
		writeError(w, http.StatusBadRequest, "missing_device_id", "device_id is required")
		return
	}
	if cred.DeviceID != req.DeviceID {
		authError(w, credential.ErrWrongDevice)
		return
	}
	// decision: the public URL is checked after authentication, so an
	// unauthenticated caller learns nothing about Core's configuration;
	// without one Core cannot name the connection URL
	// (daemon-protocol.txt:12) and answers 503 bootstrap_unavailable.
	wsURL, ok := wsURLFor(g.cfg.PublicURL)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "bootstrap_unavailable", "Core has no public connection URL")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(BootstrapResponse{
		DeviceID: req.DeviceID, WorkspaceID: "default", WSURL: wsURL,
		HeartbeatSeconds: int(g.cfg.HeartbeatInterval / time.Second), ProtocolVersion: wire.Version,
	})
}

// wsURLFor turns Core's public base URL into the WebSocket URL.
func wsURLFor(public string) (string, bool) {
	public = strings.TrimRight(strings.TrimSpace(public), "/")
	switch {
	case strings.HasPrefix(public, "http://"):
		return "ws://" + strings.TrimPrefix(public, "http://") + WSPath, true
	case strings.HasPrefix(public, "https://"):
		return "wss://" + strings.TrimPrefix(public, "https://") + WSPath, true
	case strings.HasPrefix(public, "ws://"), strings.HasPrefix(public, "wss://"):
		return public + WSPath, true
	}
	return "", false
}

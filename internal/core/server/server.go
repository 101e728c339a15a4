// Package server assembles a Core: the store, the credential issuer, the
// daemon gateway and the public API routes, as one http.Handler.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentwire/agentwire/core/placement"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/agent"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/core/vault"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// Config is what a Core needs; Store is required, and so is one of Auth
// and Credentials unless Store keeps credentials too.
type Config struct {
	Store store.Store
	// Auth authenticates every Runtime and API caller (nil: agentwire's
	// own credentials, credential.Issuer over Credentials).
	Auth credential.Authenticator
	// Credentials keeps the hashes of the credentials Core issues (nil:
	// Store, when it implements store.Credentials).
	Credentials store.Credentials
	PublicURL   string
	Clock       peer.Clock
	Logger      *slog.Logger
	// Transcript receives every Runtime frame (gateway.Config.Transcript).
	Transcript io.Writer
	// PlacementTimeout is gateway.Config.PlacementTimeout (0: 5 minutes).
	PlacementTimeout time.Duration
	// StallTimeout is gateway.Config.StallTimeout (0: 10 minutes,
	// negative: disabled).
	StallTimeout time.Duration
	// Placement orders the devices eligible for a Turn (nil:
	// placement.ByDeviceID).
	Placement placement.Policy
	// Profiles are the engine profiles by agent kind (nil:
	// agent.DefaultProfiles).
	Profiles agent.Profiles
	// JournalBacklog is gateway.Config.JournalBacklog (0: 16 MiB).
	JournalBacklog int64
	// Sealer seals the Vault's secrets (nil: a key that lives as long as
	// the process, right for a store in memory; a Core on a durable store
	// passes one from vault.LoadKey so secrets open after a restart).
	Sealer *vault.Sealer
	// Quotas bound each project (api.Quotas; the zero value bounds
	// nothing, `core serve` passes api.DefaultQuotas unless told).
	Quotas api.Quotas
	// JournalLimit is gateway.Config.JournalLimit: the journal bytes a
	// Turn may keep (0: no limit).
	JournalLimit int64
	// Replica is this Core among the replicas sharing Store
	// (gateway.Replica; the zero value owns the store alone).
	Replica gateway.Replica
	// UploadDir holds upload bodies while they arrive (api.Config.UploadDir;
	// `core serve` uses uploads/ in its data directory).
	UploadDir string
}

// Server is one Core's HTTP surface.
type Server struct {
	cfg     Config
	creds   credential.Authenticator
	gateway *gateway.Gateway
	mux     *http.ServeMux
	journal *api.Journal
	api     *api.API
}

// New builds the routes.
func New(cfg Config) *Server {
	if cfg.Clock == nil {
		cfg.Clock = peer.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Profiles == nil {
		cfg.Profiles = agent.DefaultProfiles()
	}
	if cfg.Sealer == nil {
		cfg.Sealer = vault.Ephemeral()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.creds = authenticator(cfg)
	s.journal = &api.Journal{Store: cfg.Store}
	if cfg.Replica.Shared {
		// Another replica's Runs write to the journal too, and their
		// Notify does not reach this process: its streams poll.
		s.journal.Poll = api.ReplicaPoll
	}
	s.gateway = gateway.New(gateway.Config{Replica: cfg.Replica, Store: cfg.Store, Credentials: s.creds, PublicURL: cfg.PublicURL, Clock: cfg.Clock, Logger: cfg.Logger, Journal: s.journal, Transcript: cfg.Transcript, PlacementTimeout: cfg.PlacementTimeout, StallTimeout: cfg.StallTimeout, Placement: cfg.Placement, Profiles: cfg.Profiles, Sealer: cfg.Sealer, JournalBacklog: cfg.JournalBacklog, JournalLimit: cfg.JournalLimit})
	s.gateway.Register(s.mux)
	s.api = api.New(api.Config{
		Store: cfg.Store, Credentials: s.creds, Journal: s.journal, Now: cfg.Clock.Now, Clock: cfg.Clock, Logger: cfg.Logger, Profiles: cfg.Profiles, Sealer: cfg.Sealer, Quotas: cfg.Quotas, UploadDir: cfg.UploadDir,
		Devices: func(ctx context.Context, project string) (any, error) { return DeviceViews(ctx, cfg.Store, project) },
		CheckInput: func(ctx context.Context, turnID string, in wire.MessageInput) error {
			var refused *gateway.InputRefused
			if err := s.gateway.CheckInput(ctx, turnID, in); errors.As(err, &refused) {
				return errors.New(refused.Detail)
			}
			return nil
		},
		Waiting: func(turnID string) (api.Waiting, bool) {
			w, ok := s.gateway.Waiting(turnID)
			return api.Waiting{Reason: w.Reason, Detail: w.Detail, Since: w.Since}, ok
		},
		Submitted: func(string) { s.gateway.Kick() },
		Cancel:    s.cancel,
		Answer:    s.answer,
		Files:     s.files,
		Write:     s.write, // files_write.go
		Resolve:   s.resolveWrite,
		Export:    s.export,  // files_export.go
		Suspend:   s.suspend, // environments.go
		Resume:    s.resume,
		// The delivery outlives the request that stored the input.
		InputAdded: func(turnID string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.gateway.DeliverInput(ctx, turnID)
		},
	})
	s.api.Register(s.mux)
	return s
}

// authenticator is cfg.Auth, or agentwire's own credentials in
// cfg.Credentials or the store; a Core with neither refuses every secret
// (and says so at start) rather than admit anyone.
func authenticator(cfg Config) credential.Authenticator {
	if cfg.Auth != nil {
		return cfg.Auth
	}
	creds := cfg.Credentials
	if creds == nil {
		creds, _ = cfg.Store.(store.Credentials)
	}
	if creds == nil {
		cfg.Logger.Error("core: no authenticator and no credential store: every Runtime and API request is refused", "store", fmt.Sprintf("%T", cfg.Store))
		return credential.RefuseAll{}
	}
	return credential.Issuer{Store: creds, Now: cfg.Clock.Now, Devices: cfg.Store}
}

// cancel maps the gateway's answers onto the API's.
func (s *Server) cancel(ctx context.Context, turnID string) (string, error) {
	id, err := s.gateway.CancelTurn(ctx, turnID)
	switch {
	case errors.Is(err, gateway.ErrTurnFinished):
		return "", api.ErrFinished
	case errors.Is(err, gateway.ErrNotRunning):
		return "", api.ErrNotRunning
	}
	return id, err
}

// answer maps the gateway's answers onto the API's.
func (s *Server) answer(ctx context.Context, turnID, interactionID string, p wire.Payload) (string, error) {
	id, err := s.gateway.AnswerInteraction(ctx, turnID, interactionID, p)
	switch {
	case errors.Is(err, gateway.ErrAnswered), errors.Is(err, gateway.ErrWrongAnswer):
		return "", api.ErrAnswered
	case errors.Is(err, gateway.ErrNotRunning):
		return "", api.ErrNotRunning
	}
	var refused *gateway.AnswerRefused
	if errors.As(err, &refused) {
		return "", &api.AnswerUnsupported{Detail: refused.Detail}
	}
	return id, err
}

// Register puts Core's routes (the Runtime bootstrap and WebSocket, the
// public API) on another mux, an embedder's; Core's own mux keeps them
// too, so ServeHTTP keeps working.
func (s *Server) Register(mux *http.ServeMux) {
	s.gateway.Register(mux)
	s.api.Register(mux)
}

// ServeHTTP implements http.Handler.
// With replicas, a request that needs a device connection another
// replica holds is forwarded there (forward.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Replica.Shared && r.Header.Get(ForwardedHeader) == "" {
		if target := s.ownerURL(r.Context(), r); target != "" {
			s.forward(w, r, target)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// BeginShutdown ends every open event stream with a shutdown event and
// closes every Runtime connection with a close frame (1001, Core is
// shutting down), so that an http.Server's Shutdown that follows does not
// wait on them and the daemons see why the connection ended.
func (s *Server) BeginShutdown() {
	s.api.Shutdown()
	s.gateway.CloseConnections("Core is shutting down")
}

// Close ends every daemon connection.
func (s *Server) Close() { s.gateway.Close() }

// Authenticator is how this Core authenticates its callers (the web
// console's login asks it whose a key is).
func (s *Server) Authenticator() credential.Authenticator { return s.creds }

// Gateway exposes the daemon gateway (the scheduler selects devices there).
func (s *Server) Gateway() *gateway.Gateway { return s.gateway }

// DeviceView is one device of the registry as the API shows it.
type DeviceView struct {
	DeviceID string `json:"device_id"`
	// Project owns the device; empty while no administrator assigned it.
	Project    string                    `json:"project,omitempty"`
	Connected  bool                      `json:"connected"`
	OwnerEpoch uint64                    `json:"owner_epoch"`
	LastSeen   time.Time                 `json:"last_seen"`
	AgentKinds []wire.SupportedAgentKind `json:"agent_kinds"`
}

// DeviceViews reads the registry: each device of project ("" for every
// device) with the kinds and capabilities its current connection last
// declared. A device without a valid declaration advertises nothing
// (daemon-protocol.txt:14).
func DeviceViews(ctx context.Context, st store.Store, project string) ([]DeviceView, error) {
	list, err := st.ListDevices(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DeviceView, 0, len(list))
	for _, d := range list {
		if project != "" && d.Project != project {
			continue
		}
		v := DeviceView{DeviceID: d.ID, Project: d.Project, Connected: d.Connected, OwnerEpoch: d.OwnerEpoch, LastSeen: d.LastSeen, AgentKinds: []wire.SupportedAgentKind{}}
		if d.Declaration != nil {
			var hb wire.Heartbeat
			if err := json.Unmarshal(d.Declaration, &hb); err == nil && hb.SupportedAgentKinds != nil {
				v.AgentKinds = hb.SupportedAgentKinds
			}
		}
		out = append(out, v)
	}
	return out, nil
}

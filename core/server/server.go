// Package server assembles a Core: the store, the credential issuer, the
// daemon gateway and the public API routes, as one http.Handler.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/gateway"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/peer"
	wire "github.com/agentwire/agentwire/spec/wire"
)

// Config is what a Core needs; Store is required.
type Config struct {
	Store     store.Store
	PublicURL string
	Clock     peer.Clock
	Logger    *slog.Logger
}

// Server is one Core's HTTP surface.
type Server struct {
	cfg     Config
	creds   credential.Issuer
	gateway *gateway.Gateway
	mux     *http.ServeMux
}

// New builds the routes.
func New(cfg Config) *Server {
	if cfg.Clock == nil {
		cfg.Clock = peer.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.creds = credential.Issuer{Store: cfg.Store, Now: cfg.Clock.Now}
	s.gateway = gateway.New(gateway.Config{Store: cfg.Store, Credentials: s.creds, PublicURL: cfg.PublicURL, Clock: cfg.Clock, Logger: cfg.Logger})
	s.gateway.Register(s.mux)
	s.mux.HandleFunc("GET /api/v1/devices", s.devices)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close ends every daemon connection.
func (s *Server) Close() { s.gateway.Close() }

// Gateway exposes the daemon gateway (the scheduler selects devices there).
func (s *Server) Gateway() *gateway.Gateway { return s.gateway }

// APIError is the public API's error body; Field names the offending
// request field when there is one.
type APIError struct {
	Error  string `json:"error"`
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// authorize admits a project API key or the administration key; a device
// credential never opens the public API.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (store.Credential, bool) {
	secret := credential.BearerToken(r.Header.Get("Authorization"))
	c, err := s.creds.Authenticate(r.Context(), secret, store.KindProject)
	if errors.Is(err, credential.ErrWrongKind) {
		c, err = s.creds.Authenticate(r.Context(), secret, store.KindAdmin)
	}
	switch {
	case err == nil:
		return c, true
	case errors.Is(err, credential.ErrMissing):
		writeJSON(w, http.StatusUnauthorized, APIError{Error: "missing_bearer", Detail: "a project API key is required"})
	case errors.Is(err, credential.ErrWrongKind):
		writeJSON(w, http.StatusForbidden, APIError{Error: "wrong_credential_kind", Detail: "only a project API key or the administration key opens the API"})
	case errors.Is(err, credential.ErrBad):
		writeJSON(w, http.StatusUnauthorized, APIError{Error: "bad_credential", Detail: "the credential is unknown or revoked"})
	default:
		s.cfg.Logger.Error("server: authorize", "err", err)
		writeJSON(w, http.StatusInternalServerError, APIError{Error: "internal"})
	}
	return store.Credential{}, false
}

// DeviceView is one device of the registry as the API shows it.
type DeviceView struct {
	DeviceID   string                    `json:"device_id"`
	Connected  bool                      `json:"connected"`
	OwnerEpoch uint64                    `json:"owner_epoch"`
	LastSeen   time.Time                 `json:"last_seen"`
	AgentKinds []wire.SupportedAgentKind `json:"agent_kinds"`
}

// DeviceViews reads the registry: each device with the kinds and
// capabilities its current connection last declared. A device without a
// valid declaration advertises nothing (daemon-protocol.txt:14).
func DeviceViews(ctx context.Context, st store.Store) ([]DeviceView, error) {
	list, err := st.ListDevices(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DeviceView, 0, len(list))
	for _, d := range list {
		v := DeviceView{DeviceID: d.ID, Connected: d.Connected, OwnerEpoch: d.OwnerEpoch, LastSeen: d.LastSeen, AgentKinds: []wire.SupportedAgentKind{}}
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

func (s *Server) devices(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.authorize(w, r); !ok {
		return
	}
	list, err := DeviceViews(r.Context(), s.cfg.Store)
	if err != nil {
		s.cfg.Logger.Error("server: devices", "err", err)
		writeJSON(w, http.StatusInternalServerError, APIError{Error: "internal"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"devices": list})
}

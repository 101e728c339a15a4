package server

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/agentwire/agentwire/core/store"
)

// ForwardedHeader marks a request one replica forwarded to another; its
// value is the forwarding replica's ID. A request that carries it is
// served where it arrives, never forwarded again, so two replicas that
// disagree for a moment about a device's owner cannot bounce it between
// them.
const ForwardedHeader = "X-Agentwire-Forwarded-By"

// Forwarding requests to the replica that holds the device connection.
//
// decision: several replicas share the store, and a device is connected
// to one of them; a request that must reach the device's connection (an
// active input, an interaction decision or function result, a cancel, a
// workspace read, write or export, a suspension) is served by the replica
// that holds the device's owner lease (daemon-protocol.txt:19: frames for
// a Turn go only over its owner's connection). Any other replica forwards
// the HTTP request there as it came, to the URL the owner recorded when
// it started (store.Replica.URL), with ForwardedHeader set; the owner
// authenticates it again with the caller's own credential, so forwarding
// grants nothing. Requests that only read or write the store (creating a
// Session or Turn, reading a Turn, its event stream) are served by any
// replica. A request for a device no live replica holds is served where
// it arrived, and answers as that replica would without the connection.

// forwardable reports whether the route needs a device connection, and
// what names the device: a Turn, a Session or an Environment ID.
func forwardable(r *http.Request) (kind, id string) {
	p := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/")
	switch {
	case len(p) < 3:
		return "", ""
	case p[0] == "turns" && r.Method == http.MethodPost &&
		((len(p) == 3 && (p[2] == "input" || p[2] == "cancel" || p[2] == "function-results")) || (len(p) == 4 && p[2] == "interactions")):
		return "turn", p[1]
	case p[0] == "sessions" && (len(p) == 3 && (p[2] == "files" || p[2] == "export") || len(p) == 4 && p[2] == "files" && p[3] == "content"):
		return "session", p[1]
	case p[0] == "environments" && r.Method == http.MethodPost && len(p) == 3 && (p[2] == "suspend" || p[2] == "resume"):
		return "environment", p[1]
	}
	return "", ""
}

// ownerURL is the URL of the other replica that holds the device the
// request needs, or "" to serve it here.
func (s *Server) ownerURL(ctx context.Context, r *http.Request) string {
	kind, id := forwardable(r)
	if kind == "" || id == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	device, epoch := s.deviceOf(ctx, kind, id)
	if device == "" {
		return ""
	}
	d, err := s.cfg.Store.GetDevice(ctx, device)
	mine := s.gateway.ReplicaID()
	if err != nil || !d.Connected || d.ReplicaID == "" || d.ReplicaID == mine || (epoch != 0 && d.OwnerEpoch != epoch) {
		return ""
	}
	replicas, err := s.cfg.Store.ListReplicas(ctx)
	if err != nil {
		return ""
	}
	for _, rep := range replicas {
		if rep.ID == d.ReplicaID {
			return rep.URL
		}
	}
	return ""
}

// deviceOf is the device a request about kind id needs, and for a Turn
// the owner epoch it was claimed under.
func (s *Server) deviceOf(ctx context.Context, kind, id string) (string, uint64) {
	st := s.cfg.Store
	switch kind {
	case "turn":
		t, err := st.GetTurn(ctx, id)
		if err != nil || t.DeviceID == "" || t.State == store.TurnQueued || t.State.Terminal() {
			return "", 0
		}
		return t.DeviceID, t.OwnerEpoch
	case "environment":
		e, err := st.GetEnvironment(ctx, id)
		if err != nil {
			return "", 0
		}
		return e.DeviceID, 0
	}
	ses, err := st.GetSession(ctx, id)
	if err != nil {
		return "", 0
	}
	// A running Turn serves the Session's reads; otherwise the device
	// that hosts its workspace does.
	if ts, err := st.SessionTurns(ctx, id, 1); err == nil && len(ts) == 1 && ts[0].DeviceID != "" && !ts[0].State.Terminal() && ts[0].State != store.TurnQueued {
		return ts[0].DeviceID, ts[0].OwnerEpoch
	}
	if ses.EnvironmentID == "" {
		return "", 0
	}
	e, err := st.GetEnvironment(ctx, ses.EnvironmentID)
	if err != nil {
		return "", 0
	}
	return e.DeviceID, 0
}

// forward proxies r to the replica at target, as it came.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, target string) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		s.cfg.Logger.Warn("server: a replica's URL does not parse; serving the request here", "url", target, "err", err)
		s.mux.ServeHTTP(w, r)
		return
	}
	from := s.gateway.ReplicaID()
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.URL.Path, pr.Out.URL.RawPath = r.URL.Path, r.URL.RawPath
			pr.Out.Header.Set(ForwardedHeader, from)
		},
		// Event-free responses, but a file's content may be large:
		// stream it as it comes.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.cfg.Logger.Warn("server: forwarding to the device's replica failed", "url", target, "err", err)
			http.Error(w, `{"error":"unavailable","detail":"the Core replica that holds the device connection did not answer"}`, http.StatusServiceUnavailable)
		},
	}
	p.ServeHTTP(w, r)
}

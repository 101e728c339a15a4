package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/agentwire/agentwire/wire"
)

// Credential is the daemon's machine credential. It prints, formats and
// logs as a placeholder, so it cannot reach a log line or an error by
// accident (daemon-protocol.txt:13).
type Credential struct{ secret string }

// NewCredential wraps a secret.
func NewCredential(secret string) Credential { return Credential{secret: strings.TrimSpace(secret)} }

func (Credential) String() string       { return "[credential]" }
func (Credential) GoString() string     { return "[credential]" }
func (Credential) LogValue() slog.Value { return slog.StringValue("[credential]") }

func (c Credential) bearer() string { return "Bearer " + c.secret }

// Empty reports whether no credential was given.
func (c Credential) Empty() bool { return c.secret == "" }

// Paths of the machine connection API (wire-reference §1).
const (
	BootstrapPath = "/api/v1/agent-daemon/bootstrap"
	WSPath        = "/api/v1/agent-daemon/ws"
	// MaxBootstrapBody caps the bootstrap answer the daemon reads.
	MaxBootstrapBody = 64 << 10
)

// Bootstrap is what bootstrap returns.
type Bootstrap struct {
	DeviceID         string `json:"device_id"`
	WorkspaceID      string `json:"workspace_id,omitempty"`
	WSURL            string `json:"ws_url"`
	HeartbeatSeconds int    `json:"heartbeat_seconds"`
	ProtocolVersion  string `json:"protocol_version"`
}

// Permanent is a refusal only an operator can correct: the daemon stops
// and never reconnects (daemon-protocol.txt:16, :160).
type Permanent struct {
	What string // what happened
	Fix  string // what the operator must change
}

func (e *Permanent) Error() string { return e.What + "; " + e.Fix }

// refusal reads an error body ({"error":code,"detail":…}) of a refused
// request, bounded, and returns its code.
func refusal(body io.Reader) string {
	var r struct {
		Error string `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(body, 4<<10))
	_ = json.Unmarshal(b, &r)
	if len(r.Error) > 64 {
		return r.Error[:64]
	}
	return r.Error
}

// classify turns an HTTP refusal into a Permanent error, or a transient one.
func classify(step string, status int, code string) error {
	switch {
	case status == http.StatusUpgradeRequired:
		return &Permanent{What: step + " refused with 426 " + codeOr(code, "incompatible_version"),
			Fix: "deploy a daemon whose wire version matches Core exactly (this daemon speaks " + wire.Version + ")"}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &Permanent{What: fmt.Sprintf("%s refused with %d %s", step, status, codeOr(code, "unauthorized")),
			Fix: "check the credential file and the device ID (the credential must belong to this device and to a Runtime)"}
	case status == http.StatusBadRequest:
		return &Permanent{What: step + " refused with 400 " + codeOr(code, "bad_request"),
			Fix: "check --device-id and --core; the request was malformed"}
	}
	return fmt.Errorf("%s answered HTTP %d %s", step, status, codeOr(code, ""))
}

func codeOr(code, def string) string {
	if code == "" {
		return def
	}
	return code
}

// bootstrap calls POST bootstrap with the Bearer credential and the device ID.
func bootstrap(ctx context.Context, client *http.Client, core string, device string, cred Credential, version string) (Bootstrap, error) {
	body, _ := json.Marshal(map[string]string{"device_id": device})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(core, "/")+BootstrapPath, bytes.NewReader(body))
	if err != nil {
		return Bootstrap{}, &Permanent{What: "the --core URL is not usable", Fix: "pass an http(s) URL of Core"}
	}
	req.Header.Set("Authorization", cred.bearer())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentwire-daemon/"+version)
	resp, err := client.Do(req)
	if err != nil {
		return Bootstrap{}, fmt.Errorf("bootstrap: %w", scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		// decision: no bootstrap at that URL is the operator's to correct,
		// like a rejected credential (daemon-protocol.txt:165): retrying
		// a wrong --core forever only hides the mistake. The URL tried is
		// named (it holds no credential).
		return Bootstrap{}, &Permanent{What: fmt.Sprintf("bootstrap at %s answered %d: no agentwire Core serves that URL", req.URL.Redacted(), resp.StatusCode),
			Fix: "pass --core Core's base URL (the address agentwire core serve listens on, e.g. http://127.0.0.1:8080)"}
	}
	if resp.StatusCode != http.StatusOK {
		return Bootstrap{}, classify("bootstrap", resp.StatusCode, refusal(resp.Body))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBootstrapBody+1))
	if err != nil {
		return Bootstrap{}, fmt.Errorf("bootstrap: reading the answer: %w", err)
	}
	if len(b) > MaxBootstrapBody {
		return Bootstrap{}, fmt.Errorf("bootstrap: the answer is larger than %d bytes", MaxBootstrapBody)
	}
	var out Bootstrap
	if err := json.Unmarshal(b, &out); err != nil {
		return Bootstrap{}, errors.New("bootstrap: the answer is not the expected JSON object")
	}
	if out.ProtocolVersion != "" && !wire.VersionCompatible(out.ProtocolVersion) {
		return Bootstrap{}, &Permanent{What: "bootstrap reports wire version " + bounded(out.ProtocolVersion),
			Fix: "deploy a daemon whose wire version matches Core exactly (this daemon speaks " + wire.Version + ")"}
	}
	return out, nil
}

// MaxHeartbeatSeconds bounds the heartbeat interval bootstrap may set: an
// hour, far beyond any useful interval (a huge value would overflow the
// interval and spin).
const MaxHeartbeatSeconds = 3600

// dialURL is the WebSocket URL: bootstrap's ws_url (or the ws path of Core)
// with device_id and version; any credential-bearing token parameter is
// removed, so a credential never travels in a URL.
func dialURL(core string, b Bootstrap, device string) (string, error) {
	raw := b.WSURL
	if raw == "" {
		raw = strings.TrimSuffix(core, "/") + WSPath
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("bootstrap returned an unusable ws_url")
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	if err := sameOrigin(core, u); err != nil {
		return "", err
	}
	q := u.Query()
	q.Del("token")
	q.Set("device_id", device)
	q.Set("version", wire.Version)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dial opens the WebSocket with the Bearer header.
func dial(ctx context.Context, client *http.Client, target string, cred Credential) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", cred.bearer())
	c, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			code := ""
			if resp.Body != nil {
				code = refusal(resp.Body)
			}
			return nil, classify("the WebSocket upgrade", resp.StatusCode, code)
		}
		return nil, fmt.Errorf("dial: %w", scrub(err))
	}
	c.SetReadLimit(wire.MaxFrameBytes)
	return c, nil
}

// scrub drops the URL from net/http errors: it names the device, never the
// credential, but error texts stay bounded and free of query strings.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func bounded(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// sameOrigin checks that the WebSocket URL is on --core's origin: the same
// host and port, and wss when Core is reached over https.
//
// decision: the upgrade carries the device credential, and bootstrap's
// answer is only as trustworthy as the connection it came on; following a
// ws_url to another host, port or a plain ws from https would hand the
// credential to whoever wrote the answer (daemon-protocol.txt:13 keeps the
// credential to the header of Core's own endpoints). A Core behind a proxy
// whose public URL differs is reached by passing that URL as --core.
func sameOrigin(core string, ws *url.URL) error {
	c, err := url.Parse(core)
	if err != nil {
		return &Permanent{What: "the --core URL is not usable", Fix: "pass an http(s) URL of Core"}
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		switch u.Scheme {
		case "https", "wss":
			return "443"
		}
		return "80"
	}
	switch {
	case ws.Scheme != "ws" && ws.Scheme != "wss":
		return &Permanent{What: "bootstrap's ws_url " + bounded(ws.Redacted()) + " is not a WebSocket URL", Fix: "check Core's --public-url"}
	case c.Scheme == "https" && ws.Scheme != "wss":
		return &Permanent{What: "bootstrap's ws_url " + bounded(ws.Redacted()) + " would drop to plain ws from https --core " + bounded(core),
			Fix: "give Core an https --public-url"}
	case !strings.EqualFold(c.Hostname(), ws.Hostname()) || port(c) != port(ws):
		return &Permanent{What: "bootstrap's ws_url " + bounded(ws.Redacted()) + " is not on the origin of --core " + bounded(core) + "; the device credential is sent only to Core",
			Fix: "pass --core the URL Core publishes (its --public-url), or set Core's --public-url to the address Runtimes use"}
	}
	return nil
}

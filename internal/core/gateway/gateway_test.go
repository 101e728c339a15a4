package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer collects every log record of a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type env struct {
	t       *testing.T
	store   store.Store
	issuer  credential.Issuer
	keys    store.Credentials // the issuer's, apart from store as an embedder may keep them
	gw      *gateway.Gateway
	srv     *httptest.Server
	clock   *peer.ManualClock
	logs    *syncBuffer
	secrets []credential.Secret
	// host is the device that hosts the Environments localSession and
	// initSession register ("dev-1" unless a test's real Runtime is
	// another device).
	host string
}

// testProject owns every device and Session of these tests.
const testProject = "p"

func (e *env) hostDevice() string {
	if e.host != "" {
		return e.host
	}
	return "dev-1"
}

func newEnv(t *testing.T, public bool) *env { return newEnvStore(t, public, memory.New()) }

// newEnvStore is newEnv on the given store; opts adjust the gateway's
// configuration.
func newEnvStore(t *testing.T, public bool, st store.Store, opts ...func(*gateway.Config)) *env {
	e := &env{t: t, store: st, clock: peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), logs: &syncBuffer{}}
	e.keys = memory.New()
	e.issuer = credential.Issuer{Store: e.keys, Devices: e.store, Now: e.clock.Now}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mux := http.NewServeMux()
	e.srv = httptest.NewUnstartedServer(mux)
	e.srv.Start()
	url := ""
	if public {
		url = e.srv.URL
	}
	cfg := gateway.Config{Store: e.store, Credentials: e.issuer, PublicURL: url, Clock: e.clock, Logger: log}
	for _, o := range opts {
		o(&cfg)
	}
	e.gw = gateway.New(cfg)
	e.gw.Register(mux)
	t.Cleanup(func() {
		e.gw.Close()
		e.srv.Close()
		// No credential is ever logged: scan every record of the test.
		logs := e.logs.String()
		for _, s := range e.secrets {
			assert.NotContains(t, logs, s.Reveal(), "a credential reached the log")
		}
	})
	return e
}

func (e *env) issue(kind store.CredentialKind, device, project string) credential.Secret {
	if kind == store.KindDevice && project == "" {
		project = testProject
	}
	_, s, err := e.issuer.Issue(context.Background(), kind, device, project)
	require.NoError(e.t, err)
	e.secrets = append(e.secrets, s)
	return s
}

func (e *env) wsURL(query string) string {
	return "ws" + strings.TrimPrefix(e.srv.URL, "http") + gateway.WSPath + query
}

// dial opens a WebSocket as a scripted Runtime.
func (e *env) dial(device string, secret credential.Secret) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	if secret != "" {
		h.Set("Authorization", "Bearer "+secret.Reveal())
	}
	return websocket.Dial(context.Background(), e.wsURL("?device_id="+device+"&version="+wire.Version), &websocket.DialOptions{HTTPHeader: h})
}

func heartbeat(t *testing.T) []byte {
	yes := true
	b, err := wire.Encode("", wire.Heartbeat{TS: 1_700_000_000_000, ActiveRequests: 0, SupportedAgentKinds: []wire.SupportedAgentKind{
		{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()},
	}}, "")
	require.NoError(t, err)
	return b
}

func send(t *testing.T, c *websocket.Conn, frame []byte) {
	require.NoError(t, c.Write(context.Background(), websocket.MessageText, frame))
}

// closedWith reads until the connection closes and returns its status.
func closedWith(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func errorBody(t *testing.T, r *http.Response) string {
	t.Helper()
	require.NotNil(t, r)
	var body struct {
		Error  string `json:"error"`
		Detail string `json:"detail"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	require.NoError(t, json.Unmarshal(b, &body), "body %q", b)
	return body.Error
}

func (e *env) waitDeclared(device string, want bool) {
	require.Eventually(e.t, func() bool {
		d, err := e.store.GetDevice(context.Background(), device)
		return err == nil && (d.Declaration != nil) == want
	}, 10*time.Second, time.Millisecond)
}

func TestUpgradeRefusals(t *testing.T) {
	e := newEnv(t, true)
	dev := e.issue(store.KindDevice, "dev-1", "")
	proj := e.issue(store.KindProject, "", "p")
	admin := e.issue(store.KindAdmin, "", "")
	revoked := e.issue(store.KindDevice, "dev-1", "")
	list, _ := e.keys.ListCredentials(context.Background())
	require.NoError(t, e.issuer.Revoke(context.Background(), list[3].ID))

	for _, tc := range []struct {
		name, query string
		secret      credential.Secret
		status      int
		code        string
	}{
		{"no device", "?version=" + wire.Version, dev, 400, "missing_params"},
		{"no version", "?device_id=dev-1", dev, 400, "missing_params"},
		{"no bearer", "?device_id=dev-1&version=" + wire.Version, "", 400, "missing_params"},
		{"credential in the query is ignored", "?device_id=dev-1&version=" + wire.Version + "&token=" + dev.Reveal(), "", 400, "missing_params"},
		{"version before credential", "?device_id=dev-1&version=0.0.1", "awd_bad", 426, "incompatible_version"},
		{"patch drift", "?device_id=dev-1&version=" + wire.Version + "-dev", dev, 426, "incompatible_version"},
		{"unknown credential", "?device_id=dev-1&version=" + wire.Version, "awd_bad", 401, "bad_credential"},
		{"revoked credential", "?device_id=dev-1&version=" + wire.Version, revoked, 401, "bad_credential"},
		{"another device", "?device_id=dev-2&version=" + wire.Version, dev, 401, "unknown_device"},
		{"project key", "?device_id=dev-1&version=" + wire.Version, proj, 403, "wrong_runtime_type"},
		{"admin key", "?device_id=dev-1&version=" + wire.Version, admin, 403, "wrong_runtime_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.secret != "" {
				h.Set("Authorization", "Bearer "+tc.secret.Reveal())
			}
			c, resp, err := websocket.Dial(context.Background(), e.wsURL(tc.query), &websocket.DialOptions{HTTPHeader: h})
			if c != nil {
				_ = c.CloseNow()
			}
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.code, errorBody(t, resp))
		})
	}
	d, err := e.store.GetDevice(context.Background(), "dev-1")
	require.NoError(t, err, "the device is assigned to its project when its credential is issued")
	assert.Zero(t, d.OwnerEpoch, "a refused upgrade takes no owner lease")
	assert.False(t, d.Connected)
}

func TestBootstrap(t *testing.T) {
	e := newEnv(t, true)
	dev := e.issue(store.KindDevice, "dev-1", "")
	proj := e.issue(store.KindProject, "", "p")
	post := func(secret credential.Secret, body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, e.srv.URL+gateway.BootstrapPath, strings.NewReader(body))
		require.NoError(t, err)
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret.Reveal())
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := post(dev, `{"device_id":"dev-1"}`)
	require.Equal(t, 200, resp.StatusCode)
	var out gateway.BootstrapResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	_ = resp.Body.Close()
	assert.Equal(t, e.wsURL(""), out.WSURL)
	assert.Equal(t, wire.Version, out.ProtocolVersion)
	assert.Equal(t, 15, out.HeartbeatSeconds)
	assert.NotContains(t, out.WSURL, dev.Reveal())

	for _, tc := range []struct {
		name   string
		secret credential.Secret
		body   string
		status int
		code   string
	}{
		{"missing bearer", "", `{"device_id":"dev-1"}`, 401, "missing_bearer"},
		{"bad json", dev, `{`, 400, "bad_json"},
		{"missing device", dev, `{}`, 400, "missing_device_id"},
		{"bad credential", "awd_x", `{"device_id":"dev-1"}`, 401, "bad_credential"},
		{"wrong kind", proj, `{"device_id":"dev-1"}`, 403, "wrong_runtime_type"},
		{"other device", dev, `{"device_id":"dev-2"}`, 401, "unknown_device"},
	} {
		resp := post(tc.secret, tc.body)
		assert.Equal(t, tc.status, resp.StatusCode, tc.name)
		assert.Equal(t, tc.code, errorBody(t, resp), tc.name)
	}
	r, err := http.Get(e.srv.URL + gateway.BootstrapPath)
	require.NoError(t, err)
	assert.Equal(t, 405, r.StatusCode)
	assert.Equal(t, "method_not_allowed", errorBody(t, r))
}

func TestBootstrapUnavailableWithoutPublicURL(t *testing.T) {
	e := newEnv(t, false)
	dev := e.issue(store.KindDevice, "dev-1", "")
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+gateway.BootstrapPath, strings.NewReader(`{"device_id":"dev-1"}`))
	req.Header.Set("Authorization", "Bearer "+dev.Reveal())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "bootstrap_unavailable", errorBody(t, resp))
}

func TestHeartbeatRecordsTheDeclaration(t *testing.T) {
	e := newEnv(t, true)
	dev := e.issue(store.KindDevice, "dev-1", "")
	c, _, err := e.dial("dev-1", dev)
	require.NoError(t, err)
	defer c.CloseNow()
	send(t, c, heartbeat(t))
	e.waitDeclared("dev-1", true)
	hb, ok := e.gw.Snapshot("dev-1")
	require.True(t, ok)
	k, ok := hb.AgentKind("codex")
	require.True(t, ok)
	assert.True(t, k.IsAvailable())
	d, err := e.store.GetDevice(context.Background(), "dev-1")
	require.NoError(t, err)
	assert.True(t, d.Connected)
	assert.Equal(t, uint64(1), d.OwnerEpoch)

	require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		d, err := e.store.GetDevice(context.Background(), "dev-1")
		return err == nil && !d.Connected
	}, 10*time.Second, time.Millisecond)
}

func TestInvalidHeartbeatClearsTheSnapshotAndCloses(t *testing.T) {
	e := newEnv(t, true)
	dev := e.issue(store.KindDevice, "dev-1", "")
	c, _, err := e.dial("dev-1", dev)
	require.NoError(t, err)
	defer c.CloseNow()
	send(t, c, heartbeat(t))
	e.waitDeclared("dev-1", true)
	// One capability field missing: the whole declaration is invalid.
	bad := bytes.Replace(heartbeat(t), []byte(`"streaming":true,`), nil, 1)
	require.NotEqual(t, heartbeat(t), bad)
	send(t, c, bad)
	assert.Equal(t, websocket.StatusPolicyViolation, closedWith(t, c))
	_, ok := e.gw.Snapshot("dev-1")
	assert.False(t, ok)
	d, err := e.store.GetDevice(context.Background(), "dev-1")
	require.NoError(t, err)
	assert.Nil(t, d.Declaration)
}

func TestNewerConnectionReplacesTheOlder(t *testing.T) {
	e := newEnv(t, true)
	dev := e.issue(store.KindDevice, "dev-1", "")
	old, _, err := e.dial("dev-1", dev)
	require.NoError(t, err)
	defer old.CloseNow()
	send(t, old, heartbeat(t))
	e.waitDeclared("dev-1", true)

	fresh, _, err := e.dial("dev-1", dev)
	require.NoError(t, err)
	defer fresh.CloseNow()
	assert.Equal(t, websocket.StatusCode(peer.StatusReplaced), closedWith(t, old))
	d, err := e.store.GetDevice(context.Background(), "dev-1")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), d.OwnerEpoch, "the owner epoch was fenced")
	assert.True(t, d.Connected, "the old connection's end does not take the device offline")
	assert.Nil(t, d.Declaration, "the newer connection inherits no declaration")
	_, ok := e.gw.Snapshot("dev-1")
	assert.False(t, ok)

	send(t, fresh, heartbeat(t))
	e.waitDeclared("dev-1", true)
	assert.Equal(t, []string{"dev-1"}, e.gw.Connected())
}

func TestReadDeadlineClosesASilentConnection(t *testing.T) {
	e := newEnv(t, true)
	dev := e.issue(store.KindDevice, "dev-1", "")
	c, _, err := e.dial("dev-1", dev)
	require.NoError(t, err)
	defer c.CloseNow()
	send(t, c, heartbeat(t))
	e.waitDeclared("dev-1", true)
	e.clock.Advance(61 * time.Second)
	assert.Equal(t, websocket.StatusPolicyViolation, closedWith(t, c))
	require.Eventually(t, func() bool {
		d, err := e.store.GetDevice(context.Background(), "dev-1")
		return err == nil && !d.Connected
	}, 10*time.Second, time.Millisecond)
}

// Bootstrap checks the credential before it reads a byte of the body: a
// caller with a wrong one is refused while its body has not even begun.
func TestBootstrapRefusesBeforeReadingTheBody(t *testing.T) {
	e := newEnv(t, true)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	// Headers that promise a body which never comes.
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: core\r\nAuthorization: Bearer not-a-credential\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", gateway.BootstrapPath)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second))) // a failure bound, not a wait
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "answered although no body byte was sent")
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

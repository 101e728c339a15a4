package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentwire-daemon-test")
	if err != nil {
		panic(err)
	}
	echoAgentDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

const secret = "cred-RECOGNISABLE-7f3a9c"

// core is a scripted Core: bootstrap and the WebSocket upgrade, with a hook
// that decides the upgrade's answer, and every accepted socket handed over.
type core struct {
	t        *testing.T
	srv      *httptest.Server
	upgrade  func(r *http.Request) int // 0 accepts
	accepted chan *websocket.Conn
	boots    atomic.Int32
	mu       sync.Mutex
	urls     []string
	bootCode int
	// answer, when set, edits bootstrap's answer before it is sent.
	answer func(b *daemon.Bootstrap, r *http.Request)
}

func newCore(t *testing.T) *core {
	c := &core{t: t, accepted: make(chan *websocket.Conn, 4)}
	mux := http.NewServeMux()
	mux.HandleFunc(daemon.BootstrapPath, func(w http.ResponseWriter, r *http.Request) {
		c.boots.Add(1)
		c.note(r)
		if c.bootCode != 0 {
			w.WriteHeader(c.bootCode)
			_, _ = w.Write([]byte(`{"error":"bad_credential","detail":"no"}`))
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+secret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var body struct {
			DeviceID string `json:"device_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		b := daemon.Bootstrap{DeviceID: body.DeviceID, WSURL: "ws://" + r.Host + daemon.WSPath + "?token=" + secret, HeartbeatSeconds: 15, ProtocolVersion: wire.Version}
		if c.answer != nil {
			c.answer(&b, r)
		}
		_ = json.NewEncoder(w).Encode(b)
	})
	mux.HandleFunc(daemon.WSPath, func(w http.ResponseWriter, r *http.Request) {
		c.note(r)
		if c.upgrade != nil {
			if code := c.upgrade(r); code != 0 {
				w.WriteHeader(code)
				_, _ = w.Write([]byte(`{"error":"incompatible_version"}`))
				return
			}
		}
		if r.Header.Get("Authorization") != "Bearer "+secret || r.URL.Query().Get("version") != wire.Version || r.URL.Query().Get("device_id") != "dev-1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.accepted <- ws
	})
	c.srv = httptest.NewServer(mux)
	t.Cleanup(c.srv.Close)
	return c
}

func (c *core) note(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.urls = append(c.urls, r.URL.String())
}

// logs collects every record at Debug and above.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func registry(t testing.TB, s script.Script) *harness.Registry {
	r := harness.NewRegistry()
	require.NoError(t, r.Register(script.New(s)))
	return r
}

type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, c *core, reg *harness.Registry, l *logs) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- daemon.Run(ctx, daemon.Config{
			CoreURL: c.srv.URL, DeviceID: "dev-1", Credential: daemon.NewCredential(secret), Registry: reg,
			Logger:     slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		})
	}()
	return r
}

func (r *running) stop(t *testing.T) error {
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not stop")
		return nil
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func read(t *testing.T, ws *websocket.Conn) *wire.Message {
	t.Helper()
	_, b, err := ws.Read(ctx(t))
	require.NoError(t, err)
	m, err := wire.Decode(b, wire.RuntimeToCore)
	require.NoError(t, err, string(b))
	return &m
}

func write(t *testing.T, ws *websocket.Conn, typ, id, payload string) {
	t.Helper()
	frame := `{"type":"` + typ + `","id":"` + id + `","payload":` + payload + `}`
	require.NoError(t, ws.Write(ctx(t), websocket.MessageText, []byte(frame)))
}

func accept(t *testing.T, c *core) *websocket.Conn {
	t.Helper()
	select {
	case ws := <-c.accepted:
		return ws
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not connect")
		return nil
	}
}

func TestFirstFrameIsAFullHeartbeat(t *testing.T) {
	c := newCore(t)
	l := &logs{}
	r := start(t, c, registry(t, script.Script{}), l)
	ws := accept(t, c)
	m := read(t, ws)
	require.Equal(t, "heartbeat", m.Type)
	hb := m.Payload.(wire.Heartbeat)
	// ts is Unix seconds, as the reference daemon sends it (a millisecond
	// value would be in the year 50,000 read as seconds).
	now := time.Now().Unix()
	assert.InDelta(t, now, hb.TS, 3600, "ts is the daemon's clock in Unix seconds")
	k, ok := hb.AgentKind(script.Kind)
	require.True(t, ok)
	assert.True(t, k.IsAvailable())
	require.NoError(t, k.Capabilities.Validate())
	_ = ws.CloseNow()
	require.NoError(t, r.stop(t))
}

func TestPermanentRefusalsStopWithWhatToFix(t *testing.T) {
	for name, tc := range map[string]struct {
		boot, upgrade int
		want          string
	}{
		"version 426":   {upgrade: http.StatusUpgradeRequired, want: "wire version"},
		"upgrade 403":   {upgrade: http.StatusForbidden, want: "credential"},
		"bootstrap 401": {boot: http.StatusUnauthorized, want: "credential"},
		// A wrong --core path: the URL tried is named, and what to pass.
		"bootstrap 404": {boot: http.StatusNotFound, want: "/api/v1/agent-daemon/bootstrap answered 404: no agentwire Core serves that URL; pass --core Core's base URL"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCore(t)
			c.bootCode = tc.boot
			c.upgrade = func(*http.Request) int { return tc.upgrade }
			r := start(t, c, registry(t, script.Script{}), &logs{})
			var err error
			select {
			case err = <-r.done:
			case <-time.After(10 * time.Second):
				t.Fatal("a permanent refusal did not stop the daemon")
			}
			r.cancel()
			var perm *daemon.Permanent
			require.True(t, errors.As(err, &perm), "%v", err)
			assert.Contains(t, perm.Error(), tc.want)
			assert.EqualValues(t, 1, c.boots.Load(), "never reconnects")
		})
	}
}

func TestRetiredCloseIsPermanent(t *testing.T) {
	c := newCore(t)
	r := start(t, c, registry(t, script.Script{}), &logs{})
	ws := accept(t, c)
	read(t, ws)
	require.NoError(t, ws.Close(4001, "retired"))
	var err error
	select {
	case err = <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("4001 did not stop the daemon")
	}
	r.cancel()
	var perm *daemon.Permanent
	require.ErrorAs(t, err, &perm)
	assert.Contains(t, perm.What, "4001")
}

// TestReconnectsWithoutReplay: a transient close leads to a new bootstrap
// and a new connection that starts with a heartbeat, and nothing of the
// old connection (its admission) is replayed or answered on the new one.
func TestReconnectsWithoutReplay(t *testing.T) {
	c := newCore(t)
	r := start(t, c, registry(t, script.Script{Steps: []script.Step{{Hang: true}}}), &logs{})
	ws := accept(t, c)
	read(t, ws)
	write(t, ws, "execution_prepare", "prepare-1", prepare)
	first := read(t, ws).Payload.(wire.PreparationStatus)
	assert.Equal(t, "preparing", first.State)
	require.NoError(t, ws.Close(websocket.StatusGoingAway, "bye"))

	ws2 := accept(t, c)
	m := read(t, ws2)
	assert.Equal(t, "heartbeat", m.Type)
	// The same request ID on the new connection is a fresh admission: a new
	// handle from revision 1, not the old one republished.
	write(t, ws2, "execution_prepare", "prepare-1", prepare)
	st := read(t, ws2).Payload.(wire.PreparationStatus)
	assert.Equal(t, wire.PreparationPreparing, st.State)
	assert.EqualValues(t, 1, st.Revision)
	assert.NotEqual(t, first.Handle, st.Handle)
	assert.GreaterOrEqual(t, c.boots.Load(), int32(2))
	_ = ws2.CloseNow()
	require.NoError(t, r.stop(t))
}

const prepare = `{"session_id":"3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b","configuration":{"agent_kind":"script","execution_controls":{"web_search":"disabled","text_verbosity":"medium"},"agent_state_key":"agents-api-3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b","strict_resume":true,"observe_tool_observations":true}}`

// TestSessionKeepsTheCredentialSecret runs a whole Turn with a recognisable
// credential and scans every log record, error and request URL for it.
func TestSessionKeepsTheCredentialSecret(t *testing.T) {
	c := newCore(t)
	l := &logs{}
	r := start(t, c, registry(t, script.Script{Steps: []script.Step{{Delta: "hel"}, {Delta: "lo"}}}), l)
	ws := accept(t, c)
	read(t, ws)
	write(t, ws, "execution_prepare", "prepare-1", prepare)
	assert.Equal(t, "preparing", read(t, ws).Payload.(wire.PreparationStatus).State)
	ready := read(t, ws).Payload.(wire.PreparationStatus)
	require.Equal(t, "ready", ready.State)
	write(t, ws, "execution_start", "prepare-1", `{"executor_id":"`+ready.ExecutorID+`","handle":"`+ready.Handle+`","run_id":"run-1","input":[{"content":[{"type":"input_text","text":"hi"}]}]}`)
	var types []string
	for {
		m := read(t, ws)
		if m.Type == "heartbeat" {
			continue
		}
		types = append(types, m.Type)
		if m.Type == "done" {
			assert.Equal(t, "hello", m.Payload.(wire.Done).Content)
			break
		}
	}
	assert.Equal(t, []string{"preparation_status", "preparation_status", "delta", "delta", "done"}, types)
	// An unknown frame type and a bad payload are logged, never with the credential.
	write(t, ws, "execution_start", "prepare-1", `{"bogus":1}`)
	_ = ws.Close(websocket.StatusGoingAway, "bye")
	ws2 := accept(t, c)
	read(t, ws2)
	_ = ws2.CloseNow()
	err := r.stop(t)

	require.NotEmpty(t, l.String())
	assert.NotContains(t, l.String(), secret)
	if err != nil {
		assert.NotContains(t, err.Error(), secret)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.urls {
		assert.NotContains(t, u, secret, "a credential travelled in a URL")
	}
	assert.NotContains(t, strings.Join(c.urls, " "), "token=")
}

// Bootstrap's answer cannot send the credential elsewhere: a ws_url off
// --core's origin (another host or port) or an interval no clock can use
// stops the daemon with what to fix, before any upgrade is tried.
func TestBootstrapAnswerIsCheckedBeforeTheCredentialTravels(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(b *daemon.Bootstrap, r *http.Request)
		want string
	}{
		"another port":      {func(b *daemon.Bootstrap, r *http.Request) { b.WSURL = "ws://127.0.0.1:1" + daemon.WSPath }, "is not on the origin of --core"},
		"another host":      {func(b *daemon.Bootstrap, r *http.Request) { b.WSURL = "ws://collector.example" + daemon.WSPath }, "is not on the origin of --core"},
		"not a websocket":   {func(b *daemon.Bootstrap, r *http.Request) { b.WSURL = "ftp://" + r.Host + daemon.WSPath }, "is not a WebSocket URL"},
		"huge interval":     {func(b *daemon.Bootstrap, r *http.Request) { b.HeartbeatSeconds = 1 << 40 }, "heartbeat_seconds 1099511627776 is outside 1..3600"},
		"negative interval": {func(b *daemon.Bootstrap, r *http.Request) { b.HeartbeatSeconds = -5 }, "is outside 1..3600"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCore(t)
			c.answer = tc.edit
			upgrades := atomic.Int32{}
			c.upgrade = func(*http.Request) int { upgrades.Add(1); return 0 }
			r := start(t, c, registry(t, script.Script{}), &logs{})
			var err error
			select {
			case err = <-r.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the daemon did not stop")
			}
			r.cancel()
			var perm *daemon.Permanent
			require.ErrorAs(t, err, &perm)
			assert.Contains(t, perm.Error(), tc.want)
			assert.Zero(t, upgrades.Load(), "no upgrade was tried")
		})
	}
}

// A connection Core replaces with a newer one of the same device means
// another daemon uses the device ID: the daemon says so and waits longer
// after each replacement in a row.
func TestReplacedConnectionsSayAnotherDaemonUsesTheDevice(t *testing.T) {
	c := newCore(t)
	l := &logs{}
	r := start(t, c, registry(t, script.Script{}), l)
	for range 3 {
		ws := accept(t, c)
		read(t, ws) // its first heartbeat
		require.NoError(t, ws.Close(websocket.StatusCode(peer.StatusReplaced), "replaced by a newer connection"))
	}
	accept(t, c)
	require.NoError(t, r.stop(t))
	out := l.String()
	assert.Contains(t, out, "another daemon is using this device ID")
	assert.Contains(t, out, `"replaced_in_a_row":3`, "counted in a row")
	assert.NotContains(t, out, `"replaced_in_a_row":4`)
}

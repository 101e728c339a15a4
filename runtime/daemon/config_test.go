package daemon_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// runWith runs the daemon against c with cfg's gaps filled in the way
// start fills them. A test that fails before it stops the daemon still
// stops it (before c's server closes, which waits for its connections).
func runWith(t *testing.T, c *core, cfg daemon.Config) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	ended := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Error("the daemon did not stop")
		}
	})
	if cfg.CoreURL == "" {
		cfg.CoreURL = c.srv.URL
	}
	cfg.DeviceID = "dev-1"
	if cfg.CredentialFile == "" {
		cfg.Credential = daemon.NewCredential(secret)
	}
	if cfg.Harnesses == nil {
		cfg.Registry = registry(t, script.Script{})
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs{}, nil))
	cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 4*time.Millisecond
	go func() {
		defer close(ended)
		r.done <- daemon.Run(ctx, cfg)
	}()
	return r
}

// offer records v unless ch is full: a daemon that keeps reconnecting
// must not block Core's handler (the server's Close would wait for it).
func offer(ch chan string, v string) {
	select {
	case ch <- v:
	default:
	}
}

// The embedder's version is what Core sees, in the heartbeat and in the
// bootstrap User-Agent; without one, agentwire's own.
func TestHeartbeatReportsTheConfiguredVersion(t *testing.T) {
	for name, tc := range map[string]struct{ set, want string }{
		"embedder's": {set: "acme-runtime-2.3.0", want: "acme-runtime-2.3.0"},
		"default":    {want: daemon.Version},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCore(t)
			agents := make(chan string, 4)
			c.answer = func(_ *daemon.Bootstrap, r *http.Request) { offer(agents, r.UserAgent()) }
			r := runWith(t, c, daemon.Config{Version: tc.set})
			ws := accept(t, c)
			m := read(t, ws)
			require.Equal(t, "heartbeat", m.Type)
			assert.Equal(t, tc.want, m.Payload.(wire.Heartbeat).DaemonVersion)
			assert.Equal(t, "agentwire-daemon/"+tc.want, <-agents)
			_ = ws.CloseNow()
			require.NoError(t, r.stop(t))
		})
	}
}

// A version that cannot be sent in a header stops Run at once instead of
// failing every bootstrap.
func TestUnsendableVersionIsRefused(t *testing.T) {
	c := newCore(t)
	r := runWith(t, c, daemon.Config{Version: "1.0\r\nX-Evil: 1"})
	select {
	case err := <-r.done:
		require.ErrorContains(t, err, "Config.Version")
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not refuse the version")
	}
	r.cancel()
	assert.Zero(t, c.boots.Load())
}

// Every connection the daemon makes goes through Config.HTTPClient's
// Transport: Core is named by an address nothing listens on, and only the
// custom dialer knows where Core really is, so bootstrap and the WebSocket
// upgrade succeed only through it. Keep-alives are off, so each of them is
// a dial of its own.
func TestEveryConnectionGoesThroughTheConfiguredDialer(t *testing.T) {
	c := newCore(t)
	real, err := url.Parse(c.srv.URL)
	require.NoError(t, err)
	var mu sync.Mutex
	var dialed []string
	var d net.Dialer
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			return d.DialContext(ctx, network, real.Host)
		},
	}}
	paths := make(chan string, 8)
	c.answer = func(_ *daemon.Bootstrap, r *http.Request) { offer(paths, r.URL.Path) }
	r := runWith(t, c, daemon.Config{CoreURL: "http://127.0.0.1:1", HTTPClient: client})
	ws := accept(t, c)
	assert.Equal(t, "heartbeat", read(t, ws).Type)
	assert.Equal(t, daemon.BootstrapPath, <-paths)
	_ = ws.CloseNow()
	require.NoError(t, r.stop(t))
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(dialed), 2, "bootstrap and the upgrade each dialled")
	for _, a := range dialed {
		assert.Equal(t, "127.0.0.1:1", a, "every dial is for Core's configured address")
	}
}

// Harnesses named in Config are registered and declared like a Registry's;
// one whose declaration is incomplete stops Run before any connection.
func TestConfigHarnessesAreRegistered(t *testing.T) {
	c := newCore(t)
	r := runWith(t, c, daemon.Config{Harnesses: []harness.Adapter{script.New(script.Script{Kind: "mine"})}})
	ws := accept(t, c)
	_, ok := read(t, ws).Payload.(wire.Heartbeat).AgentKind("mine")
	assert.True(t, ok, "the heartbeat declares the kind")
	_ = ws.CloseNow()
	require.NoError(t, r.stop(t))

	bad := undecided{}
	r = runWith(t, c, daemon.Config{Harnesses: []harness.Adapter{bad}})
	select {
	case err := <-r.done:
		require.ErrorContains(t, err, "Config.Harnesses")
		require.ErrorContains(t, err, "unspecified")
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not refuse the declaration")
	}
	assert.EqualValues(t, 1, c.boots.Load(), "no bootstrap for the refused configuration")
}

// undecided declares a kind without deciding its capabilities.
type undecided struct{ harness.Adapter }

func (undecided) Declaration() harness.Declaration { return harness.Declaration{Kind: "half"} }

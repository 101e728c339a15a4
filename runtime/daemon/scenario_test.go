package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/peer/scenario"
	execadapter "github.com/agentwire/agentwire/runtime/adapters/exec"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// echoAgentDir (made by TestMain) holds the example agent, built once.
var (
	echoAgentDir  string
	echoAgentOnce sync.Once
	echoAgentErr  error
)

func buildEchoAgent(t *testing.T) string {
	path := filepath.Join(echoAgentDir, "echo-agent")
	echoAgentOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", path, "../../examples/echo-agent").CombinedOutput()
		if err != nil {
			echoAgentErr = fmt.Errorf("%w: %s", err, out)
		}
	})
	require.NoError(t, echoAgentErr, "building the example agent")
	return path
}

// TestRuntimeScenarios runs every transcript under spec/scenarios/runtime
// with the real daemon and the script adapter against the scripted Core,
// over a real WebSocket on loopback. `go test ./runtime/daemon -run
// TestRuntimeScenarios -rewrite` records new behaviour for review.
func TestRuntimeScenarios(t *testing.T) {
	files, err := filepath.Glob("../../spec/scenarios/runtime/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p := &scenarioPeer{clock: peer.NewManualClock(time.Unix(1_800_000_000, 0))}
			scenario.RunScripted(t, f, scenario.ScriptedOptions{Start: p.start, Advance: p.advance, Ended: p.ended})
		})
	}
}

// TestWireScenarios runs the Runtime side of every shared wire transcript
// under spec/scenarios/wire: the real daemon against a scripted Core that
// plays Core's lines (core/server's TestWireScenarios runs the other side).
func TestWireScenarios(t *testing.T) {
	files, err := filepath.Glob("../../spec/scenarios/wire/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p := &scenarioPeer{clock: peer.NewManualClock(time.Unix(1_800_000_000, 0))}
			scenario.RunWireRuntime(t, f, scenario.WireOptions{Start: p.start, Advance: p.advance, Ended: p.ended})
		})
	}
}

// scenarioPeer is the daemon of one scenario: it runs on a manual clock
// the transcript moves with "advance", so the protocol's fixed timers (the
// 5-minute admission expiry, the 10 s write bound, the 15 s drain) fire
// without a real wait.
type scenarioPeer struct {
	clock *peer.ManualClock
	mu    sync.Mutex
	conn  *peer.Conn  // the current connection
	end   chan string // what daemon.Run returned, once it did
}

func (p *scenarioPeer) start(t *testing.T, coreURL, setup string) func() {
	p.end = make(chan string, 1)
	return startDaemon(t, coreURL, setup, p.clock, func(c *peer.Conn) {
		p.mu.Lock()
		p.conn = c
		p.mu.Unlock()
	}, p.end)
}

// ended waits for daemon.Run to return by itself (a permanent refusal).
func (p *scenarioPeer) ended(t *testing.T, within time.Duration) (string, bool) {
	select {
	case res := <-p.end:
		// The wire version changes with the protocol, not the scenario.
		return strings.ReplaceAll(res, wire.Version, "<wire version>"), true
	case <-time.After(within):
		return "", false
	}
}

// advance first runs a no-op on the connection's loop: the loop reports
// each written frame to the driver before it takes the next request, so
// every deadline armed by a frame Core has already read is set before the
// clock moves.
func (p *scenarioPeer) advance(t *testing.T, d time.Duration) {
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = c.Do(ctx, func(*peer.Driver) {})
		cancel()
	}
	p.clock.Advance(d)
}

// startDaemon runs the daemon with one script adapter configured by setup
// (a script.Script as JSON) and the capacity the daemon ships with
// (execution.DefaultMaxActive): a settled Run's Executor close holds its
// slot until the close returned, after done was sent, so a scenario whose
// Runs follow each other must not run on one slot. A capacity scenario
// sets "max_active": 1 to stay short.
//
// An "environments" member of setup binds Environments by ID, each to a
// populated workspace directory of its own (scenarioEnvironments); without
// it the daemon binds none.
//
// A setup of {"exec": "echo-agent"} registers the exec adapter (kind
// "echo") running examples/echo-agent, built with go build, instead.
func startDaemon(t *testing.T, coreURL, setup string, clock peer.Clock, onConnected func(*peer.Conn), end chan<- string) func() {
	var s script.Script
	var sel struct {
		Exec      string `json:"exec"`
		MaxActive int    `json:"max_active"`
	}
	if setup != "" {
		require.NoError(t, json.Unmarshal([]byte(setup), &s), "the start directive's script")
		require.NoError(t, json.Unmarshal([]byte(setup), &sel))
	}
	reg := registry(t, s)
	if sel.Exec != "" {
		require.Equal(t, "echo-agent", sel.Exec, "the only example agent")
		a, err := execadapter.New(execadapter.Config{Kind: "echo", Command: buildEchoAgent(t),
			CapabilityFile: "../../examples/echo-agent/capabilities.json", Grace: time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		reg = harness.NewRegistry()
		require.NoError(t, reg.Register(a))
	}
	envs := scenarioEnvironments(t, setup)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A scenario's end abandons what the daemon could not close (a script
	// whose close fails would otherwise keep the shutdown waiting).
	abandon := make(chan struct{})
	go func() {
		defer close(done)
		err := daemon.Run(ctx, daemon.WithOnConnected(daemon.Config{
			Abandon: abandon,
			CoreURL: coreURL, DeviceID: "runtime", Credential: daemon.NewCredential("synthetic-contract-credential"),
			Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, MaxActive: sel.MaxActive,
			Clock: clock, Environments: envs,
		}, onConnected))
		res := "nil"
		if err != nil {
			res = err.Error()
		}
		end <- res
	}()
	return func() {
		cancel()
		close(abandon)
		<-done
	}
}

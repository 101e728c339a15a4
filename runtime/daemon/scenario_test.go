package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/peer/scenario"
	execadapter "github.com/agentwire/agentwire/runtime/adapters/exec"
	"github.com/agentwire/agentwire/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
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
			scenario.RunScripted(t, f, scenario.ScriptedOptions{Start: startDaemon})
		})
	}
}

// startDaemon runs the daemon with one script adapter configured by setup
// (a script.Script as JSON) and a capacity of 1 active Turn, so that
// capacity scenarios stay short.
//
// A setup of {"exec": "echo-agent"} registers the exec adapter (kind
// "echo") running examples/echo-agent, built with go build, instead.
func startDaemon(t *testing.T, coreURL, setup string) func() {
	var s script.Script
	var sel struct {
		Exec string `json:"exec"`
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = daemon.Run(ctx, daemon.Config{
			CoreURL: coreURL, DeviceID: "runtime", Credential: daemon.NewCredential("synthetic-contract-credential"),
			Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, MaxActive: 1,
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

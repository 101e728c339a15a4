package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/peer/scenario"
	"github.com/agentwire/agentwire/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
)

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
func startDaemon(t *testing.T, coreURL, setup string) func() {
	var s script.Script
	if setup != "" {
		require.NoError(t, json.Unmarshal([]byte(setup), &s), "the start directive's script")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = daemon.Run(ctx, daemon.Config{
			CoreURL: coreURL, DeviceID: "runtime", Credential: daemon.NewCredential("synthetic-contract-credential"),
			Registry: registry(t, s), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, MaxActive: 1,
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

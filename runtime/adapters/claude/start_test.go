package claude

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/childproc/childproctest"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// TestFailedStartHandsBackAnUnclosedCLI: a start that fails closes the
// CLI; when that close cannot confirm the process ended, the Executor
// comes back with the error, still owning the live process, and a later
// close settles it (daemon-protocol.txt:177). A start whose close
// succeeded returns no Executor.
func TestFailedStartHandsBackAnUnclosedCLI(t *testing.T) {
	start := func(t *testing.T, bin string) (harness.Executor, error) {
		a, err := New(Config{Binary: bin, Model: "scripted-model", StateDir: t.TempDir(),
			CloseGrace: 50 * time.Millisecond, // the failed start's close gives up after three graces
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		require.True(t, a.Declaration().Available)
		return a.NewExecutor(t.Context(), harness.ExecutorConfig{SessionID: "ses-1", Declaration: a.Declaration(),
			Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: "agents-api-ses-1"}})
	}
	t.Run("close_unconfirmed", func(t *testing.T) {
		exe, err := start(t, childproctest.StrayBinary(t, pinnedVersionLine))
		require.ErrorContains(t, err, "initialize", "the start's own failure is kept")
		require.ErrorIs(t, err, context.DeadlineExceeded, "the unconfirmed close is reported with it")
		require.NotNil(t, exe, "a live CLI was dropped")
		e := exe.(*executor)
		pid := e.proc.Pid()
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		require.True(t, e.proc.Alive())

		// The owner's cleanup retries the close; here the stray is ended
		// by its pid, as no signal to its old group reaches it.
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, exe.Close(ctx))
		assert.False(t, e.proc.Alive())
	})
	t.Run("closed", func(t *testing.T) {
		// The fake exits at once: the start fails (EOF or a broken pipe)
		// and its close confirms the exit.
		bin := filepath.Join(t.TempDir(), "claude")
		require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\necho '"+pinnedVersionLine+"'\n"), 0o755))
		exe, err := start(t, bin)
		require.Error(t, err)
		assert.Nil(t, exe)
	})
}

package codex

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/childproc/childproctest"
)

// TestFailedStartHandsBackAnUnclosedAppServer: a start that fails closes
// the app-server; when that close cannot confirm the process ended, the
// Executor comes back with the error, still owning the live process, and a
// later close settles it (daemon-protocol.txt:177). A start whose close
// succeeded returns no Executor.
func TestFailedStartHandsBackAnUnclosedAppServer(t *testing.T) {
	t.Run("close_unconfirmed", func(t *testing.T) {
		cfg := testConfig(childproctest.StrayBinary(t, pinnedVersionLine))
		cfg.StateDir = t.TempDir()
		cfg.CloseGrace = 50 * time.Millisecond // the failed start's close gives up after three graces
		a, err := New(cfg)
		require.NoError(t, err)
		require.True(t, a.Declaration().Available)

		exe, err := a.NewExecutor(t.Context(), hcfg(a, ""))
		require.Error(t, err)
		require.ErrorContains(t, err, "initialize", "the start's own failure is kept")
		require.ErrorIs(t, err, context.DeadlineExceeded, "the unconfirmed close is reported with it")
		require.NotNil(t, exe, "a live app-server was dropped")
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
		cfg := testConfig(fakeCodex(t, pinnedVersionLine))
		cfg.StateDir = t.TempDir()
		a, err := New(cfg)
		require.NoError(t, err)
		exe, err := a.NewExecutor(t.Context(), hcfg(a, ""))
		require.Error(t, err)
		assert.Nil(t, exe)
	})
}

// Package childproctest fakes, for an adapter's tests, a native CLI that
// outlives its own close: a process that leaves the process group
// childproc gives it, so that neither the signals childproc.Stop sends the
// group nor its kill reach it. An adapter's close then cannot confirm the
// process ended, which is the case a failed start must hand its Executor
// back for (daemon-protocol.txt:177). A real CLI gets there by a helper
// that escapes the group or a kill the kernel cannot deliver in time; the
// fake gets there deterministically.
package childproctest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const strayEnv = "AGENTWIRE_CHILDPROCTEST_STRAY"

// MainHook makes the test binary the stray when StrayBinary started it;
// call it first in TestMain. Otherwise it returns at once.
//
// The stray joins its parent's process group (the test binary's), then
// closes its stdout, so the adapter's start fails at once on EOF with the
// stray already out of reach. It ends when it is killed by its pid or when
// its parent, the test, is gone.
func MainHook() {
	if os.Getenv(strayEnv) != "1" {
		return
	}
	parent := os.Getppid()
	pg, err := syscall.Getpgid(parent)
	if err == nil {
		err = syscall.Setpgid(0, pg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "childproctest: the stray could not leave its process group:", err)
		os.Exit(2)
	}
	_ = os.Stdout.Close()
	// Polling the parent is how an orphan learns the test ended; no
	// signal tells it.
	for os.Getppid() == parent {
		time.Sleep(50 * time.Millisecond)
	}
	os.Exit(0)
}

// StrayBinary writes an executable that answers --version with
// versionLine (so the adapter declares its kind available) and otherwise
// runs the test binary as the stray (MainHook).
func StrayBinary(t *testing.T, versionLine string) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "stray-cli")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = --version ]; then echo '" + versionLine + "'; exit 0; fi\n" +
		strayEnv + "=1; export " + strayEnv + "\n" +
		"exec '" + self + "' -test.run='^$'\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

//go:build !linux

package main

import "testing"

// awaitStopped is implemented for Linux only: it reads the threads' states
// in /proc. Without it a frozen process may still run for a while after
// kill(2) returned, and a test that relies on the freeze would flake.
func awaitStopped(t *testing.T, pid int) {
	t.Skip("awaiting a process's stop reads /proc, which is Linux only")
}

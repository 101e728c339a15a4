//go:build unix

package daemon_test

import "syscall"

// cpuClock returns the CPU time this process has used, user and system:
// the daemon's and the scripted Core's together (or the baseline's two
// ends). On the shared VM, wall time swings with other processes' load;
// CPU time much less.
func cpuClock() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

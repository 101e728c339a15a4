//go:build unix

package server_test

import "syscall"

// processCPU returns the CPU time this process has used, user and system.
// The paired transfer benchmarks report it per op beside wall time: on a
// shared machine wall time swings with other processes' load, while the
// CPU a transfer costs (Core's and the in-process Runtime's) does not.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

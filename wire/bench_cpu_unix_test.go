//go:build unix

package wire

import (
	"syscall"
	"testing"
)

// cpuClock returns the CPU time this process has used, user and system.
// On a shared machine, wall time per op swings with other processes' load;
// CPU time (with -cpu 1, so that GC work is counted once) is what the
// decoder itself costs.
func cpuClock() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU reports the CPU time per op since start as cpu-ns/op.
func reportCPU(b *testing.B, start int64) {
	if start > 0 && b.N > 0 {
		b.ReportMetric(float64(cpuClock()-start)/float64(b.N), "cpu-ns/op")
	}
}

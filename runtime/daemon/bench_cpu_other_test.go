//go:build !unix

package daemon_test

// cpuClock is not measured here: the cpu-ns metrics read 0.
func cpuClock() int64 { return 0 }

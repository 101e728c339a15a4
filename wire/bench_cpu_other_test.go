//go:build !unix

package wire

import "testing"

func cpuClock() int64 { return 0 }

func reportCPU(*testing.B, int64) {}

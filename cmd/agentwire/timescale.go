package main

import (
	"flag"
	"os"

	"github.com/agentwire/agentwire/internal/peer"
)

// timeScaleFlag registers --time-scale, the test-only option that runs the
// protocol's fixed timers (the 5-minute admission expiry, the 30 s and 15 s
// receipt waits) faster, so real-process tests need not wait them out.
func timeScaleFlag(fs *flag.FlagSet) *float64 {
	return fs.Float64("time-scale", 1, "test only: run every timer this many times faster; refused unless "+peer.TimeScaleEnv+"=1")
}

// timeScaleClock is the clock for --time-scale: the system clock at 1, and
// an error for any other factor unless the environment allows it.
func timeScaleClock(factor float64) (peer.Clock, error) {
	return peer.ScaledClock(factor, os.Getenv(peer.TimeScaleEnv) == "1")
}

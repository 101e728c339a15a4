package modelcheck

import (
	"testing"
)

// BenchmarkExplore explores a fixed bound of the CI composition; states/s
// is the rate BENCHMARKS.md records. The spec is loaded once, outside the
// timed loop.
func BenchmarkExplore(b *testing.B) {
	m := loadSpec(b)
	cfg := Config{Model: m, Machines: []string{"preparation", "run", "input"},
		Bounds: Bounds{Depth: 10, Runs: 1, Inputs: 1, Faults: 1, Reconnects: 1, Revisions: 4, ReadOnly: true}}
	var states int
	for b.Loop() {
		rep, err := Check(cfg)
		if err != nil {
			b.Fatal(err)
		}
		states = rep.States
	}
	b.ReportMetric(float64(states)*float64(b.N)/b.Elapsed().Seconds(), "states/s")
	b.ReportMetric(float64(states), "states")
}

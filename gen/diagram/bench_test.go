package diagram

import (
	"context"
	"testing"
)

// BenchmarkSVG measures one render of the test machine (7 states, 11 edges).
func BenchmarkSVG(b *testing.B) {
	dot := DOT(loadLease(b))
	for b.Loop() {
		if _, err := SVG(context.Background(), dot); err != nil {
			b.Fatal(err)
		}
	}
}

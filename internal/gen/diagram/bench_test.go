package diagram

import (
	"context"
	"github.com/agentwire/agentwire/internal/gen/diagram/render"
	"testing"
)

// BenchmarkSVG measures one render of the test machine (7 states, 11 edges).
func BenchmarkSVG(b *testing.B) {
	dot := DOT(loadLease(b))
	for b.Loop() {
		if _, err := render.SVG(context.Background(), dot); err != nil {
			b.Fatal(err)
		}
	}
}

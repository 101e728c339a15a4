package diagram

import (
	"bytes"
	"context"
	"github.com/agentwire/agentwire/internal/gen/diagram/render"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxAspect is the widest picture, width over height, that a machine's
// chosen direction may give: preparation at 2.75:1 was unreadable in GitHub's
// column.
const maxAspect = 2.5

var svgSizeRE = regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`)

// svgAspect renders dot and returns the picture's width over its height.
func svgAspect(t *testing.T, dot []byte) (aspect, width, height float64) {
	t.Helper()
	svg, err := render.SVG(context.Background(), dot)
	require.NoError(t, err)
	m := svgSizeRE.FindSubmatch(svg)
	require.NotNil(t, m, "no size on the svg element")
	width, err = strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	height, err = strconv.ParseFloat(string(m[2]), 64)
	require.NoError(t, err)
	require.Positive(t, height)
	return width / height, width, height
}

// TestSVGAspect lays out every machine in spec/ in both directions and checks
// that the chosen one is not too wide. With -v it prints both ratios, the
// figures behind layouts.
func TestSVGAspect(t *testing.T) {
	for _, m := range append(specMachines(t), loadLease(t)) {
		t.Run(m.Name, func(t *testing.T) {
			chosen := layoutOf(m).dot
			other := map[string]string{topToBottom: leftToRight, leftToRight: topToBottom}[chosen]
			dot := DOT(m)
			setting := []byte("rankdir=" + chosen + " ")
			require.Equal(t, 1, bytes.Count(dot, setting), "DOT of %s does not say %s", m.Name, setting)

			got, w, h := svgAspect(t, dot)
			alt, aw, ah := svgAspect(t, bytes.Replace(dot, setting, []byte("rankdir="+other+" "), 1))
			t.Logf("%s: %s %.0fx%.0fpt %.2f:1 (chosen), %s %.0fx%.0fpt %.2f:1", m.Name, chosen, w, h, got, other, aw, ah, alt)
			assert.LessOrEqual(t, got, maxAspect,
				"the %s picture of %s is %.2f:1 wide (%s gives %.2f:1): choose its direction in layouts", chosen, m.Name, got, other, alt)
		})
	}
}

// TestLayoutsNameSpecMachines keeps layouts from outliving a renamed machine.
func TestLayoutsNameSpecMachines(t *testing.T) {
	names := map[string]bool{}
	for _, m := range specMachines(t) {
		names[m.Name] = true
	}
	for name, l := range layouts {
		assert.True(t, names[name], "layouts names %s, which is no machine in spec/", name)
		for _, dir := range []string{l.mermaid, l.dot} {
			assert.Contains(t, []string{topToBottom, leftToRight}, dir, name)
		}
	}
}

package diagram

import "github.com/agentwire/agentwire/spec"

// Directions in which the ranks of a diagram run, spelled as both Mermaid's
// `direction` statement and Graphviz's rankdir spell them.
const (
	topToBottom = "TB"
	leftToRight = "LR"
)

// layout is the direction of each rendering of one machine. Mermaid (dagre)
// and Graphviz lay the same graph out differently, and the Graphviz picture
// carries effects under every trigger, so the two are chosen separately.
type layout struct {
	mermaid, dot string
}

// layouts holds the direction chosen for each machine in spec/: the one
// whose picture is nearest square, because GitHub scales a diagram down to
// the width of its column and a picture three times wider than high ends up
// with unreadable text (preparation was 2.75:1).
//
// Graphviz is deterministic, and TestSVGAspect prints both directions of
// every machine (go test -run TestSVGAspect -v ./gen/diagram). Mermaid's
// layout differs between its releases, and which one GitHub runs is not
// published, so its direction is the one whose widest render across Mermaid
// 11 and 12 is narrowest; `make diagrams-browser-check` prints the ratios.
// Top to bottom won for every machine, by a wide margin except transfer
// (2.27:1 at worst against 2.43:1 left to right) and input (2.03 against
// 3.36). A machine not listed runs top to bottom in both.
var layouts = map[string]layout{
	"connection":      {mermaid: topToBottom, dot: topToBottom},
	"input":           {mermaid: topToBottom, dot: leftToRight},
	"interaction":     {mermaid: topToBottom, dot: topToBottom},
	"preparation":     {mermaid: topToBottom, dot: leftToRight},
	"run":             {mermaid: topToBottom, dot: topToBottom},
	"suspension":      {mermaid: topToBottom, dot: topToBottom},
	"transfer":        {mermaid: topToBottom, dot: leftToRight},
	"workspace_read":  {mermaid: topToBottom, dot: leftToRight},
	"workspace_write": {mermaid: topToBottom, dot: leftToRight},
}

func layoutOf(m *spec.Machine) layout {
	if l, ok := layouts[m.Name]; ok {
		return l
	}
	return layout{mermaid: topToBottom, dot: topToBottom}
}

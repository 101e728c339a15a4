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
// whose picture is nearer square, because GitHub scales a diagram down to
// the width of its column and a picture three times wider than high ends up
// with unreadable text. The Graphviz ratios are checked by TestSVGAspect
// (go test -run TestSVGAspect -v ./gen/diagram prints both directions); the
// Mermaid ones are measured in a browser by `make diagrams-browser-check`.
// A machine not listed runs top to bottom, Mermaid's own default.
var layouts = map[string]layout{
	"connection":      {mermaid: topToBottom, dot: topToBottom},
	"input":           {mermaid: leftToRight, dot: leftToRight},
	"interaction":     {mermaid: leftToRight, dot: topToBottom},
	"preparation":     {mermaid: topToBottom, dot: leftToRight},
	"run":             {mermaid: topToBottom, dot: topToBottom},
	"suspension":      {mermaid: topToBottom, dot: topToBottom},
	"transfer":        {mermaid: leftToRight, dot: leftToRight},
	"workspace_read":  {mermaid: topToBottom, dot: leftToRight},
	"workspace_write": {mermaid: topToBottom, dot: leftToRight},
}

func layoutOf(m *spec.Machine) layout {
	if l, ok := layouts[m.Name]; ok {
		return l
	}
	return layout{mermaid: topToBottom, dot: topToBottom}
}

package gen

import (
	"context"
	"fmt"
	"path"

	"github.com/agentwire/agentwire/gen/diagram"
	"github.com/agentwire/agentwire/spec"
)

// docsDir is where the reviewer-facing outputs of every machine go.
const docsDir = "docs/machines"

// renderDocs adds the Mermaid and DOT diagrams, the SVG picture and the
// Markdown reference page of m.
func renderDocs(ctx context.Context, out Files, m *spec.Machine, cfg Config) error {
	base := path.Join(docsDir, m.Name)
	dot := diagram.DOT(m)
	out[base+".mmd"] = diagram.Mermaid(m)
	out[base+".dot"] = dot
	out[base+".md"] = diagram.Page(m)
	if cfg.SkipSVG {
		return nil
	}
	svg, err := diagram.SVG(ctx, dot)
	if err != nil {
		return fmt.Errorf("%s.svg: %w", base, err)
	}
	out[base+".svg"] = svg
	return nil
}

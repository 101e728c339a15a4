// Package gen turns a validated spec.Model into files: the typed machines
// and their tests under fsm/, and the diagrams and reference pages under
// docs/machines/. It does no file I/O; cmd/agentwire writes what it returns.
package gen

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"path"
	"sort"

	"github.com/dave/jennifer/jen"

	"github.com/agentwire/agentwire/spec"
)

// Config tunes what Generate renders.
type Config struct {
	// SkipSVG leaves out the SVG diagrams, which are the one slow output
	// (Graphviz runs as WebAssembly); golden tests of the Go code use it.
	SkipSVG bool
	// SVG lays out each machine's DOT diagram as SVG (render.SVG, which
	// only the generator's command links); required unless SkipSVG.
	SVG SVGRenderer
	// Module is the import path of the Go module the files are written
	// into: fsm/machines imports each machine's package under it. Empty
	// means this repository's module.
	Module string
}

// SVGRenderer lays out a DOT graph as SVG.
type SVGRenderer func(ctx context.Context, dot []byte) ([]byte, error)

// DefaultModule is agentwire's own module path.
const DefaultModule = "github.com/agentwire/agentwire"

// Files maps a slash-separated path relative to the repository root to its
// content.
type Files map[string][]byte

// Paths returns the file paths in sorted order.
func (fs Files) Paths() []string {
	out := make([]string, 0, len(fs))
	for p := range fs {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// OutputDirs are the directories the generator writes into, relative to the
// repository root: the one list the writer (stale-file removal), the
// verification, the Makefile (`agentwire-gen generate --dirs`) and the docs use.
// The generator owns only the files there that carry its header; wire/ also
// holds hand-written code.
var OutputDirs = []string{"fsm", docsDir, "docs/wire", wireDir, consoleDiagramsDir}

// Generate renders every output of every machine in model. Output depends
// only on the model, so two runs produce identical bytes. It fails, writing
// nothing, if any single file fails to render.
func Generate(ctx context.Context, model *spec.Model, cfg Config) (Files, error) {
	out := Files{}
	for _, m := range model.Machines {
		dir := path.Join("fsm", m.Name)
		mf, err := machineFile(m)
		if err != nil {
			return nil, err
		}
		if err := render(out, path.Join(dir, m.Name+".go"), mf); err != nil {
			return nil, err
		}
		if err := render(out, path.Join(dir, m.Name+"_test.go"), testFile(m)); err != nil {
			return nil, err
		}
		if err := renderDocs(ctx, out, m, cfg); err != nil {
			return nil, err
		}
	}
	if err := render(out, path.Join("fsm", registryPkg, registryPkg+".go"), registryFile(model, cfg.module())); err != nil {
		return nil, err
	}
	out[docsDir+"/README.md"] = indexPage(model)
	if err := consoleDiagrams(out, model); err != nil {
		return nil, err
	}
	if model.Capabilities != nil {
		if err := render(out, wireDir+"/capabilities_gen.go", capabilitiesFile(model.Capabilities)); err != nil {
			return nil, err
		}
		if err := render(out, wireDir+"/capabilities_gen_test.go", capabilitiesTestFile(model.Capabilities)); err != nil {
			return nil, err
		}
	}
	if model.Catalog != nil {
		if err := render(out, wireDir+"/catalog_gen.go", catalogFile(model.Catalog)); err != nil {
			return nil, err
		}
		if err := render(out, wireDir+"/catalog_gen_test.go", catalogTestFile(model.Catalog)); err != nil {
			return nil, err
		}
		out["docs/wire/catalog.md"] = catalogPage(model.Catalog, model.Capabilities)
	}
	return out, nil
}

func (c Config) module() string {
	if c.Module == "" {
		return DefaultModule
	}
	return c.Module
}

func render(out Files, name string, f *jen.File) error {
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	src, err := format.Source(spaceDecls(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("gofmt %s: %w", name, err)
	}
	out[name] = src
	return nil
}

// spaceDecls puts a blank line between top-level declarations, which
// jennifer writes back to back: a "}" or ")" closing one at column 0
// followed directly by the next declaration or its comment.
func spaceDecls(src []byte) []byte {
	lines := bytes.Split(src, []byte("\n"))
	out := make([][]byte, 0, len(lines)+len(lines)/8)
	for i, line := range lines {
		if i > 0 {
			prev := lines[i-1]
			closes := bytes.Equal(prev, []byte("}")) || bytes.Equal(prev, []byte(")"))
			opens := false
			for _, kw := range []string{"func ", "type ", "var ", "const ", "//"} {
				if bytes.HasPrefix(line, []byte(kw)) {
					opens = true
				}
			}
			if closes && opens {
				out = append(out, nil)
			}
		}
		out = append(out, line)
	}
	return bytes.Join(out, []byte("\n"))
}

// IsGenerated reports whether content starts with this generator's header,
// which is how the writer tells its own stale outputs from hand-written files.
// The header sits on the first line, or the second after an XML declaration.
func IsGenerated(content []byte) bool {
	for i, line := range bytes.SplitN(content, []byte("\n"), 3) {
		if i == 2 {
			break
		}
		if bytes.Contains(line, []byte("Code generated by agentwire from ")) && bytes.Contains(line, []byte("DO NOT EDIT.")) {
			return true
		}
	}
	return false
}

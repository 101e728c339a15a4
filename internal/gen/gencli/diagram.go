package gencli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"strings"

	"github.com/agentwire/agentwire/internal/gen"
	"github.com/agentwire/agentwire/internal/gen/diagram"
	"github.com/agentwire/agentwire/spec"
)

// Diagram is the diagram command. svg lays out the svg format; a command
// built without the renderer passes nil, and --format svg then says where
// the renderer is.
func Diagram(args []string, stdout, stderr io.Writer, svg gen.SVGRenderer) error {
	fs := newFlags("diagram [flags] MACHINE", "Prints one machine's state diagram, drawn from the spec tables in --spec (or, away from a\n"+
		"checkout, the tables built into this binary).",
		[]string{"agentwire diagram run", "agentwire-gen diagram preparation --format svg > preparation.svg"}, stderr)
	format := fs.String("format", "mermaid", "mermaid, dot or svg")
	specDir := fs.String("spec", "spec", "directory holding the machine tables")
	if done, err := parse(fs, args); done {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fs, "want one MACHINE, got %d arguments", fs.NArg())
	}
	if !oneOf(*format, "mermaid", "dot", "svg") {
		return usageError(fs, "unknown --format %q (mermaid, dot or svg)", *format)
	}
	name := fs.Arg(0)
	fsys, label := iofs.FS(os.DirFS(*specDir)), *specDir
	specGiven := false
	fs.Visit(func(f *flag.Flag) { specGiven = specGiven || f.Name == "spec" })
	if _, err := os.Stat(*specDir); !specGiven && errors.Is(err, iofs.ErrNotExist) {
		// Away from a checkout: the tables this binary was built from.
		fsys, label = spec.Embedded, "the spec built into this binary"
	}
	if _, err := os.Stat(*specDir); specGiven && err != nil {
		return fmt.Errorf("--spec %s: %w (the directory holding the machine tables, spec/ of a checkout)", *specDir, err)
	}
	model, err := spec.LoadDir(fsys, ".", label)
	if err != nil {
		return err
	}
	m, ok := model.Machine(name)
	if !ok {
		var names []string
		for _, mc := range model.Machines {
			names = append(names, mc.Name)
		}
		return fmt.Errorf("diagram: no machine %q in %s (have: %s)", name, *specDir, strings.Join(names, ", "))
	}
	var out []byte
	switch *format {
	case "mermaid":
		out = diagram.Mermaid(m)
	case "dot":
		out = diagram.DOT(m)
	case "svg":
		if svg == nil {
			return fmt.Errorf("diagram: --format svg needs the SVG renderer, which only the generator's command links: go run ./cmd/agentwire-gen diagram %s --format svg", name)
		}
		if out, err = svg(context.Background(), diagram.DOT(m)); err != nil {
			return fmt.Errorf("diagram: %w", err)
		}
	}
	_, err = stdout.Write(out)
	return err
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

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

	"github.com/agentwire/agentwire/gen/diagram"
	"github.com/agentwire/agentwire/spec"
)

func Diagram(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("diagram", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentwire diagram <machine> [--format mermaid|dot|svg] [--spec dir]")
		fs.PrintDefaults()
	}
	format := fs.String("format", "mermaid", "mermaid, dot or svg")
	specDir := fs.String("spec", "spec", "directory holding the machine tables")
	// The machine name may come before or after the flags.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	} else if fs.NArg() != 0 || name == "" {
		fs.Usage()
		return ErrUsage
	}
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
		if out, err = diagram.SVG(context.Background(), diagram.DOT(m)); err != nil {
			return fmt.Errorf("diagram: %w", err)
		}
	default:
		fmt.Fprintf(stderr, "agentwire diagram: unknown --format %q (mermaid, dot or svg)\n", *format)
		return ErrUsage
	}
	_, err = stdout.Write(out)
	return err
}

package gencli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentwire/agentwire/internal/gen"
	"github.com/agentwire/agentwire/spec"
)

// Generate is the generate command; svg lays out the SVG diagrams
// (render.SVG in the generator's command).
func Generate(args []string, stdout, stderr io.Writer, svg gen.SVGRenderer) error {
	fs := newFlags("generate [flags]", "Loads the spec tables, validates them and writes the generated machines, tests, diagrams and\n"+
		"pages under --root (fsm/, docs/machines/ and the wire's generated code).",
		[]string{"agentwire-gen generate", "agentwire-gen generate --check", "agentwire-gen generate --verify   (what CI runs)"}, stderr)
	specDir := fs.String("spec", "spec", "directory holding the machine tables")
	root := fs.String("root", ".", "repository root to write fsm/ and docs/machines/ under")
	check := fs.Bool("check", false, "only load and validate the spec; write nothing")
	verify := fs.Bool("verify", false, "write nothing; fail if any generated file differs from the tree")
	dirs := fs.Bool("dirs", false, "print the directories the generator writes into, one per line, and exit")
	if done, err := parse(fs, args); done {
		return err
	}
	if fs.NArg() != 0 {
		return usageError(fs, "generate takes no arguments, got %q", fs.Args())
	}
	if *dirs {
		for _, d := range gen.OutputDirs {
			fmt.Fprintln(stdout, d)
		}
		return nil
	}
	model, err := spec.LoadDir(os.DirFS(*specDir), ".", specName(*root, *specDir))
	if err != nil {
		return err
	}
	if *check {
		fmt.Fprintf(stdout, "spec: %d machines valid\n", len(model.Machines))
		return nil
	}
	if *verify {
		return verifyGenerated(context.Background(), model, *root, stdout, svg)
	}
	return writeGenerated(context.Background(), model, *root, stdout, svg)
}

// specName is how errors and generated headers name the spec directory:
// relative to the repository root when it lies inside it, so that output does
// not depend on where the checkout is.
func specName(root, specDir string) string {
	absRoot, err1 := filepath.Abs(root)
	absSpec, err2 := filepath.Abs(specDir)
	if err1 != nil || err2 != nil {
		return filepath.ToSlash(specDir)
	}
	rel, err := filepath.Rel(absRoot, absSpec)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(specDir)
	}
	return filepath.ToSlash(rel)
}

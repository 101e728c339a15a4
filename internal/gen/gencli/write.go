package gencli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentwire/agentwire/internal/gen"
	"github.com/agentwire/agentwire/spec"
)

// generatedRoots are the directories the generator owns files in. A file
// there is only ever removed if it carries the generated header.
var generatedRoots = gen.OutputDirs

// verifyGenerated renders everything and reports, without writing, every
// file that differs from the tree, is missing from it, or is a stale
// generated file no machine produces any more.
func verifyGenerated(ctx context.Context, model *spec.Model, root string, stdout io.Writer, svg gen.SVGRenderer) error {
	files, err := gen.Generate(ctx, model, gen.Config{Module: moduleOf(root), SVG: svg})
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	var problems []string
	for _, p := range files.Paths() {
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		switch {
		case os.IsNotExist(err):
			problems = append(problems, p+": missing")
		case err != nil:
			return fmt.Errorf("verify: %w", err)
		case !bytes.Equal(old, files[p]):
			problems = append(problems, p+": differs from what the spec generates")
		}
	}
	stale, err := staleFiles(root, files)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	for _, p := range stale {
		rel, _ := filepath.Rel(root, p)
		problems = append(problems, filepath.ToSlash(rel)+": stale (no machine generates it)")
	}
	if len(problems) > 0 {
		return fmt.Errorf("verify: generated files are out of date; run 'make generate' and commit the result:\n%s", strings.Join(problems, "\n"))
	}
	fmt.Fprintf(stdout, "verify: %d generated files match the spec\n", len(files))
	return nil
}

// writeGenerated renders everything first and touches the tree only if every
// file rendered; then it writes changed files and removes generated files
// that no machine produces any more.
func writeGenerated(ctx context.Context, model *spec.Model, root string, stdout io.Writer, svg gen.SVGRenderer) error {
	files, err := gen.Generate(ctx, model, gen.Config{Module: moduleOf(root), SVG: svg})
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	written := 0
	for _, p := range files.Paths() {
		dst := filepath.Join(root, filepath.FromSlash(p))
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		if err := os.WriteFile(dst, files[p], 0o644); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		written++
	}
	stale, err := staleFiles(root, files)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("generate: remove stale output: %w", err)
		}
	}
	fmt.Fprintf(stdout, "generate: %d machines, %d files (%d changed, %d stale removed)\n", len(model.Machines), len(files), written, len(stale))
	return nil
}

func staleFiles(root string, keep gen.Files) ([]string, error) {
	var stale []string
	for _, dir := range generatedRoots {
		base := filepath.Join(root, dir)
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return fs.SkipDir
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			if _, ok := keep[filepath.ToSlash(rel)]; ok {
				return nil
			}
			content, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if gen.IsGenerated(content) {
				stale = append(stale, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(stale)
	return stale, nil
}

// moduleOf reads the module path from root's go.mod, so that a team that
// generates its own spec into its own module gets imports under it; ""
// (agentwire's module) when root has no go.mod or it names none.
func moduleOf(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

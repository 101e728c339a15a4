package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentwire/agentwire/spec"
)

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", stderr)
	specDir := fs.String("spec", "spec", "directory holding the machine tables")
	root := fs.String("root", ".", "repository root to write fsm/ and docs/machines/ under")
	check := fs.Bool("check", false, "only load and validate the spec; write nothing")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	model, err := spec.LoadDir(os.DirFS(*specDir), ".", *specDir)
	if err != nil {
		return err
	}
	if *check {
		fmt.Fprintf(stdout, "spec: %d machines valid\n", len(model.Machines))
		return nil
	}
	return writeGenerated(context.Background(), model, *root, stdout)
}

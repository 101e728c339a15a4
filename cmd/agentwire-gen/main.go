// Command agentwire-gen is the generator: `agentwire-gen generate` and
// `agentwire-gen diagram`. It depends on nothing generated, so `make
// generate` works even when the generated wire code no longer compiles
// against a changed spec, and it is the one command that links the SVG
// renderer (gen/diagram/render), which costs every process that links it
// about 16 MiB at start.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentwire/agentwire/internal/gen/diagram/render"
	"github.com/agentwire/agentwire/internal/gen/gencli"
)

const usage = `usage: agentwire-gen generate|diagram [flags]

  generate   load spec/, validate it and write the generated files (--check, --verify, --dirs)
  diagram    print one machine's diagram: agentwire-gen diagram <machine> --format mermaid|dot|svg
`

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, gencli.ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "agentwire-gen: "+strings.ReplaceAll(err.Error(), "\n", "\nagentwire-gen: "))
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return gencli.ErrUsage
	}
	switch args[0] {
	case "generate":
		return gencli.Generate(args[1:], stdout, stderr, render.SVG)
	case "diagram":
		return gencli.Diagram(args[1:], stdout, stderr, render.SVG)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "agentwire-gen: unknown command %q\n\n%s", args[0], usage)
	return gencli.ErrUsage
}

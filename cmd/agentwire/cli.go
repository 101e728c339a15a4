package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentwire/agentwire/internal/cliflag"
)

// parseFlags parses fs's flags wherever they stand among the arguments
// (agentwire turn status TURN --core URL); "--" ends the flags. A flag
// error has been printed with the usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	return cliflag.Parse(fs, args)
}

// flagsDone maps parseFlags' error onto the command's result: -h has
// printed the usage and succeeds; any other error was printed with it.
func flagsDone(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return errUsage
}

// subcommand is the usage of one command: the line, what it does and
// examples, printed by -h above its own flags only.
type subcommand struct {
	use      string // "turn run [flags] TEXT..."
	about    string
	examples []string
}

// flags makes the command's flag set, its -h printing the usage.
func (c subcommand) flags(stderr io.Writer) *flag.FlagSet {
	name, _, _ := strings.Cut(c.use, " [")
	fs := flag.NewFlagSet("agentwire "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: agentwire %s\n\n%s\n", c.use, c.about)
		if len(c.examples) > 0 {
			fmt.Fprintln(out, "\nexamples:")
			for _, e := range c.examples {
				fmt.Fprintln(out, "  "+e)
			}
		}
		fmt.Fprintln(out, "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

// usageError prints what is wrong and the command's usage, and returns
// errUsage (exit 2).
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "%s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}

// Package gencli is the command line of the generator: `generate` (write,
// check or verify the generated files) and `diagram` (print one machine's
// diagram). It imports only the spec loader, the generator and the engine,
// never the wire package or the peers, so the generator still builds when
// generated wire code is stale or broken: the one state in which it is most
// needed. cmd/agentwire and cmd/agentwire-gen both run it.
package gencli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentwire/agentwire/internal/cliflag"
)

// ErrUsage marks a command line that could not be understood (exit 2).
var ErrUsage = errors.New("usage")

// newFlags makes a command's flag set whose usage (printed by -h and
// after a usage error) is the line use, what the command does, examples
// and its flags.
func newFlags(use, about string, examples []string, stderr io.Writer) *flag.FlagSet {
	name, _, _ := strings.Cut(use, " ")
	fs := flag.NewFlagSet("agentwire "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: agentwire %s\n\n%s\n", use, about)
		if len(examples) > 0 {
			fmt.Fprintln(out, "\nexamples:")
			for _, e := range examples {
				fmt.Fprintln(out, "  "+e)
			}
		}
		fmt.Fprintln(out, "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

// parse parses the flags anywhere among the arguments. -h has printed the
// usage and ends the command successfully (done, nil); any other flag
// error has been printed with the usage (done, ErrUsage).
func parse(fs *flag.FlagSet, args []string) (done bool, err error) {
	switch err := cliflag.Parse(fs, args); {
	case errors.Is(err, flag.ErrHelp):
		return true, nil
	case err != nil:
		return true, ErrUsage
	}
	return false, nil
}

// usageError prints what is wrong and the usage, and returns ErrUsage.
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "%s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return ErrUsage
}

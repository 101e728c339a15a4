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
	"io"
)

// ErrUsage marks a command line that could not be understood (exit 2).
var ErrUsage = errors.New("usage")

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agentwire "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

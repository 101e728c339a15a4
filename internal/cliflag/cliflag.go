// Package cliflag parses a command's flags wherever they stand among its
// arguments, as most Unix tools do. It depends on the standard library
// only, so the generator's command (gen/gencli) can use it as well as
// cmd/agentwire.
package cliflag

import "flag"

// Parse parses fs's flags before, between and after the positional
// arguments (agentwire turn status TURN --core URL); "--" ends the flags.
// Afterwards fs.Args() holds the positional arguments in their order. An
// error is fs.Parse's, already printed with the usage by the flag package
// (flag.ErrHelp for -h).
func Parse(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	// Parsing "--" followed by the positional arguments sets fs.Args()
	// and touches no flag.
	return fs.Parse(append([]string{"--"}, pos...))
}

package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/mattn/go-isatty"
)

// logFormatFlag is --log-format of the long-running commands (core serve,
// runtime): text or json, and by default text on a terminal and JSON
// otherwise (a service manager's log collector).
func logFormatFlag(fs *flag.FlagSet) *string {
	return fs.String("log-format", "", "text or json (default: text on a terminal, json otherwise)")
}

// newLogger is the process's one logger: both processes use it for every
// component, so the same things carry the same field names.
func newLogger(format string, w io.Writer, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	if format == "" {
		format = "json"
		if isTerminal(w) {
			format = "text"
		}
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// isTerminal: w is a terminal, not a file, a pipe or /dev/null (which is
// a character device too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/agentwire/agentwire/wire"
)

const filesUsage = `usage: agentwire files <command> [flags] ...

commands:
  ls        list one directory of the Session's workspace
  cat       print one file of the Session's workspace
  put       write a file into the Session's workspace
  export    pull the archive of the Session's outputs directory
  write     print a workspace write's durable record
  resolve   resolve a write whose outcome is unknown (the administration key)

Run "agentwire files <command> -h" for one command's flags and examples. Core's URL comes from
--core or AGENTWIRE_CORE.`

// filesReadCommands are the usages of ls and cat: each is one bounded
// read of the workspace.
var filesReadCommands = map[string]subcommand{
	"ls": {use: "files ls [flags] [PATH]",
		about: "Lists one directory of the Session's workspace (PATH defaults to its root) as a table, or the\n" +
			"API's JSON with --json. One read shows at most 1024 entries and says when it is truncated.",
		examples: []string{"agentwire files ls --session SESSION", "agentwire files ls --session SESSION --json src"}},
	"cat": {use: "files cat [flags] PATH",
		about: "Writes one file of the Session's workspace to the standard output, at most --max-bytes of it;\n" +
			"a truncation is reported on the standard error.",
		examples: []string{"agentwire files cat --session SESSION notes.txt"}},
}

// runFiles wraps the public Files routes.
func runFiles(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && oneOf(args[0], "put", "write", "resolve") {
		return runFilesWrite(args, stdout, stderr) // files_put.go
	}
	if len(args) > 0 && args[0] == "export" {
		return runFilesExport(args, stdout, stderr) // files_export.go
	}
	if len(args) > 0 && oneOf(args[0], "-h", "--help", "help") {
		fmt.Fprintln(stdout, filesUsage)
		return nil
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, filesUsage)
		return errUsage
	}
	if !oneOf(args[0], "ls", "cat") {
		fmt.Fprintf(stderr, "agentwire files: unknown command %q\n\n%s\n", args[0], filesUsage)
		return errUsage
	}
	ls := args[0] == "ls"
	fs := filesReadCommands[args[0]].flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	session := fs.String("session", "", "Session ID (required)")
	maxEntries, maxBytes, asJSON := new(int64), new(int64), new(bool)
	if ls {
		maxEntries = fs.Int64("max-entries", wire.MaxDirectoryEntries, "at most this many entries (1 to 1024)")
		asJSON = fs.Bool("json", false, "print the API's listing as JSON instead of a table")
	} else {
		maxBytes = fs.Int64("max-bytes", wire.MaxReadBytes, "at most this many bytes (1 to 1048576)")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	switch {
	case *session == "":
		return usageError(fs, "--session is required")
	case ls && fs.NArg() > 1:
		return usageError(fs, "want at most one PATH, got %d", fs.NArg())
	case !ls && fs.NArg() != 1:
		return usageError(fs, "want one PATH, got %d arguments", fs.NArg())
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	q := url.Values{"path": {fs.Arg(0)}}
	base := "/api/v1/sessions/" + url.PathEscape(*session) + "/files"
	var raw bytes.Buffer
	if ls {
		q.Set("max_entries", strconv.FormatInt(*maxEntries, 10))
		if err := c.call("GET", base+"?"+q.Encode(), nil, &raw); err != nil {
			return err
		}
		if *asJSON {
			_, err := stdout.Write(raw.Bytes())
			return err
		}
		var l struct {
			Entries   []wire.WorkspaceDirectoryEntry `json:"entries"`
			Truncated bool                           `json:"truncated"`
		}
		if err := json.Unmarshal(raw.Bytes(), &l); err != nil {
			return fmt.Errorf("the API answered no listing: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, e := range l.Entries {
			size := "-"
			if e.SizeBytes != nil {
				size = strconv.FormatInt(*e.SizeBytes, 10)
			}
			name := e.Name
			if e.Kind == wire.EntryDirectory {
				name += "/"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Kind, size, name)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if l.Truncated {
			fmt.Fprintf(stdout, "(truncated: the directory holds more than the %d entries shown; one read returns at most %d)\n", len(l.Entries), *maxEntries)
		}
		return nil
	}
	q.Set("max_bytes", strconv.FormatInt(*maxBytes, 10))
	if err := c.call("GET", base+"/content?"+q.Encode(), nil, &raw); err != nil {
		return err
	}
	var f struct {
		Data      []byte `json:"data"`
		Truncated bool   `json:"truncated"`
	}
	if err := json.Unmarshal(raw.Bytes(), &f); err != nil {
		return fmt.Errorf("the API answered no content: %w", err)
	}
	if _, err := stdout.Write(f.Data); err != nil {
		return err
	}
	if f.Truncated {
		fmt.Fprintf(stderr, "agentwire files cat: truncated: the file is longer than the %d bytes shown\n", len(f.Data))
	}
	return nil
}

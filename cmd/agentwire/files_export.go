package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

var filesExportCommand = subcommand{use: "files export [flags] OUT.tar",
	about: "Pulls the archive of the Session's outputs directory (at most 64 MiB) and writes it to OUT.tar\n" +
		"(- writes standard output); nothing is written unless the whole archive arrived.",
	examples: []string{"agentwire files export --session SESSION outputs.tar", "agentwire files export --session SESSION - | tar -t"}}

// maxExportBody is the API's export bound and some room.
const maxExportBody = 64<<20 + 1

func runFilesExport(args []string, stdout, stderr io.Writer) error {
	fs := filesExportCommand.flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	session := fs.String("session", "", "the Session whose outputs are exported (required)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	switch {
	case fs.NArg() != 1:
		return usageError(fs, "want one OUT.tar, got %d arguments", fs.NArg())
	case *session == "":
		return usageError(fs, "--session is required")
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	req, err := http.NewRequest("GET", c.base+"/api/v1/sessions/"+url.PathEscape(*session)+"/export", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	// decision: the export machine's budget is 180 s (spec/workspace_export.yaml); the client waits a little longer.
	resp, err := (&http.Client{Timeout: 200 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxExportBody))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return apiError("GET", req.URL.String(), resp.Status, resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if fs.Arg(0) == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(fs.Arg(0), b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", fs.Arg(0), len(b))
	return nil
}

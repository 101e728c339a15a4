package main

import (
	"io"
)

// runEnvRegistry registers a local Environment on a device of the
// project, or lists the project's Environments (docs/tenancy.md).
func runEnvRegistry(args []string, stdout, stderr io.Writer) error {
	fs := envCommands[args[0]].flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	device, typ, quiet, asJSON := new(string), new(string), new(bool), new(bool)
	initf := &initFlags{}
	if args[0] == "create" {
		device = fs.String("device", "", "the device of the project that hosts the workspace (required)")
		typ = fs.String("type", "self_hosted", "self_hosted or openai_hosted")
		initf = addInitFlags(fs)
		quiet = fs.Bool("quiet", false, "print only the new Environment's ID, for ENV=$(agentwire env create -quiet ...)")
	} else {
		asJSON = fs.Bool("json", false, "print the API's JSON instead of a table")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	if fs.NArg() != 0 {
		return usageError(fs, "env %s takes no arguments, got %q", args[0], fs.Args())
	}
	// The flags are checked before the client is made, so a mistake is
	// named first.
	call := func(method, path string, body any) error {
		c, err := newAPIClient(*core)
		if err != nil {
			return err
		}
		if *quiet && method == "POST" {
			return c.callID(method, path, body, stdout)
		}
		return c.call(method, path, body, stdout)
	}
	if args[0] == "list" {
		c, err := newAPIClient(*core)
		if err != nil {
			return err
		}
		return c.listTable("/api/v1/environments", "environments", environmentColumns, *asJSON, stdout)
	}
	if *device == "" {
		return usageError(fs, "--device is required (agentwire devices lists the project's devices)")
	}
	body := map[string]any{"type": *typ, "device_id": *device}
	decl, err := initf.declaration()
	if err != nil {
		return err
	}
	if decl != nil {
		body["initialization"] = decl
	}
	return call("POST", "/api/v1/environments", body)
}

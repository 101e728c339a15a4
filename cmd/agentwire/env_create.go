package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// runEnvRegistry registers a local Environment on a device of the
// project, or lists the project's Environments (docs/tenancy.md).
func runEnvRegistry(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("env "+args[0], stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	device := fs.String("device", "", "the device of the project that hosts the workspace (create)")
	typ := fs.String("type", "self_hosted", "self_hosted or openai_hosted (create)")
	initf := addInitFlags(fs)
	quiet := fs.Bool("quiet", false, "print only the new Environment's ID (create), for ENV=$(agentwire env create -quiet ...)")
	if err := parseFlags(fs, args[1:]); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(stderr, envUsage)
		return errUsage
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
		var extra []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "core" && f.Name != "quiet" {
				extra = append(extra, "--"+f.Name)
			}
		})
		if len(extra) > 0 {
			return fmt.Errorf("env list takes only --core (%s belong to env create)", strings.Join(extra, ", "))
		}
		return call("GET", "/api/v1/environments", nil)
	}
	if *device == "" {
		return fmt.Errorf("env create: --device is required (agentwire devices lists the project's devices)")
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

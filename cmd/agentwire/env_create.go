package main

import (
	"fmt"
	"io"
)

// runEnvRegistry registers a local Environment on a device of the
// project, or lists the project's Environments (docs/tenancy.md).
func runEnvRegistry(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("env "+args[0], stderr)
	core := fs.String("core", "", "Core's base URL")
	device := fs.String("device", "", "the device of the project that hosts the workspace (create)")
	typ := fs.String("type", "self_hosted", "self_hosted or openai_hosted (create)")
	initf := addInitFlags(fs)
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(stderr, envUsage)
		return errUsage
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return err
	}
	if args[0] == "list" {
		return c.call("GET", "/api/v1/environments", nil, stdout)
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
	return c.call("POST", "/api/v1/environments", body, stdout)
}

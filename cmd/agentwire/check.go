package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentwire/agentwire/internal/modelcheck"
	"github.com/agentwire/agentwire/spec"
)

// runCheck is `agentwire check`: the model checker over the spec's tables
// (package modelcheck does the work).
var checkCommand = subcommand{use: "check [flags]",
	about: "Model-checks Core and the Runtime together over the spec's machine tables against\n" +
		"spec/invariants.yaml (docs/model-check.md); exit 1 when an invariant is violated.",
	examples: []string{"agentwire check", "agentwire check --bound long", "agentwire check --machines preparation,run,input,interaction --out counterexamples"}}

func runCheck(args []string, stdout, stderr io.Writer) error {
	fs := checkCommand.flags(stderr)
	dir := fs.String("spec", "spec", "the spec directory")
	bound := fs.String("bound", "ci", "ci or long: the bounds make model-check and make model-check-long use")
	machines := fs.String("machines", "preparation,run,input", "the machines composed, comma-separated")
	depth := fs.Int("depth", 0, "override the bound's trace depth")
	runs := fs.Int("runs", 0, "override the bound's number of Runs")
	inputs := fs.Int("inputs", 0, "override the bound's inputs per Run")
	faults := fs.Int("faults", -1, "override the bound's number of faults")
	exports := fs.Int("exports", -1, "override the bound's number of workspace exports (with the workspace_export machine)")
	reads := fs.Int("reads", -1, "override the bound's number of workspace reads (with the workspace_read machine)")
	writes := fs.Int("writes", -1, "override the bound's number of workspace writes (with the workspace_write machine)")
	asks := fs.Int("asks", -1, "override the bound's permission requests per Run (with the interaction machine)")
	sync := fs.Bool("sync", false, "deliver each frame as it is written (traces replay in peer/scenario)")
	only := fs.String("invariants", "", "check only these invariants, comma-separated")
	out := fs.String("out", "", "write each counterexample here as <invariant>.mmd and <invariant>.txt")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if fs.NArg() != 0 {
		return usageError(fs, "check takes no arguments, got %q", fs.Args())
	}
	cfg := modelcheck.Config{Machines: split(*machines), Sync: *sync, Invariants: split(*only)}
	switch *bound {
	case "ci":
		cfg.Bounds = modelcheck.CI
	case "long":
		cfg.Bounds = modelcheck.Long
	default:
		return usageError(fs, "--bound must be ci or long, not %q", *bound)
	}
	model, err := spec.LoadDir(os.DirFS(*dir), ".", filepath.Clean(*dir)+"/")
	if err != nil {
		return err
	}
	cfg.Model = model
	for _, o := range []struct {
		v   int
		min int
		dst *int
	}{{*depth, 1, &cfg.Bounds.Depth}, {*runs, 1, &cfg.Bounds.Runs}, {*inputs, 1, &cfg.Bounds.Inputs}, {*faults, 0, &cfg.Bounds.Faults}, {*writes, 0, &cfg.Bounds.Writes}, {*reads, 0, &cfg.Bounds.Reads}, {*exports, 0, &cfg.Bounds.Exports}, {*asks, 0, &cfg.Bounds.Asks}} {
		if o.v >= o.min {
			*o.dst = o.v
		}
	}
	cfg.Progress = func(states, depth int) { fmt.Fprintf(stderr, "… %d states, depth %d\n", states, depth) }
	rep, err := modelcheck.Check(cfg)
	if err != nil {
		return err
	}
	rep.Summary(stdout)
	if *out != "" && len(rep.Violations) > 0 {
		if err := modelcheck.WriteCounterexamples(*out, cfg, rep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "counterexamples written to %s\n", *out)
	}
	if len(rep.Violations) > 0 {
		return errors.New("model check: " + fmt.Sprint(len(rep.Violations)) + " invariant(s) violated")
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

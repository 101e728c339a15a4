package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/agentwire/agentwire/internal/core/envinit"
)

const envUsage = `usage: agentwire env <command> [flags] ...

commands:
  create    register a workspace on a device of the project and print its Environment
  list      list the project's Environments
  show      print an Environment: its initialization, last outcome and newest suspension attempt
  suspend   quiesce an Environment on the device that hosts it (exit 0 only when suspended)
  resume    resume a suspended Environment, or abandon the attempt with --rollback (exit 0 only when resumed)

Run "agentwire env <command> -h" for one command's flags and examples. Core's URL comes from --core
or AGENTWIRE_CORE.`

// envCommands are the env subcommands' usages.
var envCommands = map[string]subcommand{
	"create": {use: "env create [flags]",
		about: "Registers a workspace on a device of the project and prints the Environment (its ID with\n" +
			"--quiet). The device's Runtime serves it with --environment ID=DIR, and a Session names it with\n" +
			"--environment ID. --init-env and --init-file declare what the Runtime installs before the\n" +
			"Environment's first work on a connection.",
		examples: []string{"ENV=$(agentwire env create --device dev-1 --quiet)",
			"agentwire env create --device dev-1 --init-env LANG=C --init-file ./setup.sh=/workspace/setup.sh"}},
	"list": {use: "env list [flags]", about: "Lists the project's Environments: a table (local times), or the API's JSON with --json.",
		examples: []string{"agentwire env list", "agentwire env list --json"}},
	"show": {use: "env show [flags] ENV",
		about: "Prints the Environment as JSON: what it declares for initialization, the last initialization\n" +
			"outcome (with the Runtime's code) and its newest suspension attempt.",
		examples: []string{"agentwire env show ENV"}},
	"suspend": {use: "env suspend [flags] ENV",
		about: "Quiesces the Environment on the device that hosts it and waits up to 10 s for the Runtime's\n" +
			"answer; exit 0 only when it is suspended. Core rolls back a quiesce left unanswered for 30 s.",
		examples: []string{"agentwire env suspend ENV"}},
	"resume": {use: "env resume [flags] ENV",
		about: "Resumes the suspended Environment (or, with --rollback, abandons the attempt) and waits up to\n" +
			"10 s for the Runtime's answer; exit 0 only when it is resumed. An attempt whose resume or rollback\n" +
			"goes unanswered for 30 s is expired (answer_timeout): the Environment is released, and the attempt\n" +
			"still takes a late answer or another --rollback.",
		examples: []string{"agentwire env resume ENV", "agentwire env resume --rollback ENV"}},
}

// runEnv wraps the public Environment routes.
func runEnv(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "create" || args[0] == "list") {
		return runEnvRegistry(args, stdout, stderr) // env_create.go
	}
	if len(args) > 0 && oneOf(args[0], "-h", "--help", "help") {
		fmt.Fprintln(stdout, envUsage)
		return nil
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, envUsage)
		return errUsage
	}
	if !oneOf(args[0], "show", "suspend", "resume") {
		fmt.Fprintf(stderr, "agentwire env: unknown command %q\n\n%s\n", args[0], envUsage)
		return errUsage
	}
	fs := envCommands[args[0]].flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	rollback := new(bool)
	if args[0] == "resume" {
		rollback = fs.Bool("rollback", false, "abandon the attempt instead of resuming it")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	if fs.NArg() != 1 {
		return usageError(fs, "want one ENV, got %d arguments", fs.NArg())
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	base := "/api/v1/environments/" + url.PathEscape(fs.Arg(0))
	if args[0] == "show" {
		return c.call("GET", base, nil, stdout)
	}
	var body any
	want := "suspended"
	if args[0] != "suspend" {
		want = "resumed"
		if *rollback {
			body = map[string]bool{"rollback": true}
		}
	}
	var out bytes.Buffer
	if err := c.call("POST", base+"/"+args[0], body, io.MultiWriter(stdout, &out)); err != nil {
		return err
	}
	var a struct {
		State     string `json:"state"`
		ErrorCode string `json:"error_code"`
	}
	if err := json.Unmarshal(out.Bytes(), &a); err != nil {
		return fmt.Errorf("the API answered no suspension attempt: %w", err)
	}
	if a.State != want {
		msg := "the suspension attempt is " + a.State
		if a.ErrorCode != "" {
			msg += " (" + a.ErrorCode + ")"
		}
		return errors.New(msg)
	}
	return nil
}

// initFlags are env create's initialization flags.
type initFlags struct {
	env, files multiFlag
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func addInitFlags(fs *flag.FlagSet) *initFlags {
	f := &initFlags{}
	fs.Var(&f.env, "init-env", "an environment variable NAME=VALUE the Runtime is initialized with (create; repeatable)")
	fs.Var(&f.files, "init-file", "LOCAL=/workspace/PATH: a local file installed into the workspace before the Environment's first work on a connection (create; repeatable)")
	return f
}

// declaration builds the Environment's initialization, or nil without one.
func (f *initFlags) declaration() (json.RawMessage, error) {
	var s envinit.Spec
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--init-env %q: want NAME=VALUE", kv)
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
	for _, lp := range f.files {
		local, path, ok := strings.Cut(lp, "=")
		if !ok || local == "" || path == "" {
			return nil, fmt.Errorf("--init-file %q: want LOCAL=/workspace/PATH", lp)
		}
		b, err := os.ReadFile(local)
		if err != nil {
			return nil, fmt.Errorf("--init-file: %w", err)
		}
		s.Files = append(s.Files, envinit.File{Path: path, Content: b})
	}
	if s.Empty() {
		return nil, nil
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("initialization: %w", err)
	}
	return json.Marshal(s)
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
)

const agentUsage = `usage: agentwire agent <command> [flags]

commands:
  create   create an Agent of the project from a JSON definition
  update   write an Agent's next version from a JSON definition
  show     print an Agent (its latest version, or --version N)
  list     list the project's Agents

Run "agentwire agent <command> -h" for one command's flags and examples.`

var agentCommands = map[string]subcommand{
	"create": {use: "agent create [flags] FILE", about: "Creates an Agent of the project (AGENTWIRE_API_KEY) from FILE (a JSON definition: agent_kind,\n" +
		"model, instructions, function_tools, output_format, text_verbosity, multi_agent; - reads standard input)\n" +
		"and prints it as JSON. A Session created with --agent runs the version current then.",
		examples: []string{"agentwire agent create weather-agent.json", "agentwire agent create -quiet weather-agent.json"}},
	"update": {use: "agent update [flags] AGENT FILE", about: "Writes the Agent's next version from FILE; Sessions created before keep their version.",
		examples: []string{"agentwire agent update AGENT weather-agent.json"}},
	"show": {use: "agent show [flags] AGENT", about: "Prints the Agent as JSON: its latest version, or --version N.",
		examples: []string{"agentwire agent show AGENT", "agentwire agent show --version 1 AGENT"}},
	"list": {use: "agent list [flags]", about: "Lists the latest version of each of the project's Agents: a table (local times), or the\nAPI's JSON with --json.",
		examples: []string{"agentwire agent list", "agentwire agent list --json"}},
}

func runAgent(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, agentUsage)
		return errUsage
	}
	if oneOf(args[0], "-h", "--help", "help") {
		fmt.Fprintln(stdout, agentUsage)
		return nil
	}
	cmd, ok := agentCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentwire agent: unknown command %q\n\n%s\n", args[0], agentUsage)
		return errUsage
	}
	fs := cmd.flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	quiet, version, asJSON := new(bool), new(int), new(bool)
	if args[0] == "create" {
		quiet = fs.Bool("quiet", false, "print only the new Agent's ID, for AGENT=$(agentwire agent create -quiet ...)")
	}
	if args[0] == "show" {
		version = fs.Int("version", 0, "the version to show (0: the latest)")
	}
	if args[0] == "list" {
		asJSON = fs.Bool("json", false, "print the API's JSON instead of a table")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	want := map[string]int{"create": 1, "update": 2, "show": 1, "list": 0}[args[0]]
	if fs.NArg() != want {
		if want == 0 {
			return usageError(fs, "agent list takes no arguments, got %d", fs.NArg())
		}
		return usageError(fs, "want %s, got %d arguments", map[string]string{"create": "FILE", "update": "AGENT and FILE", "show": "AGENT"}[args[0]], fs.NArg())
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	readDef := func(path string) (json.RawMessage, error) {
		var b []byte
		var err error
		if path == "-" {
			b, err = io.ReadAll(io.LimitReader(os.Stdin, 5<<20))
		} else {
			b, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, err
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("%s is not JSON", path)
		}
		return b, nil
	}
	switch args[0] {
	case "create":
		def, err := readDef(fs.Arg(0))
		if err != nil {
			return err
		}
		if *quiet {
			return c.callID("POST", "/api/v1/agents", def, stdout)
		}
		return c.call("POST", "/api/v1/agents", def, stdout)
	case "update":
		def, err := readDef(fs.Arg(1))
		if err != nil {
			return err
		}
		return c.call("PUT", "/api/v1/agents/"+url.PathEscape(fs.Arg(0)), def, stdout)
	case "show":
		path := "/api/v1/agents/" + url.PathEscape(fs.Arg(0))
		if *version > 0 {
			path += fmt.Sprintf("?version=%d", *version)
		}
		return c.call("GET", path, nil, stdout)
	}
	return c.listTable("/api/v1/agents", "agents", agentColumns, *asJSON, stdout)
}

// Command agentwire runs the reference peers: the Runtime daemon and Core,
// with Core's public API wrapped as CLI commands, and draws the protocol
// machines' diagrams. The generator is its own command, cmd/agentwire-gen.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/agentwire/agentwire/internal/gen/gencli"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/wire"
)

const usage = `usage: agentwire <command> [flags]

commands:
  core       run and administer Core: agentwire core serve|credential|devices|device
  runtime    run the Runtime daemon: agentwire runtime [--core URL] --device-id ID --credential-file FILE
  agent      the project's Agents (what a Session runs): agentwire agent create|update|show|list
  session    create or get a Session: agentwire session create|get
  turn       a Session's Turns: agentwire turn submit|run|attach|input|answer|list|status|cancel
  devices    the project's devices: agentwire devices [list] | devices revoke DEVICE
  files      a Session's workspace: agentwire files ls|cat|put|export|write|resolve
  env        a project's Environments: agentwire env create|list|show|suspend|resume
  vault      the project's secrets (MCP bearer tokens): agentwire vault put|list|delete
  demo       run Core, a Runtime and one Turn end to end on this machine (make demo)
  diagram    print one machine's diagram: agentwire diagram <machine> --format mermaid|dot
             (the generator, and SVG, are go run ./cmd/agentwire-gen generate|diagram)
  check      model-check Core and the Runtime together over the spec's tables (make model-check)

The API commands read Core's URL from --core or AGENTWIRE_CORE and the project API key from
AGENTWIRE_API_KEY (never a flag: flags show in process listings).

Run "agentwire <command> -h" for the flags of one command; "agentwire --version" prints
this build's version and the wire version it speaks.

exit codes: 0 success, 1 the command failed (the message says why), 2 the command line was
not understood (the usage follows), 130 turn run or turn attach was detached with Ctrl-C (the
Turn goes on). docs/cli.md has the details.
`

// versionLine is what --version prints: this build and the wire version
// it speaks (a Runtime and Core must speak the same one exactly).
func versionLine() string {
	build := daemon.Version
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		build = bi.Main.Version
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	return fmt.Sprintf("agentwire %s%s, wire version %s, %s", build, rev, wire.Version, runtime.Version())
}

// errUsage marks a command line that could not be understood (exit 2).
var errUsage = errors.New("usage")

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	code := exitCode(err)
	if code == 1 {
		fmt.Fprintln(os.Stderr, "agentwire: "+strings.ReplaceAll(err.Error(), "\n", "\nagentwire: "))
	}
	os.Exit(code)
}

// exitCode is the process's exit status for run's result (docs/cli.md):
// 0 success, 2 a command line not understood (its message and usage were
// printed), 1 any other failure. A detach with Ctrl-C exits 130 from the
// interrupt handler itself.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "generate":
		// decision: the generator (and the SVG renderer it needs) is its own
		// command, so Core, the Runtime and every CLI call do not pay for
		// Graphviz (issue 24).
		return errors.New("generate is the generator's own command: go run ./cmd/agentwire-gen generate (make generate)")
	case "diagram":
		return usageErr(gencli.Diagram(args[1:], stdout, stderr, nil))
	case "runtime":
		return runRuntime(args[1:], stdout, stderr)
	case "core":
		return runCore(args[1:], stdout, stderr)
	case "agent":
		return runAgent(args[1:], stdout, stderr) // agent.go
	case "session":
		return runSession(args[1:], stdout, stderr)
	case "turn":
		return runTurn(args[1:], stdout, stderr)
	case "devices":
		return runDevices(args[1:], stdout, stderr)
	case "files":
		return runFiles(args[1:], stdout, stderr)
	case "env":
		return runEnv(args[1:], stdout, stderr) // env.go
	case "vault":
		return runVault(args[1:], os.Stdin, stdout, stderr) // vault.go
	case "demo":
		return runDemo(args[1:], stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "--version", "version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	default:
		fmt.Fprintf(stderr, "agentwire: unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
}

// usageErr maps the generator's usage error onto this command's.
func usageErr(err error) error {
	if errors.Is(err, gencli.ErrUsage) {
		return errUsage
	}
	return err
}

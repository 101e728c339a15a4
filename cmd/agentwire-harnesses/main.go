// Command agentwire-harnesses installs and finds the real coding-agent CLIs
// (OpenAI Codex, Claude Code, Gemini CLI, codex-acp) at the versions pinned in
// runtime/harness/install. `make harnesses` runs its install command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
)

const usage = `usage: agentwire-harnesses install|status|where [flags]

  install [--dir DIR] [--force]  npm-install the pinned CLIs into DIR (default $` + install.EnvDir + `,
                                 else ~/.cache/agentwire/harnesses), unless already there; check
                                 each binary's --version and print where it is
  status                         one line: which pinned CLIs are installed (always exits 0)
  where codex|claude|gemini          print the native binary's path (exit 1 when not installed)
`

var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "agentwire-harnesses: "+strings.ReplaceAll(err.Error(), "\n", "\nagentwire-harnesses: "))
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "install":
		return runInstall(ctx, args[1:], stdout, stderr)
	case "status":
		if len(args) != 1 {
			fmt.Fprint(stderr, usage)
			return errUsage
		}
		fmt.Fprintln(stdout, status())
		return nil
	case "where":
		return where(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "agentwire-harnesses: unknown command %q\n\n%s", args[0], usage)
	return errUsage
}

func runInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("install", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dir := fl.String("dir", "", "install directory (default $"+install.EnvDir+", else ~/.cache/agentwire/harnesses)")
	force := fl.Bool("force", false, "run npm install even when everything is up to date")
	if err := fl.Parse(args); err != nil {
		return errUsage
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "agentwire-harnesses install: unexpected argument %q\n", fl.Arg(0))
		return errUsage
	}
	res, err := install.Install(ctx, install.Options{Dir: *dir, Force: *force, Out: stdout})
	if err != nil {
		return err
	}
	for _, f := range res.Found {
		fmt.Fprintf(stdout, "%s %s: %s\n", f.Harness.Name, f.Harness.Version, f.Path)
		if f.Launcher != "" {
			fmt.Fprintf(stdout, "  node launcher: %s\n", f.Launcher)
		}
		if f.SkippedStub != "" {
			fmt.Fprintf(stdout, "  note: %s is the package's placeholder (its postinstall did not run); the platform package's binary above is used instead\n", f.SkippedStub)
		}
	}
	if res.Installed {
		fmt.Fprintf(stdout, "harnesses: node_modules is %.0f MB\n", float64(res.Bytes)/1e6)
	}
	fmt.Fprintf(stdout, "harnesses: done in %.1f s\n", res.Elapsed.Round(100*time.Millisecond).Seconds())
	return nil
}

// status is one line for `make test`: whether the real-harness tests ran.
func status() string {
	var have, missing []string
	for _, h := range install.Harnesses() {
		if f, err := install.Find(h); err == nil {
			have = append(have, fmt.Sprintf("%s %s (%s)", h.Name, h.Version, f.Path))
		} else {
			missing = append(missing, h.Name+" "+h.Version)
		}
	}
	if len(missing) == 0 {
		return "real harnesses: " + strings.Join(have, ", ")
	}
	return "real-harness tests skipped: " + strings.Join(missing, " and ") + " not installed: run make harnesses"
}

func where(args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	for _, h := range install.Harnesses() {
		if h.Name == args[0] {
			f, err := install.Find(h)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, f.Path)
			return nil
		}
	}
	fmt.Fprintf(stderr, "agentwire-harnesses where: unknown harness %q (codex, claude, gemini or codex-acp)\n", args[0])
	return errUsage
}

// Command agentwire-chaos runs the chaos test (internal/chaos,
// docs/chaos.md): a real Core and two real Runtimes, connections cut and
// processes SIGKILLed at random moments drawn from one seed, a few hundred
// Turns, then the checker. It exits 1 when a property is violated, printing
// the seed to replay; `make chaos` builds what it needs and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentwire/agentwire/internal/chaos"
)

func main() {
	seed := flag.Uint64("seed", 0, "the seed (0: one drawn from the clock, printed)")
	turns := flag.Int("turns", 200, "Turns to submit")
	kills := flag.Int("kills", 12, "at most this many SIGKILLs of Core and the Runtimes")
	cuts := flag.Int("cuts", 40, "at most this many connections cut by the proxy")
	budget := flag.Duration("budget", 8*time.Minute, "the whole run's time bound")
	dir := flag.String("dir", "", "the run's directory, kept afterwards (none: a new temporary one)")
	bin := flag.String("bin", "bin/agentwire", "the agentwire binary")
	agent := flag.String("agent", "bin/echo-agent", "the echo-agent binary")
	caps := flag.String("caps", "examples/echo-agent/capabilities.json", "the echo-agent's capabilities file")
	replicas := flag.Int("replicas", 1, "Core processes: 1 runs one Core on SQLite with random kills; more run that many replicas on the PostgreSQL database -store and SIGKILL one of them for good mid-load (make test-replicas)")
	storeDSN := flag.String("store", "", "the PostgreSQL database (postgres://...) the replicas share; required with -replicas above 1")
	flag.Parse()
	if *replicas < 1 || (*replicas > 1 && *storeDSN == "") {
		fail(*seed, fmt.Errorf("-replicas must be at least 1, and above 1 needs -store postgres://..., got -replicas %d -store %q", *replicas, *storeDSN))
	}
	if *turns < 1 || *turns > 9000 {
		// Tags are t and four digits; the recovery Turns come after.
		fail(*seed, fmt.Errorf("-turns must be from 1 to 9000, got %d", *turns))
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	fmt.Printf("chaos: seed %d (replay with: make chaos SEED=%d), %d Turns, at most %d kills and %d cuts, budget %v\n",
		*seed, *seed, *turns, *kills, *cuts, *budget)
	temporary := *dir == ""
	if temporary {
		d, err := os.MkdirTemp("", "agentwire-chaos-")
		if err != nil {
			fail(*seed, err)
		}
		*dir = d
	}
	fmt.Printf("chaos: data, transcripts and logs in %s\n", *dir)
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			fail(*seed, err)
		}
		return a
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := chaos.Run(ctx, chaos.Config{Seed: *seed, Turns: *turns, Kills: *kills, Cuts: *cuts, Budget: *budget,
		Dir: abs(*dir), Bin: abs(*bin), Agent: abs(*agent), Caps: abs(*caps), Out: os.Stdout, Replicas: *replicas, Store: *storeDSN})
	if err != nil {
		fail(*seed, err)
	}
	res.Report(os.Stdout, *seed)
	if len(res.Violations) > 0 {
		fmt.Printf("chaos: the run is kept in %s\n", *dir)
		os.Exit(1)
	}
	if temporary {
		// Nothing to look into: a passing run's temporary directory goes
		// (a run that failed to be carried out keeps it, as -dir does).
		_ = os.RemoveAll(*dir)
	}
}

func fail(seed uint64, err error) {
	fmt.Fprintf(os.Stderr, "chaos: %v\nchaos: replay with: make chaos SEED=%d\n", err, seed)
	os.Exit(1)
}

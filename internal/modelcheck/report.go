package modelcheck

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Summary prints what an exploration covered and found.
func (r *Report) Summary(out io.Writer) {
	b := r.Bounds
	fmt.Fprintf(out, "machines: %s\n", strings.Join(r.Machines, ", "))
	fmt.Fprintf(out, "bounds: depth %d, runs %d, inputs %d, faults %d, reconnects %d, revisions %d, in flight %d, read-only %v\n",
		b.Depth, b.Runs, b.Inputs, b.Faults, b.Reconnects, b.Revisions, inflightOf(b), b.ReadOnly)
	fmt.Fprintf(out, "explored %d states, %d transitions, depth %d (%d left at the bound) in %s: %.0f states/s\n",
		r.States, r.Transitions, r.Depth, r.Frontier, r.Elapsed.Round(1e6), r.StatesPerSecond())
	if r.Truncated {
		fmt.Fprintln(out, "the state limit stopped the exploration before the depth bound")
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(out, "no invariant violated")
		return
	}
	for _, v := range r.Violations {
		fmt.Fprintf(out, "\nVIOLATED %s (%s, %s) after %d steps:\n  %s\n", v.Invariant, v.Kind, v.Pos, len(v.Trace), v.Msg)
		for i, a := range v.Trace {
			fmt.Fprintf(out, "  %2d. %s\n", i+1, a)
		}
	}
}

func inflightOf(b Bounds) int {
	if b.InFlight == 0 {
		return 2
	}
	return b.InFlight
}

// WriteCounterexamples writes, for each violation, <invariant>.mmd (the
// Mermaid sequence diagram) and, when a synchronous trace reaches the same
// violation, <invariant>.txt (a scenario file peer/scenario replays).
func WriteCounterexamples(dir string, cfg Config, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, v := range r.Violations {
		if err := os.WriteFile(filepath.Join(dir, v.Invariant+".mmd"), []byte(Mermaid(v)), 0o644); err != nil {
			return err
		}
		sc, err := ReplayableScenario(cfg, v)
		if err != nil {
			sc = "# " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, v.Invariant+".txt"), []byte(sc), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ReplayableScenario looks for the same violation with frames delivered as
// they are written (Config.Sync), which the scenario runner can replay, and
// renders the shortest such trace.
func ReplayableScenario(cfg Config, v *Violation) (string, error) {
	if cfg.Sync {
		return Scenario(cfg, v)
	}
	sync := cfg
	sync.Sync = true
	sync.Invariants = []string{v.Invariant}
	sync.Progress = nil
	rep, err := Check(sync)
	if err != nil {
		return "", err
	}
	for _, sv := range rep.Violations {
		if sv.Invariant == v.Invariant {
			return Scenario(sync, sv)
		}
	}
	return "", fmt.Errorf("modelcheck: %s is only violated with frames in flight; see the Mermaid diagram", v.Invariant)
}

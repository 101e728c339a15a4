// Command contractreport reads `go test -json` of both sides' shared wire
// scenarios (TestWireScenarios in core/server and runtime/daemon) from
// stdin and lists each scenario once with both sides' results. It exits 1
// when a side failed or did not run a scenario, printing that side's
// output for it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

const prefix = "TestWireScenarios/"

// sides maps a package to its column.
var sides = map[string]string{
	"github.com/agentwire/agentwire/internal/core/server": "core",
	"github.com/agentwire/agentwire/runtime/daemon":       "runtime",
}

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type result struct {
	action string
	output strings.Builder
}

func main() {
	ok, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contractreport:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func report(in io.Reader, out io.Writer) (bool, error) {
	results := map[string]map[string]*result{} // scenario → side → result
	pkgFailed := map[string]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a build error's text; go test's own exit status reports it
		}
		side, known := sides[e.Package]
		if !known {
			continue
		}
		if e.Test == "" {
			if e.Action == "fail" {
				pkgFailed[side] = true
			}
			continue
		}
		name, isScenario := strings.CutPrefix(e.Test, prefix)
		if !isScenario {
			continue
		}
		if results[name] == nil {
			results[name] = map[string]*result{}
		}
		r := results[name][side]
		if r == nil {
			r = &result{}
			results[name][side] = r
		}
		switch e.Action {
		case "pass", "fail", "skip":
			r.action = e.Action
		case "output":
			r.output.WriteString(e.Output)
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	ok := len(names) > 0
	fmt.Fprintf(out, "%-48s %-8s %s\n", "shared wire scenario", "core", "runtime")
	var failed []string
	for _, n := range names {
		row := []string{}
		for _, side := range []string{"core", "runtime"} {
			r := results[n][side]
			state := "not run"
			if r != nil && r.action != "" {
				state = r.action
			}
			if state != "pass" {
				ok = false
				if r != nil {
					failed = append(failed, fmt.Sprintf("--- %s on the %s side:\n%s", n, side, r.output.String()))
				} else {
					failed = append(failed, fmt.Sprintf("--- %s: the %s side did not run it\n", n, side))
				}
			}
			row = append(row, state)
		}
		fmt.Fprintf(out, "%-48s %-8s %s\n", n, row[0], row[1])
	}
	fmt.Fprintf(out, "%d shared scenarios\n", len(names))
	for side := range pkgFailed {
		ok = false
		failed = append(failed, fmt.Sprintf("--- the %s side's package failed\n", side))
	}
	for _, f := range failed {
		fmt.Fprint(out, f)
	}
	return ok, nil
}

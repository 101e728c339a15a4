package apisurface

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite api/surface.txt, and drop stale entries from api/internal-leaks.txt")

var raceEnabled bool

const (
	surfaceFile = "api/surface.txt"
	leaksFile   = "api/internal-leaks.txt"
	updateCmd   = "go test ./internal/apisurface -update"
)

const surfaceHeader = `# The exported Go API of agentwire's public packages, one line per exported
# identifier (see internal/apisurface). Written by: ` + updateCmd + `
# A change here is a change to what embedders compile against.
`

func TestExportedSurface(t *testing.T) {
	root, err := ModuleRoot()
	require.NoError(t, err)
	opts := Options{Dir: root}
	if raceEnabled {
		opts.BuildFlags = []string{"-race"}
	}
	start := time.Now()
	lines, err := Compute(opts)
	require.NoError(t, err)
	t.Logf("computed %d lines in %s", len(lines), time.Since(start).Round(time.Millisecond))

	got := make([]string, 0, len(lines))
	for _, l := range lines {
		got = append(got, l.String())
	}

	t.Run("golden", func(t *testing.T) {
		path := filepath.Join(root, surfaceFile)
		if *update {
			content := surfaceHeader + strings.Join(got, "\n") + "\n"
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			return
		}
		want, err := readLines(path)
		require.NoError(t, err, "run %s to create it", updateCmd)
		if removed, added := diff(want, got); len(removed)+len(added) > 0 {
			t.Errorf("the exported API differs from %s (%d removed, %d added):\n%s\n"+
				"If the change is intended, run %s and commit %s with it.",
				surfaceFile, len(removed), len(added), formatDiff(removed, added), updateCmd, surfaceFile)
		}
	})

	t.Run("no internal types", func(t *testing.T) {
		path := filepath.Join(root, leaksFile)
		allowed, err := readLines(path)
		if os.IsNotExist(err) {
			err = nil
		}
		require.NoError(t, err)

		var current []string
		lineOf := map[string]string{}
		for _, l := range lines {
			for _, leak := range l.Leaks() {
				current = append(current, leak)
				lineOf[leak] = l.String()
			}
		}
		stale, fresh := diff(allowed, current)

		if len(fresh) > 0 {
			var b strings.Builder
			for _, leak := range fresh {
				b.WriteString("  " + leak + "\n      in: " + lineOf[leak] + "\n")
			}
			t.Errorf("the exported API of a public package mentions types of an internal package, "+
				"which an embedder cannot name:\n%s"+
				"Export the type from a public package (or use an alias there) instead. "+
				"%s lists the known leaks and may only shrink.", b.String(), leaksFile)
		}
		if len(stale) == 0 {
			return
		}
		if *update {
			kept := slices.DeleteFunc(slices.Clone(allowed), func(s string) bool { return slices.Contains(stale, s) })
			require.NoError(t, rewriteKeepingComments(path, kept))
			return
		}
		t.Errorf("these entries of %s no longer leak; remove them (or run %s, "+
			"which only ever removes entries from that file):\n  %s",
			leaksFile, updateCmd, strings.Join(stale, "\n  "))
	})
}

// readLines returns the non-empty lines of path that are not # comments.
func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimRight(l, "\r"); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

// rewriteKeepingComments writes lines to path under the file's leading
// comment block, so the allow-list keeps its explanation.
func rewriteKeepingComments(path string, lines []string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		b.WriteString(l + "\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// diff returns the lines of want missing from got and those of got missing
// from want, each in its own order. The surface is sorted and its lines are
// unique, so a set difference reads as well as a line diff and never
// misaligns.
func diff(want, got []string) (removed, added []string) {
	count := map[string]int{}
	for _, l := range got {
		count[l]++
	}
	for _, l := range want {
		if count[l] > 0 {
			count[l]--
		} else {
			removed = append(removed, l)
		}
	}
	count = map[string]int{}
	for _, l := range want {
		count[l]++
	}
	for _, l := range got {
		if count[l] > 0 {
			count[l]--
		} else {
			added = append(added, l)
		}
	}
	return removed, added
}

func formatDiff(removed, added []string) string {
	var b strings.Builder
	for _, l := range removed {
		b.WriteString("- " + l + "\n")
	}
	for _, l := range added {
		b.WriteString("+ " + l + "\n")
	}
	return b.String()
}

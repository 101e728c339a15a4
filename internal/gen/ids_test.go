package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/spec"
)

// generateDoor generates the door machine of gen/testdata/basic from src
// (its door.yaml) and returns fsm/door/door.go.
func generateDoor(t *testing.T, src string) string {
	t.Helper()
	model, err := spec.LoadDir(fstest.MapFS{"door.yaml": {Data: []byte(src)}}, ".", "spec")
	require.NoError(t, err)
	f, err := machineFile(model.Machines[0])
	require.NoError(t, err)
	return fmt.Sprintf("%#v", f)
}

// ruleLine matches one rule of a generated table, which is one line.
var ruleLine = regexp.MustCompile(`(?m)^\t\t\{ID: "([a-z0-9_]+)".*$`)

// TestRuleInsertedAtTopRenamesNothing inserts a rule (with its own id:) at
// the top of a spec's rules and checks what a reviewer would see in the
// regenerated machine: every other rule keeps its ID and its line, word for
// word; the only other line that changes is Table.Lines, which holds every
// rule's spec line.
func TestRuleInsertedAtTopRenamesNothing(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "basic", "spec", "door.yaml"))
	require.NoError(t, err)
	before := generateDoor(t, string(src))
	inserted := strings.Replace(string(src), "rules:\n", "rules:\n"+
		"  - id: open_lock_with_key\n    from: open\n    on: lock\n    guard: has_key\n    to: locked\n    effects: [stop auto_close]\n", 1)
	require.NotEqual(t, string(src), inserted)
	after := generateDoor(t, inserted)

	ids := func(code string) []string {
		var out []string
		for _, m := range ruleLine.FindAllStringSubmatch(code, -1) {
			out = append(out, m[1])
		}
		return out
	}
	require.NotEmpty(t, ids(before))
	require.Equal(t, append([]string{"open_lock_with_key"}, ids(before)...), ids(after),
		"the inserted rule comes first and every other rule keeps its name")

	lines := func(code string) map[string]bool {
		set := map[string]bool{}
		for _, l := range strings.Split(code, "\n") {
			set[l] = true
		}
		return set
	}
	onlyIn := func(a, b map[string]bool) []string {
		var out []string
		for l := range a {
			if !b[l] {
				out = append(out, strings.TrimSpace(l))
			}
		}
		return out
	}
	added, removed := onlyIn(lines(after), lines(before)), onlyIn(lines(before), lines(after))
	require.Len(t, removed, 1, "only Table.Lines may change: %q", removed)
	require.True(t, strings.HasPrefix(removed[0], "Lines: []int{"), removed[0])
	require.Len(t, added, 2, "the new rule and the new Table.Lines: %q", added)
	require.ElementsMatch(t, []bool{true, true}, []bool{
		strings.Contains(strings.Join(added, "\n"), `{ID: "open_lock_with_key", From: "open", On: "lock", Guard: "has_key", To: "locked", Effects: "runtime: stop auto_close"}`),
		strings.Contains(strings.Join(added, "\n"), "Lines: []int{"),
	})
}

// TestDerivedRuleIDs pins the names the generator derives when a rule has
// no id: its first state, its first event ("any" for on: "*") and its
// guard.
func TestDerivedRuleIDs(t *testing.T) {
	m := loadCase(t, "basic").Machines[0]
	ids := map[string]bool{}
	for _, r := range m.Rules {
		ids[r.ID] = true
	}
	for _, id := range []string{"closed_open_door", "closed_lock_if_has_key", "closed_lock", "closed_kick", "removed_any"} {
		require.True(t, ids[id], id)
	}
}

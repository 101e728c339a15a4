package spec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A name over MaxNameBytes is reported at its line, declared or
// referenced, without being quoted in full and without a suggestion.
func TestNameLengthIsBounded(t *testing.T) {
	door := readDoor(t)
	long := strings.Repeat("l", 32000)
	cases := []struct {
		name, src, at, msg string
	}{
		{"declared state", strings.Replace(door, "  - name: locked\n", "  - name: "+long+"\n", 1), "  - name: " + long, "state name \"llllllllllllllllllllllll\"… is 32000 bytes long; names are at most 64 bytes"},
		{"declared event of 65 bytes", strings.Replace(door, "  - name: power_lost\n", "  - name: power_lost_"+strings.Repeat("x", 54)+"\n", 1), "  - name: power_lost_", "is 65 bytes long"},
		{"state referenced by to", strings.Replace(door, "    on: auto_close\n    to: closed\n", "    on: auto_close\n    to: "+long+"\n", 1), "    to: " + long, "state name \"llllllllllllllllllllllll\"… is 32000 bytes long"},
		{"event referenced by on", strings.Replace(door, "  - from: closed\n    on: power_lost\n", "  - from: closed\n    on: "+long+"\n", 1), "    on: " + long, "event name"},
		{"guard", strings.Replace(door, "    on: lock\n    guard: authorized\n    to: locked\n    effects", "    on: lock\n    guard: "+long+"\n    to: locked\n    effects", 1), "    guard: " + long, "guard name"},
		{"action", strings.Replace(door, "      - do log_open\n", "      - do "+long+"\n", 1), "      - do " + long, "effect argument name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NotEqual(t, door, c.src, "the edit applies")
			_, err := Load(map[string][]byte{"door.yaml": []byte(c.src)})
			require.Error(t, err)
			lines := requireOneLineErrors(t, err)
			want := fmt.Sprintf("door.yaml:%d: ", lineOf(t, c.src, c.at))
			found := false
			for _, l := range lines {
				assert.Less(t, len(l), 300, "an error line never repeats a long name")
				found = found || strings.HasPrefix(l, want) && strings.Contains(l, c.msg)
			}
			require.True(t, found, "want %q…%q in\n%.2000s", want, c.msg, err)
			require.NotContains(t, err.Error(), "did you mean")
		})
	}
}

// editDistance computed in a band equals the full Levenshtein distance
// whenever that is within the limit, and says "over" otherwise.
func TestEditDistanceBand(t *testing.T) {
	full := func(a, b string) int {
		d := make([][]int, len(a)+1)
		for i := range d {
			d[i] = make([]int, len(b)+1)
			d[i][0] = i
		}
		for j := range d[0] {
			d[0][j] = j
		}
		for i := 1; i <= len(a); i++ {
			for j := 1; j <= len(b); j++ {
				cost := 1
				if a[i-1] == b[j-1] {
					cost = 0
				}
				d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			}
		}
		return d[len(a)][len(b)]
	}
	rng := rand.New(rand.NewPCG(7, 7))
	word := func() string {
		b := make([]byte, rng.IntN(9))
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		return string(b)
	}
	for range 20000 {
		a, b, limit := word(), word(), rng.IntN(4)
		want := min(full(a, b), limit+1)
		require.Equal(t, want, editDistance(a, b, limit), "%q %q limit %d", a, b, limit)
	}
}

// The suggestion search is bounded: long names are never compared, and a
// machine's suggestions stop when their budget is spent.
func TestSuggestionCostIsBounded(t *testing.T) {
	require.Equal(t, " (did you mean opening?)", suggest("openin", []string{"closed", "opening"}))
	long := strings.Repeat("x", 1000)
	budget := 100
	require.Empty(t, suggestWithin(long, []string{long + "y"}, &budget))
	require.Equal(t, 100, budget, "an over-long name costs nothing")

	known := make([]string, 40)
	for i := range known {
		known[i] = fmt.Sprintf("state_%02d_%s", i, strings.Repeat("a", 40))
	}
	budget = 5000
	for range 1000 {
		suggestWithin("state_99_"+strings.Repeat("a", 40), known, &budget)
	}
	require.GreaterOrEqual(t, budget, 0)
	require.Empty(t, suggestWithin("state_00_"+strings.Repeat("a", 40), known, &budget), "no suggestion once the budget is spent")
}

// timerTable is a valid machine of n states that all arm the same n
// timers, with a rule re-arming each timer in each state: n² goto rules
// whose armed sets the timer check must compare.
func timerTable(n int) string {
	var b strings.Builder
	states := make([]string, 0, n)
	timers := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		states = append(states, fmt.Sprintf("s%d", i))
		timers = append(timers, fmt.Sprintf("t%d", i))
	}
	list := func(names []string) string { return "[" + strings.Join(names, ", ") + "]" }
	b.WriteString("machine: timer_table\ndoc: a wide timer table\ninstance: {identity: test, doc: test}\n\nstates:\n")
	b.WriteString("  - name: idle\n    initial: true\n    doc: no timer yet\n")
	for _, s := range states {
		fmt.Fprintf(&b, "  - name: %s\n    doc: every timer armed\n    timers: %s\n", s, list(timers))
	}
	b.WriteString("  - name: done\n    terminal: success\n    doc: finished\n\nevents:\n")
	b.WriteString("  - name: go\n    message: table_go\n    from: core\n    doc: next state\n")
	b.WriteString("  - name: finish\n    message: table_finish\n    from: core\n    doc: stop\n")
	for _, t := range timers {
		fmt.Fprintf(&b, "  - name: %s\n    timer: 30s\n    by: core\n    doc: a timer\n", t)
	}
	b.WriteString("\nrules:\n")
	starts := make([]string, len(timers))
	stops := make([]string, len(timers))
	for i, t := range timers {
		starts[i], stops[i] = "start "+t, "stop "+t
	}
	fmt.Fprintf(&b, "  - from: idle\n    on: go\n    to: %s\n    effects: %s\n", states[0], list(starts))
	for i := 0; i+1 < len(states); i++ {
		fmt.Fprintf(&b, "  - from: %s\n    on: go\n    to: %s\n", states[i], states[i+1])
	}
	fmt.Fprintf(&b, "  - from: %s\n    on: finish\n    to: done\n    effects: %s\n", list(states), list(stops))
	for _, t := range timers {
		fmt.Fprintf(&b, "  - from: %s\n    on: %s\n    to: same\n    effects: [start %s]\n", list(states), t, t)
	}
	fmt.Fprintf(&b, "  - from: %s\n    on: \"*\"\n    ignore: not relevant\n", list(append(append([]string{"idle"}, states...), "done")))
	return b.String()
}

func loadTimerTable(t testing.TB, n int) *Machine {
	model, err := Load(map[string][]byte{"table.yaml": []byte(timerTable(n))})
	require.NoError(t, err)
	return model.Machines[0]
}

// The timer check allocates a fixed number of times whatever the size of
// the table: its work is a few words per rule, not a map per rule.
func TestTimerCheckIsLinear(t *testing.T) {
	m := loadTimerTable(t, 120)
	gotos := 0
	for _, r := range m.Rules {
		if r.Kind == RuleGoto {
			gotos++
		}
	}
	require.GreaterOrEqual(t, gotos, 120*120)
	allocs := testing.AllocsPerRun(3, func() {
		var errs errorList
		checkTimers(m, &errs)
		if !errs.empty() {
			t.Fatal(errs.err())
		}
	})
	assert.LessOrEqual(t, allocs, 8.0)
}

// BenchmarkCheckTimers: the timer check of a 120-state, 120-timer table.
func BenchmarkCheckTimers(b *testing.B) {
	m := loadTimerTable(b, 120)
	b.ReportAllocs()
	for b.Loop() {
		var errs errorList
		checkTimers(m, &errs)
	}
}

// BenchmarkLoadTimerTable: the whole load of the same table.
func BenchmarkLoadTimerTable(b *testing.B) {
	src := []byte(timerTable(120))
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Load(map[string][]byte{"table.yaml": src}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSuggestLongNames: 40 unknown references among 40 declared names
// of 64 bytes, the longest the format allows.
func BenchmarkSuggestLongNames(b *testing.B) {
	known := make([]string, 40)
	for i := range known {
		known[i] = fmt.Sprintf("s%02d_%s", i, strings.Repeat("a", MaxNameBytes-4))
	}
	b.ReportAllocs()
	for b.Loop() {
		sug := &suggester{budget: suggestBudget}
		m := map[string]*State{}
		for _, k := range known {
			m[k] = nil
		}
		for i := range 40 {
			suggestFrom(sug, "state", fmt.Sprintf("x%02d_%s", i, strings.Repeat("a", MaxNameBytes-4)), m)
		}
	}
}

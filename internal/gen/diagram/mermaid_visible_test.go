package diagram

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/spec"
)

// specMachines loads the real tables in spec/, the ones GitHub draws.
func specMachines(t *testing.T) []*spec.Machine {
	t.Helper()
	model, err := spec.LoadDir(os.DirFS("../../.."), "spec", "spec")
	require.NoError(t, err)
	require.NotEmpty(t, model.Machines)
	return model.Machines
}

// pageMermaid returns the diagram embedded in a page, the one GitHub draws.
func pageMermaid(t *testing.T, page []byte) string {
	t.Helper()
	_, rest, ok := strings.Cut(string(page), "```mermaid\n")
	require.True(t, ok, "page has no mermaid block")
	src, _, ok := strings.Cut(rest, "```\n")
	require.True(t, ok, "mermaid block is not closed")
	return src
}

// TestMermaidShowsEveryState reads every diagram the way Mermaid does and
// checks that each state's box shows its name (then its timers) and nothing
// else, that no two boxes read alike, and that the arrows are the spec's.
func TestMermaidShowsEveryState(t *testing.T) {
	for _, m := range append(specMachines(t), loadLease(t)) {
		t.Run(m.Name, func(t *testing.T) {
			assert.Empty(t, mermaidProblems(m, string(Mermaid(m))), "%s.mmd", m.Name)
			assert.Empty(t, mermaidProblems(m, pageMermaid(t, Page(m))), "%s.md", m.Name)
		})
	}
}

// TestMermaidProblemsCatchHiddenNames feeds the check the form the renderer
// used to emit, where a timer description replaced the state's name.
func TestMermaidProblemsCatchHiddenNames(t *testing.T) {
	m := loadLease(t)
	good := string(Mermaid(m))
	decl := "    state \"held<br/>⏱ lease_timeout<br/>↺ renew [has_capacity]\" as held\n"
	require.Contains(t, good, decl)

	old := strings.Replace(good, decl, "    held : ⏱ lease_timeout\n    held --> held : renew [has_capacity]\n", 1)
	assert.Contains(t, mermaidProblems(m, old), `state "held" has no box showing its name`)

	loop := strings.Replace(good, decl, "    state \"held<br/>⏱ lease_timeout\" as held\n    held --> held : renew [has_capacity]\n", 1)
	assert.Equal(t, []string{`arrow held → held is no transition of lease`, `box of "held" does not list its internal transitions`},
		mermaidProblems(m, loop))

	phantom := good + "    held --> helt : renew\n"
	assert.Contains(t, mermaidProblems(m, phantom), `box "helt" is no state of lease`)

	unlabelled := strings.Replace(good, "held --> released : release", "held --> released", 1)
	assert.Contains(t, mermaidProblems(m, unlabelled), "arrow held → released has no label")
}

// mermaidProblems lists what a reader of the rendered diagram src would get
// wrong about m; nil when nothing.
func mermaidProblems(m *spec.Machine, src string) []string {
	d, err := parseMermaid(src)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	states := map[string]bool{}
	for _, s := range m.States {
		states[s.Name] = true
	}
	if d.direction == "" {
		problem("no direction statement: the layout must be chosen, not Mermaid's default")
	}

	// Boxes by the name they show on their first line.
	names := map[string]string{} // shown name → id
	shown := map[string]string{} // whole label → id
	for _, id := range d.order {
		lines := d.states[id].lines()
		label := strings.Join(lines, " / ")
		if other, dup := shown[label]; dup {
			problem("boxes %s and %s both read %q", other, id, label)
		}
		shown[label] = id
		names[lines[0]] = id
		if !states[lines[0]] {
			problem("box %q is no state of %s", lines[0], m.Name)
		}
	}
	ids := map[*spec.State]string{}
	for _, s := range m.States {
		id, ok := names[s.Name]
		if !ok {
			problem("state %q has no box showing its name", s.Name)
			continue
		}
		ids[s] = id
		// The name, the timers, then the internal transitions.
		got := d.states[id].lines()
		want := []string{s.Name}
		for _, t := range s.Timers {
			want = append(want, "⏱ "+t.Name)
		}
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			problem("box of %q reads %q, want %q first", s.Name, got, want)
			continue
		}
		var internal []*spec.Rule
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				if r.Kind == spec.RuleGoto && r.Internal() {
					internal = append(internal, r)
				}
			}
		}
		var loop []string
		for _, line := range got[len(want):] {
			trigger, ok := strings.CutPrefix(line, "↺ ")
			if !ok {
				problem("box of %q has line %q, neither timer nor internal transition", s.Name, line)
			}
			loop = append(loop, trigger)
		}
		switch {
		case len(internal) == 0 && len(loop) > 0:
			problem("box of %q lists internal transitions %q it does not have", s.Name, loop)
		case len(internal) > 0 && len(loop) == 0:
			problem("box of %q does not list its internal transitions", s.Name)
		case len(internal) > 0:
			if p := labelProblem(loop, internal); p != "" {
				problem("internal transitions of %q: %s", s.Name, p)
			}
		}
	}

	if len(ids) < len(m.States) {
		// Without a box for every state the arrows cannot be matched.
		slices.Sort(problems)
		return problems
	}

	// Arrows: the initial one, one per terminal state, and one per pair of
	// distinct states that a goto joins, labelled with its rules' events.
	want := map[string][]*spec.Rule{}
	if init := m.Initial(); init != nil {
		want["[*] → "+ids[init]] = nil
	}
	for _, s := range m.States {
		if s.Terminal() {
			want[ids[s]+" → [*]"] = nil
		}
	}
	for _, s := range m.States {
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				if r.Kind == spec.RuleGoto && !r.Internal() {
					k := ids[r.From] + " → " + ids[r.To]
					want[k] = append(want[k], r)
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, tr := range d.transitions {
		k := tr.from + " → " + tr.to
		rules, ok := want[k]
		switch {
		case !ok:
			problem("arrow %s is no transition of %s", k, m.Name)
		case seen[k]:
			problem("arrow %s is drawn twice", k)
		case rules == nil && tr.label != nil:
			problem("arrow %s has a label", k)
		case rules != nil && tr.label == nil:
			problem("arrow %s has no label", k)
		case rules != nil:
			if p := labelProblem(tr.label, rules); p != "" {
				problem("arrow %s: %s", k, p)
			}
		}
		seen[k] = true
	}
	for k := range want {
		if !seen[k] {
			problem("arrow %s is missing", k)
		}
	}
	slices.Sort(problems)
	return problems
}

var moreRE = regexp.MustCompile(`^\+(\d+) more$`)

// labelProblem checks that an arrow's label names its rules' events, at most
// shownTriggers lines of them, with a count of the rest.
func labelProblem(label []string, rules []*spec.Rule) string {
	if len(label) > shownTriggers {
		return fmt.Sprintf("%d label lines, more than %d", len(label), shownTriggers)
	}
	named := label
	hidden := 0
	if m := moreRE.FindStringSubmatch(label[len(label)-1]); m != nil {
		named = label[:len(label)-1]
		hidden, _ = strconv.Atoi(m[1])
	}
	if len(named)+hidden != len(rules) {
		return fmt.Sprintf("label %q stands for %d rules, want %d", label, len(named)+hidden, len(rules))
	}
	for i, line := range named {
		if event, _, _ := strings.Cut(line, " "); event != rules[i].Event.Name {
			return fmt.Sprintf("label line %q, want event %s", line, rules[i].Event.Name)
		}
	}
	return ""
}

// TestMermaidGroupsLongLabels: five internal transitions become the first two
// and a count in the box; the page keeps all five in its matrix and
// transitions.
func TestMermaidGroupsLongLabels(t *testing.T) {
	model, err := spec.Load(map[string][]byte{"spec/g.yaml": []byte(`
machine: g
doc: many events on one arrow
instance: {identity: test, doc: test}
states:
  - {name: open, initial: true, doc: a}
  - {name: shut, terminal: success, doc: b}
events:
  - {name: e1, local: both, doc: c}
  - {name: e2, local: both, doc: c}
  - {name: e3, local: both, doc: c}
  - {name: e4, local: both, doc: c}
  - {name: e5, local: both, doc: c}
  - {name: stop, local: both, doc: c}
rules:
  - {from: open, on: [e1, e2, e3, e4, e5], to: open}
  - {from: open, on: stop, to: shut}
  - {from: shut, on: "*", ignore: settled}
`)})
	require.NoError(t, err)
	m, _ := model.Machine("g")
	assert.Contains(t, string(Mermaid(m)), "state \"open<br/>↺ e1<br/>↺ e2<br/>↺ +3 more\" as open\n")
	assert.NotContains(t, string(Mermaid(m)), "open --> open")
	assert.Empty(t, mermaidProblems(m, string(Mermaid(m))))
	page := string(Page(m))
	for _, e := range []string{"e3", "e4", "e5"} {
		assert.Contains(t, page, "| `open` | `"+e+"` |  | ↺ `open` |", "transition row of %s", e)
	}
}

// TestMermaidTextReadsBack: whatever spec text holds, the escaped form is a
// valid label that renders as the original line.
func TestMermaidTextReadsBack(t *testing.T) {
	for _, s := range []string{
		`a ; b #1 <x> & %% "q" {} :: c:d`, "x #59; y", "tab\tand\nnewline", "⏱ é → ok", "direction_lr",
	} {
		lines, err := checkText(mermaidText(s))
		require.NoError(t, err, "%q", s)
		assert.Equal(t, []string{oneLine(s)}, lines, "%q", s)
	}
}

// TestParseMermaidRejects: statements Mermaid would misread, or that the
// subset does not cover, are errors that name the line.
func TestParseMermaidRejects(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"no header":         {"    a --> b\n", "stateDiagram-v2"},
		"directive":         {"%%{init: {}}%%\nstateDiagram-v2\n", "directive"},
		"raw semicolon":     {"stateDiagram-v2\n    a --> b : x; y\n", `raw ';'`},
		"raw colon":         {"stateDiagram-v2\n    a : x:y\n", `raw ':'`},
		"raw tag":           {"stateDiagram-v2\n    a --> b : <b>x</b>\n", `raw '<'`},
		"quote in label":    {"stateDiagram-v2\n    state \"a\"b\" as a\n", "not a statement"},
		"unknown entity":    {"stateDiagram-v2\n    a : #nbsp;\n", "unknown entity"},
		"keyword id":        {"stateDiagram-v2\n    a --> end\n", "keyword"},
		"keyword any case":  {"stateDiagram-v2\n    State --> a\n", "keyword"},
		"late declaration":  {"stateDiagram-v2\n    a : x\n    state \"a\" as a\n", "declared after"},
		"class before def":  {"stateDiagram-v2\n    class a done\n    classDef done fill:#fff\n", "before its classDef"},
		"two directions":    {"stateDiagram-v2\n    direction LR\n    direction TB\n", "second direction"},
		"direction in text": {"stateDiagram-v2\n    a --> b : go direction LR\n", "direction statement"},
		"empty label":       {"stateDiagram-v2\n    a --> b : #32;\n", "empty text"},
		"other statement":   {"stateDiagram-v2\n    hide empty description\n", "not a statement"},
		"hyphenated id":     {"stateDiagram-v2\n    a-b --> c\n", "not a statement"},
	} {
		_, err := parseMermaid(tc.src)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), tc.want, name)
			assert.Contains(t, err.Error(), "line ", name)
		}
	}
}

// TestMermaidStateLines follows Mermaid's rule for what a box shows.
func TestMermaidStateLines(t *testing.T) {
	for src, want := range map[string][]string{
		"stateDiagram-v2\n    a --> b\n":                                       {"a"},
		"stateDiagram-v2\n    a : ⏱ t\n":                                       {"⏱ t"}, // the name is gone
		"stateDiagram-v2\n    state \"a\" as a\n    a : ⏱ t\n":                 {"a", "⏱ t"},
		"stateDiagram-v2\n    state \"a<br/>⏱ t<br>⏱ u\" as a\n":               {"a", "⏱ t", "⏱ u"},
		"stateDiagram-v2\n    state \"end #35;1\" as end_\n    end_ --> [*]\n": {"end #1"},
	} {
		d, err := parseMermaid(src)
		require.NoError(t, err, src)
		id := d.order[0]
		assert.Equal(t, want, d.states[id].lines(), src)
	}
}

// TestMermaidKeywordsCoverLexer: every word the syntax check knows Mermaid's
// lexer to read as syntax gets an alias from the renderer.
func TestMermaidKeywordsCoverLexer(t *testing.T) {
	for word := range mmdKeywords {
		assert.True(t, mermaidKeywords[word], "mermaidKeywords lacks %q", word)
	}
}

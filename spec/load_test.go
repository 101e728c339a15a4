package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
)

// doorFile is the valid fixture every malformed case starts from.
const doorFile = "testdata/valid/door.yaml"

func readDoor(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(doorFile)
	require.NoError(t, err)
	return string(b)
}

func loadDoor(t *testing.T) *Machine {
	t.Helper()
	model, err := Load(map[string][]byte{"door.yaml": []byte(readDoor(t))})
	require.NoError(t, err)
	require.Len(t, model.Machines, 1)
	m, ok := model.Machine("door")
	require.True(t, ok)
	return m
}

// lineOf is the 1-based line on which needle starts; needle must occur
// exactly once in src so that a case can never silently point elsewhere.
func lineOf(t testing.TB, src, needle string) int {
	t.Helper()
	require.Equalf(t, 1, strings.Count(src, needle), "needle %q must occur exactly once", needle)
	return 1 + strings.Count(src[:strings.Index(src, needle)], "\n")
}

// specErrors unpacks the joined error of a load into its *Error values.
func specErrors(t testing.TB, err error) []*Error {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]*Error, 0, len(errs))
	for _, e := range errs {
		var se *Error
		require.Truef(t, errors.As(e, &se), "%T %q is not a *spec.Error", e, e)
		out = append(out, se)
	}
	return out
}

// lineRE is the shape of every error line: file:line: message.
var lineRE = regexp.MustCompile(`^[^\s:]+\.yaml:[1-9][0-9]*: \S`)

func requireOneLineErrors(t testing.TB, err error) []string {
	t.Helper()
	lines := strings.Split(err.Error(), "\n")
	for _, l := range lines {
		assert.Regexpf(t, lineRE, l, "error line is not `file:line: message`")
	}
	assert.Len(t, specErrors(t, err), len(lines), "one *Error per line")
	return lines
}

func state(t *testing.T, m *Machine, name string) *State {
	t.Helper()
	for _, s := range m.States {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no state %q", name)
	return nil
}

func event(t *testing.T, m *Machine, name string) *Event {
	t.Helper()
	for _, e := range m.Events {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no event %q", name)
	return nil
}

func effects(r *Rule) []string {
	out := make([]string, 0, len(r.Effects))
	for _, ef := range r.Effects {
		out = append(out, ef.String())
	}
	return out
}

func TestLoadValidMachine(t *testing.T) {
	src := readDoor(t)
	m := loadDoor(t)
	at := func(needle string) Pos { return Pos{File: "door.yaml", Line: lineOf(t, src, needle)} }

	assert.Equal(t, "door", m.Name)
	assert.Equal(t, "door ID", m.Scope)
	assert.Equal(t, Pos{File: "door.yaml", Line: 1}, m.Pos)

	var names []string
	for i, s := range m.States {
		assert.Equal(t, i, s.Index)
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"closed", "opening", "open", "locked", "broken"}, names)
	closed, opening, open := state(t, m, "closed"), state(t, m, "opening"), state(t, m, "open")
	locked, broken := state(t, m, "locked"), state(t, m, "broken")
	require.Same(t, closed, m.Initial())
	assert.Equal(t, at("- name: closed"), closed.Pos)
	assert.Equal(t, OutcomeSuccess, locked.Outcome)
	assert.Equal(t, OutcomeFailure, broken.Outcome)
	assert.False(t, open.Terminal())

	openRequest, opened, lock := event(t, m, "open_request"), event(t, m, "opened"), event(t, m, "lock")
	openWait, autoClose, powerLost := event(t, m, "open_wait"), event(t, m, "auto_close"), event(t, m, "power_lost")
	assert.Equal(t, EventMessage, opened.Kind)
	assert.Equal(t, "door_status", opened.Message)
	assert.Equal(t, RoleRuntime, opened.From)
	assert.Equal(t, EventTimer, openWait.Kind)
	assert.Equal(t, 30*time.Second, openWait.Duration)
	assert.Equal(t, RoleCore, openWait.By)
	assert.Equal(t, 5*time.Minute, autoClose.Duration)
	assert.Equal(t, RoleRuntime, autoClose.By)
	assert.Equal(t, EventLocal, powerLost.Kind)
	assert.Equal(t, RoleBoth, powerLost.By)
	assert.Equal(t, []*Event{openWait, autoClose}, m.Timers())
	assert.Equal(t, []*Event{openWait}, opening.Timers)
	assert.Equal(t, []*Event{autoClose}, open.Timers)
	assert.Empty(t, closed.Timers)
	assert.Equal(t, []string{"door_ack", "door_lock", "door_open", "door_open_again", "door_status"}, m.Messages())
	assert.Equal(t, []string{"door_ack", "door_open_again"}, m.SentMessages())

	// Every cell is declared and ends with exactly one unguarded fallback.
	cells := 0
	for _, s := range m.States {
		for _, e := range m.Events {
			c := m.Cell(s, e)
			require.NotEmptyf(t, c, "(%s, %s)", s.Name, e.Name)
			for i, r := range c {
				assert.Same(t, s, r.From)
				assert.Same(t, e, r.Event)
				assert.Equalf(t, i == len(c)-1, r.Guard == nil, "(%s, %s) candidate %d", s.Name, e.Name, i)
			}
			cells += len(c)
		}
	}
	assert.Equal(t, cells, len(m.Rules), "Rules holds every candidate once")
	assert.Equal(t, 33, cells)

	t.Run("guard then fallback, in declaration order", func(t *testing.T) {
		c := m.Cell(opening, opened)
		require.Len(t, c, 2)
		assert.Equal(t, RuleGoto, c[0].Kind)
		assert.Equal(t, "newer_revision", c[0].Guard.Name)
		assert.Same(t, open, c[0].To)
		assert.Equal(t, at("- from: opening\n    on: opened\n    guard"), c[0].Pos)
		assert.Equal(t, RuleIgnore, c[1].Kind)
		assert.Nil(t, c[1].Guard)
		assert.Equal(t, "stale or repeated revision", c[1].Reason)
		assert.False(t, c[1].Wildcard)

		// One YAML rule with a list of states expands into one candidate per cell.
		for _, s := range []*State{closed, open} {
			c := m.Cell(s, lock)
			require.Len(t, c, 2)
			assert.Equal(t, "authorized", c[0].Guard.Name)
			assert.Same(t, locked, c[0].To)
			assert.Equal(t, RuleReject, c[1].Kind)
			assert.Equal(t, "not authorized", c[1].Reason)
			assert.Equal(t, at("- from: [closed, open]"), c[1].Pos)
			assert.False(t, c[1].Wildcard, "a declared cell is not filled by the catch-all")
		}
	})

	t.Run("to: same is an internal transition", func(t *testing.T) {
		c := m.Cell(open, openRequest)
		require.Len(t, c, 1)
		assert.Same(t, open, c[0].To)
		assert.True(t, c[0].Internal())
		assert.False(t, m.Cell(closed, openRequest)[0].Internal())
		assert.Equal(t, []string{"core: send door_open_again"}, effects(c[0]))
	})

	t.Run("catch-all fills only undeclared cells", func(t *testing.T) {
		wild := map[string][]string{}
		for _, r := range m.Rules {
			if r.Wildcard {
				wild[r.From.Name] = append(wild[r.From.Name], r.Event.Name)
				assert.Nil(t, r.Guard)
				assert.NotEqual(t, RuleGoto, r.Kind)
			}
		}
		assert.Equal(t, map[string][]string{
			"closed":  {"opened", "open_wait", "auto_close"},
			"opening": {"open_request", "lock", "auto_close"},
			"open":    {"opened", "open_wait"},
			"locked":  {"open_request", "opened", "lock", "open_wait", "auto_close", "power_lost"},
			"broken":  {"open_request", "opened", "lock", "open_wait", "auto_close", "power_lost"},
		}, wild)
		r := m.Cell(closed, opened)[0]
		assert.Equal(t, RuleIgnore, r.Kind)
		assert.Equal(t, "not relevant in this state", r.Reason)
		assert.Equal(t, at("- from: [closed, opening, open]"), r.Pos)
		r = m.Cell(broken, powerLost)[0]
		assert.Equal(t, RuleReject, r.Kind)
		assert.Equal(t, "the door is settled", r.Reason)
	})

	t.Run("effect roles", func(t *testing.T) {
		r := m.Cell(closed, openRequest)[0]
		require.Len(t, r.Effects, 2)
		assert.Equal(t, EffectStart, r.Effects[0].Kind)
		assert.Same(t, openWait, r.Effects[0].Timer)
		assert.Equal(t, RoleCore, r.Effects[0].Role, "an unprefixed start takes the timer's owner")
		assert.Equal(t, EffectSend, r.Effects[1].Kind)
		assert.Equal(t, "door_ack", r.Effects[1].Message)
		assert.Equal(t, RoleRuntime, r.Effects[1].Role)

		r = m.Cell(opening, opened)[0]
		assert.Equal(t, []string{"core: stop open_wait", "runtime: start auto_close", "do log_open"}, effects(r))
		assert.Equal(t, RoleBoth, r.Effects[2].Role, "an unprefixed do is performed by both peers")
		assert.Equal(t, "log_open", r.Effects[2].Action.Name)
		assert.Equal(t, []string{"runtime: stop auto_close"}, effects(m.Cell(open, powerLost)[0]))
	})

	t.Run("Paths", func(t *testing.T) {
		paths := m.Paths()
		got := map[string][]string{}
		for s, p := range paths {
			steps := []string{}
			for _, r := range p {
				g := ""
				if r.Guard != nil {
					g = "[" + r.Guard.Name + "]"
				}
				steps = append(steps, fmt.Sprintf("%s-%s%s->%s", r.From.Name, r.Event.Name, g, r.To.Name))
			}
			got[s.Name] = steps
		}
		assert.Equal(t, map[string][]string{
			"closed":  {},
			"opening": {"closed-open_request->opening"},
			"open":    {"closed-open_request->opening", "opening-opened[newer_revision]->open"},
			"locked":  {"closed-lock[authorized]->locked"},
			"broken":  {"closed-power_lost->broken"},
		}, got)
	})

	t.Run("Select", func(t *testing.T) {
		none := func(*Guard) bool { return false }
		all := func(*Guard) bool { return true }
		only := func(name string) func(*Guard) bool { return func(g *Guard) bool { return g.Name == name } }

		assert.Same(t, open, m.Select(opening, opened, all).To)
		assert.Same(t, open, m.Select(opening, opened, only("newer_revision")).To)
		assert.Equal(t, RuleIgnore, m.Select(opening, opened, none).Kind)
		assert.Equal(t, RuleIgnore, m.Select(opening, opened, only("authorized")).Kind)
		assert.Same(t, locked, m.Select(closed, lock, only("authorized")).To)
		assert.Equal(t, RuleReject, m.Select(closed, lock, none).Kind)
		assert.True(t, m.Select(closed, opened, all).Wildcard)
		assert.Equal(t, RuleReject, m.Select(locked, lock, all).Kind)
		asked := 0
		m.Select(open, autoClose, func(*Guard) bool { asked++; return true })
		assert.Zero(t, asked, "an unguarded cell evaluates no guard")
	})
}

// badCase is one malformed spec: the loader must report msg at file:line.
type badCase struct {
	name  string
	src   string            // door.yaml, unless files is set
	files map[string]string // several files
	file  string            // the file the error names; default door.yaml
	at    string            // unique text of the erroring file; the error is on the line where it starts
	line  int               // the expected line when at is empty
	msg   string
	not   string // a substring the message must not contain
}

func (c badCase) inputs() map[string][]byte {
	files := map[string][]byte{}
	if c.files != nil {
		for k, v := range c.files {
			files[k] = []byte(v)
		}
		return files
	}
	files["door.yaml"] = []byte(c.src)
	return files
}

func badCases(t testing.TB) []badCase {
	door := readDoor(t)
	// ed applies old/new replacements in turn to the valid fixture; each old
	// text must occur exactly once so that a case breaks exactly one thing.
	ed := func(pairs ...string) string {
		t.Helper()
		src := door
		for i := 0; i+1 < len(pairs); i += 2 {
			require.Equalf(t, 1, strings.Count(src, pairs[i]), "edit target %q must occur exactly once", pairs[i])
			src = strings.Replace(src, pairs[i], pairs[i+1], 1)
		}
		return src
	}
	// cut removes the fixture from the start of from up to (not including) to;
	// to == "" cuts to the end.
	cut := func(from, to string) string {
		t.Helper()
		i := strings.Index(door, from)
		j := len(door)
		if to != "" {
			j = strings.Index(door, to)
		}
		require.True(t, i >= 0 && j >= i, "cut %q..%q", from, to)
		return door[:i] + door[j:]
	}
	appendRule := func(rule string) string { return door + rule }
	doorLine := func(needle string) int { return lineOf(t, door, needle) }

	return []badCase{
		// Not YAML, not a machine.
		{name: "not YAML: mapping value inside a scalar", src: ed("doc: the door is open\n", "doc: the door is open: really\n"),
			at: "doc: the door is open: really", msg: "not valid YAML: mapping values are not allowed in this context"},
		{name: "not YAML: tab indentation", src: "machine: door\n\tdoc: a door\n", line: 2, msg: "not valid YAML: found a tab character"},
		{name: "not a mapping: prose", src: "just some prose, not a spec\n", line: 1, msg: `the machine must be a mapping, found "just some prose, not a spec"`},
		{name: "not a mapping: a list", src: "- machine: door\n", line: 1, msg: "the machine must be a mapping, found a list"},
		{name: "not a mapping: null document", src: "~\n", line: 1, msg: "the machine must be a mapping, found null"},
		{name: "empty mapping", src: "{}\n", line: 1, msg: `the machine has no "machine" key`},
		{name: "empty file", src: "", line: 1, msg: "empty spec file"},
		{name: "comment-only file", src: "# the door machine, to be written\n", line: 1, msg: "empty spec file"},
		{name: "control character", src: ed("doc: door ID}", "doc: door\x01ID}"), at: "instance: {identity: door", msg: "not valid YAML: control characters are not allowed"},
		{name: "two YAML documents", src: door + "---\nmachine: porch\n", at: "---", msg: "a spec file holds exactly one YAML document"},
		{name: "second YAML document is not valid YAML", src: door + "---\nmachine: [porch\n", at: "---", msg: "a spec file holds exactly one YAML document"},
		{name: "duplicate machine across files", files: map[string]string{"a.yaml": door, "b.yaml": door}, file: "b.yaml", line: 1,
			msg: `machine "door" is already declared at a.yaml:1`},

		// Unknown and duplicate keys.
		{name: "unknown top-level key", src: ed("doc: door ID}\n", "doc: door ID}\nversion: 2\n"), at: "version: 2",
			msg: `the machine has unknown key "version" (allowed: machine, doc, instance, peers, states, events, guards, actions, resources, rules)`},
		{name: "unknown key in a state", src: ed("    doc: the door is closed\n", "    doc: the door is closed\n    color: red\n"), at: "color: red",
			msg: `a state has unknown key "color" (allowed: name, doc, initial, terminal, timers)`},
		{name: "unknown key in an event", src: ed("    doc: core locks the door\n", "    doc: core locks the door\n    retries: 3\n"), at: "retries: 3",
			msg: `an event has unknown key "retries"`},
		{name: "unknown key in a rule", src: ed("    on: open_wait\n    to: broken\n", "    on: open_wait\n    to: broken\n    when: later\n"), at: "when: later",
			msg: `a rule has unknown key "when" (allowed: id, from, on, guard, to, ignore, reject, effects)`},
		{name: "rule id not an identifier", src: ed("  - from: opening\n    on: open_wait\n", "  - id: Open-Wait\n    from: opening\n    on: open_wait\n"), at: "id: Open-Wait",
			msg: `rule id "Open-Wait" must be lower_snake_case`},
		{name: "rule id another rule derives", src: ed("  - from: opening\n    on: open_wait\n", "  - id: opening_opened\n    from: opening\n    on: open_wait\n"), at: "id: opening_opened",
			msg: `rule id "opening_opened" is already the id of the rule at door.yaml:`},
		{name: "derived rule id another rule has", src: ed("  - from: opening\n    on: open_wait\n", "  - id: open_open_request\n    from: opening\n    on: open_wait\n"),
			at: "  - from: open\n    on: open_request", msg: `rule id "open_open_request", derived from the rule's first state, event and guard, is already the id of the rule at door.yaml:`},
		{name: "unknown key in a guard", src: ed("    doc: the lock request is authorized\n", "    doc: the lock request is authorized\n    cost: 1\n"), at: "cost: 1",
			msg: `a guard has unknown key "cost"`},
		{name: "unknown key in an action", src: ed("    doc: record that the door opened\n", "    doc: record that the door opened\n    undo: true\n"), at: "undo: true",
			msg: `an action has unknown key "undo"`},
		{name: "duplicate top-level key", src: ed("doc: door ID}\n", "doc: door ID}\ninstance: {identity: door, doc: door number}\n"), at: "instance: {identity: door, doc: door number}",
			msg: `the machine repeats key "instance"`},
		{name: "duplicate key in a state", src: ed("    terminal: failure\n", "    terminal: failure\n    terminal: success # again\n"), at: "terminal: success # again",
			msg: `a state repeats key "terminal"`},
		{name: "duplicate key in a rule", src: ed("    on: open_wait\n    to: broken\n", "    on: open_wait\n    to: broken\n    to: closed # again\n"), at: "to: closed # again",
			msg: `a rule repeats key "to"`},

		// Wrong types.
		{name: "list where a string is expected", src: ed("doc: door ID}", "doc: [door, ID]}"), at: "instance: {identity: door", msg: "instance doc must be a string, found a list"},
		{name: "instance without identity", src: ed("instance: {identity: door, doc: door ID}", "instance: {doc: door ID}"), at: "instance: {doc: door ID}", msg: "the instance needs identity:"},
		{name: "state name is a list", src: ed("  - name: broken\n", "  - name: [broken]\n"), at: "- name: [broken]", msg: "state name must be a string, found a list"},
		{name: "to is a list", src: ed("    to: opening\n", "    to: [opening]\n"), at: "to: [opening]", msg: "to must be a string, found a list"},
		{name: "effect is a mapping", src: ed("      - do log_open\n", "      - do: log_open\n"), at: "- do: log_open", msg: "an effect must be a string; one with a role prefix needs quotes"},
		{name: "effects is a string", src: ed(`    effects: ["core: send door_open_again"]`, `    effects: "core: send door_open_again"`), at: `effects: "core: send`,
			msg: `effects must be a list, found "core: send door_open_again"`},
		{name: "timers is a mapping", src: ed("timers: [auto_close]", "timers: {auto_close: true}"), at: "timers: {auto_close: true}",
			msg: "timers must be a name or a list of names, found a mapping"},
		{name: "event is a scalar", src: ed("  - name: power_lost\n    local: both\n    doc: either peer lost power\n", "  - power_lost\n"), at: "- power_lost\n",
			msg: `an event must be a mapping, found "power_lost"`},
		{name: "initial is a string", src: ed("initial: true", `initial: "yes"`), at: `initial: "yes"`, msg: `initial must be true or false, found "yes"`},
		{name: "null machine name", src: ed("machine: door", "machine: ~"), line: 1, msg: "machine name must be a string, found null"},
		{name: "null state doc", src: ed("    doc: the door is open\n", "    doc:\n"), at: "doc:\n", msg: "state doc must be a string, found null"},
		{name: "null rules", src: cut("rules:\n", "") + "rules:\n", at: "rules:", msg: "rules must be a list, found null"},
		{name: "null ignore reason", src: ed("ignore: stale or repeated revision", "ignore: ~"), at: "ignore: ~", msg: "ignore reason must be a string, found null"},
		{name: "empty from list", src: ed("from: [locked, broken]", "from: []"), at: "from: []", msg: "from must not be an empty list"},

		// Missing required keys.
		{name: "missing machine", src: ed("machine: door\n", ""), line: 1, msg: `the machine has no "machine" key`},
		{name: "missing doc", src: ed("doc: A test door that opens on request, closes on a timer and can be locked for good.\n", ""), line: 1, msg: `the machine has no "doc" key`},
		{name: "missing instance", src: ed("instance: {identity: door, doc: door ID}\n", ""), line: 1, msg: `the machine has no "instance" key`},
		{name: "missing states", src: cut("states:\n", "events:\n"), line: 1, msg: `the machine has no "states" key`},
		{name: "missing events", src: cut("events:\n", "guards:\n"), line: 1, msg: `the machine has no "events" key`},
		{name: "missing rules", src: cut("rules:\n", ""), line: 1, msg: `the machine has no "rules" key`},
		{name: "state without name", src: ed("  - name: broken\n    terminal: failure\n", "  - terminal: failure\n"), at: "- terminal: failure", msg: "a state has no name"},
		{name: "state without doc", src: ed("    doc: the door gave up\n", ""), at: "- name: broken", msg: `state "broken" has no doc (a one-line meaning)`},
		{name: "event without name", src: ed("  - name: power_lost\n    local: both\n", "  - local: both\n"), at: "- local: both", msg: "an event has no name"},
		{name: "event without doc", src: ed("    doc: either peer lost power\n", ""), at: "- name: power_lost", msg: `event "power_lost" has no doc`},
		{name: "guard without doc", src: ed("    doc: the lock request is authorized\n", ""), at: "- name: authorized", msg: `a guard "authorized" has no doc`},
		{name: "rule without on", src: ed("    on: open_wait\n", ""), at: "- from: opening\n    to: broken", msg: "a rule needs both from and on"},

		// Names.
		{name: "CamelCase state", src: ed("  - name: opening\n", "  - name: Opening\n"), at: "- name: Opening",
			msg: `state name "Opening" must be lower_snake_case (a-z, 0-9, single underscores)`},
		{name: "CamelCase machine", src: ed("machine: door", "machine: FrontDoor"), line: 1, msg: `machine name "FrontDoor" must be lower_snake_case`},
		{name: "double underscore event", src: ed("  - name: power_lost\n", "  - name: power__lost\n"), at: "- name: power__lost", msg: `event name "power__lost" must be lower_snake_case`},
		{name: "dashed guard", src: ed("  - name: authorized\n", "  - name: is-authorized\n"), at: "- name: is-authorized", msg: `a guard name "is-authorized" must be lower_snake_case`},
		{name: "CamelCase wire type", src: ed("message: door_lock", "message: DoorLock"), at: "message: DoorLock", msg: `message type "DoorLock" must be lower_snake_case`},
		{name: "reserved state name", src: ed("  - name: broken\n", "  - name: same\n"), at: "- name: same", msg: `"same" is reserved and cannot name a state`},
		{name: "duplicate state name", src: ed("  - name: broken\n", "  - name: locked\n"), at: "- name: locked\n    terminal: failure",
			msg: fmt.Sprintf(`state "locked" is already declared at door.yaml:%d`, doorLine("- name: locked"))},
		{name: "state and event share a name", src: ed("  - name: power_lost\n", "  - name: broken\n"), at: "- name: broken\n    local: both",
			msg: fmt.Sprintf(`event "broken" is already declared at door.yaml:%d`, doorLine("- name: broken"))},
		{name: "duplicate event name", src: ed("  - name: lock\n", "  - name: opened\n"), at: "- name: opened\n    message: door_lock",
			msg: fmt.Sprintf(`event "opened" is already declared at door.yaml:%d`, doorLine("- name: opened"))},
		{name: "action and guard share a name", src: ed("  - name: log_open\n", "  - name: authorized\n"), at: "- name: authorized\n    doc: record",
			msg: fmt.Sprintf(`action "authorized" is already declared at door.yaml:%d`, doorLine("- name: authorized"))},

		// States.
		{name: "no initial state", src: ed("    initial: true\n", ""), line: 1, msg: `machine "door" has no initial state (mark one with initial: true)`},
		{name: "two initial states", src: ed("  - name: opening\n", "  - name: opening\n    initial: true\n"), at: "- name: opening",
			msg: `state "opening" is a second initial state; "closed" is already initial`},
		{name: "initial terminal", src: ed("    initial: true\n", "    initial: true\n    terminal: success\n"), at: "- name: closed", msg: `initial state "closed" cannot be terminal`},
		{name: "bad terminal value", src: ed("terminal: success", "terminal: done"), at: "terminal: done", msg: `terminal must be success, failure or unknown, found "done"`},
		{name: "boolean terminal", src: ed("terminal: failure", "terminal: true"), at: "terminal: true", msg: `terminal must be success, failure or unknown, found "true"`},
		{name: "state arms an unknown timer", src: ed("timers: [auto_close]", "timers: [auto_shut]"), at: "timers: [auto_shut]", msg: `state "open" arms unknown timer "auto_shut"`},
		{name: "state arms a non-timer", src: ed("timers: [auto_close]", "timers: [lock]"), at: "timers: [lock]", msg: `state "open" arms "lock", which is a message event, not a timer`},
		{name: "state arms a timer twice", src: ed("timers: [auto_close]", "timers: [auto_close, auto_close]"), at: "timers: [auto_close, auto_close]", msg: `state "open" arms timer "auto_close" twice`},

		// Events.
		{name: "message event without from", src: ed("    message: door_status\n    from: runtime\n", "    message: door_status\n"), at: "- name: opened",
			msg: `message event "opened" needs from: core or runtime`},
		{name: "message from both", src: ed("    from: runtime\n", "    from: both\n"), at: "from: both", msg: `from must be core or runtime, found "both"`},
		{name: "message with by", src: ed("    from: runtime\n", "    from: runtime\n    by: runtime # wrong key\n"), at: "by: runtime # wrong key",
			msg: `message event "opened" takes from:, not by:`},
		{name: "timer without duration", src: ed("    timer: 30s\n", ""), at: "- name: open_wait", msg: `event "open_wait" must have exactly one of message, timer or local`},
		{name: "policy on a message", src: ed("    from: runtime\n", "    from: runtime\n    policy: true # not a timer\n"), at: "policy: true # not a timer",
			msg: `event "opened" is not a timer; policy: only applies to timers`},
		{name: "policy not a boolean", src: ed("timer: 30s", "timer: 30s\n    policy: sometimes"), at: "policy: sometimes", msg: "policy must be"},
		{name: "timer with null duration", src: ed("timer: 30s", "timer:"), at: "timer:\n", msg: "timer duration must be a string, found null"},
		{name: "timer with zero duration", src: ed("timer: 30s", "timer: 0s"), at: "timer: 0s", msg: `timer "open_wait" needs a positive duration such as 30s or 5m, found "0s"`},
		{name: "timer with negative duration", src: ed("timer: 30s", "timer: -30s"), at: "timer: -30s", msg: `timer "open_wait" needs a positive duration such as 30s or 5m, found "-30s"`},
		{name: "timer with unparsable duration", src: ed("timer: 30s", "timer: soon"), at: "timer: soon", msg: `timer "open_wait" needs a positive duration such as 30s or 5m, found "soon"`},
		{name: "timer with unitless duration", src: ed("timer: 30s", "timer: 30"), at: "timer: 30\n", msg: `timer "open_wait" needs a positive duration such as 30s or 5m, found "30"`},
		{name: "timer without by", src: ed("    timer: 5m\n    by: runtime\n", "    timer: 5m\n"), at: "- name: auto_close", msg: `timer "auto_close" needs by: core, runtime or both`},
		{name: "timer by nobody", src: ed("    by: core\n", "    by: nobody\n"), at: "by: nobody", msg: `by must be core, runtime or both, found "nobody"`},
		{name: "timer with from", src: ed("    by: core\n", "    by: core\n    from: core # not for timers\n"), at: "from: core # not for timers",
			msg: `event "open_wait" is not a message; from: only applies to messages`},
		{name: "local event with by", src: ed("    local: both\n", "    local: both\n    by: core # not for locals\n"), at: "by: core # not for locals",
			msg: `local event "power_lost" names its observer in local:, not by:`},
		{name: "local event with bad observer", src: ed("local: both", "local: nobody"), at: "local: nobody", msg: `local must be core, runtime or both, found "nobody"`},
		{name: "event with two kinds", src: ed("    from: runtime\n", "    from: runtime\n    local: runtime\n"), at: "- name: opened",
			msg: `event "opened" must have exactly one of message, timer or local`},

		// Rules.
		{name: "unknown state in from, with suggestion", src: ed("  - from: opening\n    on: open_wait\n", "  - from: openin\n    on: open_wait\n"), at: "from: openin\n",
			msg: `rule names unknown state "openin" (did you mean opening?)`},
		{name: "unknown state in a from list", src: ed("from: [locked, broken]", "from: [locked,\n      borken]"), at: "borken]",
			msg: `rule names unknown state "borken" (did you mean broken?)`},
		{name: "unknown state in to, with suggestion", src: ed("    to: opening\n", "    to: openning\n"), at: "to: openning",
			msg: `rule goes to unknown state "openning" (did you mean opening?)`},
		{name: "unknown state in to, no near name", src: ed("    to: opening\n", "    to: elsewhere\n"), at: "to: elsewhere",
			msg: `rule goes to unknown state "elsewhere"`, not: "did you mean"},
		{name: "unknown event in on", src: ed("    on: auto_close\n", "    on: auto_clse\n"), at: "on: auto_clse", msg: `rule names unknown event "auto_clse" (did you mean auto_close?)`},
		{name: "unknown guard", src: ed("guard: newer_revision", "guard: newest_revision"), at: "guard: newest_revision",
			msg: `rule names unknown guard "newest_revision" (did you mean newer_revision?)`},
		{name: "rule with to and ignore", src: ed("    on: open_wait\n    to: broken\n", "    on: open_wait\n    to: broken\n    ignore: changed my mind\n"),
			at: "- from: opening\n    on: open_wait", msg: "a rule needs exactly one of to, ignore or reject"},
		{name: "rule with ignore and reject", src: ed("    ignore: stale or repeated revision\n", "    ignore: stale or repeated revision\n    reject: or refuse it\n"),
			at: "- from: opening\n    on: opened\n    ignore", msg: "a rule needs exactly one of to, ignore or reject"},
		{name: "rule with no outcome", src: ed("    on: open_wait\n    to: broken\n", "    on: open_wait\n"), at: "- from: opening\n    on: open_wait",
			msg: "a rule needs exactly one of to, ignore or reject"},
		{name: "ignore without reason", src: ed("ignore: stale or repeated revision", `ignore: ""`), at: "- from: opening\n    on: opened\n    ignore", msg: "an ignore rule needs a reason"},
		{name: "reject with a blank reason", src: ed("reject: not authorized", `reject: "   "`), at: "- from: [closed, open]", msg: "reject rule needs a reason"},
		{name: "reject with a blank reason, grammar", src: ed("reject: not authorized", `reject: ""`), at: "- from: [closed, open]", msg: "a reject rule needs a reason"},
		{name: "effects on a reject", src: ed("    reject: not authorized\n", "    reject: not authorized\n    effects: [do log_open]\n"),
			at: "- from: [closed, open]", msg: "reject rule cannot have effects"},
		{name: "effects on an ignore", src: ed("    ignore: stale or repeated revision\n", "    ignore: stale or repeated revision\n    effects: [do log_open]\n"),
			at: "- from: opening\n    on: opened\n    ignore", msg: "an ignore rule cannot have effects"},
		{name: "catch-all with a guard", src: ed("    ignore: not relevant in this state\n", "    guard: authorized\n    ignore: not relevant in this state\n"),
			at: "- from: [closed, opening, open]", msg: `on: "*" is only allowed on unguarded ignore or reject rules`},
		{name: "catch-all with to", src: ed("    reject: the door is settled\n", "    to: same\n"), at: "- from: [locked, broken]",
			msg: `on: "*" is only allowed on unguarded ignore or reject rules`},
		{name: "catch-all inside a list", src: ed("    on: auto_close\n", "    on: [auto_close, \"*\"]\n"), at: `on: [auto_close, "*"]`,
			msg: `"*" must be the whole on: value, not a list entry`},
		{name: "from lists a state twice", src: ed("from: [closed, open]", "from: [closed, closed, open]"), at: "from: [closed, closed, open]", msg: `"closed" twice`},
		{name: "on lists an event twice", src: ed("    on: open_wait\n", "    on: [open_wait, open_wait]\n"), at: "on: [open_wait, open_wait]", msg: `"open_wait" twice`},
		{name: "two catch-alls for one state", src: appendRule("  - from: open\n    on: \"*\"\n    reject: twice\n"), at: "- from: open\n    on: \"*\"",
			msg: fmt.Sprintf(`state "open" already has a catch-all rule at door.yaml:%d`, doorLine("- from: [closed, opening, open]"))},

		// Effects.
		{name: "effect with unknown verb", src: ed("      - do log_open\n", "      - call log_open\n"), at: "- call log_open",
			msg: `effect "call log_open": unknown verb "call" (send, start, stop, do or raise)`},
		{name: "effect with bad role prefix", src: ed(`"runtime: send door_ack"`, `"server: send door_ack"`), at: "server: send door_ack",
			msg: `effect "server: send door_ack": the prefix before ':' must be core or runtime`},
		{name: "effect without a name", src: ed("      - do log_open\n", "      - do\n"), at: "- do\n", msg: `effect "do" must be <verb> <name>`},
		{name: "send of a CamelCase wire type", src: ed(`"runtime: send door_ack"`, `"runtime: send DoorAck"`), at: "send DoorAck",
			msg: `effect "runtime: send DoorAck": wire type "DoorAck" must be lower_snake_case`},
		{name: "do of an unknown action", src: ed("      - do log_open\n", "      - do log_opne\n"), at: "- do log_opne",
			msg: `effect "do log_opne": "log_opne" is not a declared action (did you mean log_open?)`},
		{name: "start of a non-timer", src: ed("      - start auto_close\n", "      - start lock\n"), at: "- start lock", msg: `effect "start lock": "lock" is not a declared timer`},
		{name: "stop of an unknown timer", src: ed("effects: [stop open_wait]", "effects: [stop open_wiat]"), at: "stop open_wiat", msg: `"open_wiat" is not a declared timer`},
		{name: "runtime timer started by core", src: ed("      - start auto_close\n", "      - \"core: start auto_close\"\n"), at: "core: start auto_close",
			msg: `effect "core: start auto_close": timer "auto_close" is owned by runtime`},
		{name: "raise of a timer", src: ed("      - do log_open\n", "      - raise open_wait\n"), at: "- raise open_wait",
			msg: `effect "raise open_wait": "open_wait" is not a declared message or local event`},

		// Cells.
		{name: "undeclared cells", src: ed("  - from: [closed, opening, open]\n    on: \"*\"\n    ignore: not relevant in this state\n", ""), at: "- name: closed",
			msg: `state "closed" does not declare events opened, open_wait, auto_close: add a rule, an ignore or a reject`},
		{name: "one undeclared cell", src: ed("from: [closed, opening, open]", "from: [closed, opening]",
			"  - from: [locked, broken]\n", "  - from: open\n    on: opened\n    ignore: already open\n  - from: [locked, broken]\n"),
			at: "- name: open\n", msg: `state "open" does not declare event open_wait: add a rule, an ignore or a reject`},
		{name: "duplicate transition", src: ed("  - from: opening\n    on: opened\n    ignore:",
			"  - from: opening\n    on: opened\n    guard: newer_revision\n    ignore: seen twice\n  - from: opening\n    on: opened\n    ignore:"),
			at: "- from: opening\n    on: opened\n    guard: newer_revision\n    ignore: seen twice",
			msg: fmt.Sprintf(`duplicate rule for (opening, opened) with guard "newer_revision": the rule at door.yaml:%d has the same guard`,
				doorLine("- from: opening\n    on: opened\n    guard"))},
		{name: "guarded candidate after the fallback", src: appendRule("  - from: closed\n    on: lock\n    guard: authorized\n    ignore: too late\n"),
			at:  "- from: closed\n    on: lock\n    guard: authorized\n    ignore: too late",
			msg: fmt.Sprintf(`rule for (closed, lock) can never be selected: the unguarded rule at door.yaml:%d already handles that cell`, doorLine("- from: [closed, open]"))},
		{name: "second unguarded candidate", src: appendRule("  - from: opening\n    on: open_wait\n    ignore: again\n"),
			at:  "- from: opening\n    on: open_wait\n    ignore: again",
			msg: fmt.Sprintf(`rule for (opening, open_wait) can never be selected: the unguarded rule at door.yaml:%d already handles that cell`, doorLine("- from: opening\n    on: open_wait"))},
		{name: "guarded-only cell", src: ed("from: [closed, open]\n", "from: [open]\n"), at: "- from: closed\n    on: lock",
			msg: "cell (closed, lock) has only guarded rules: add an unguarded fallback (to, ignore or reject) after them"},

		// Graph.
		{name: "unreachable state", src: ed("  - name: broken\n", "  - name: attic\n    terminal: failure\n    doc: nobody ever gets here\n  - name: broken\n",
			"from: [locked, broken]", "from: [locked, attic, broken]"), at: "- name: attic", msg: `state "attic" is unreachable from the initial state "closed"`},
		{name: "non-terminal state with no way out", src: ed("    terminal: failure\n", ""), at: "- name: broken",
			msg: `state "broken" is not terminal but no rule leaves it: add a transition or mark it terminal`},
		{name: "terminal state with an outgoing transition", src: appendRule("  - from: locked\n    on: power_lost\n    to: broken\n"), at: "- from: locked\n    on: power_lost",
			msg: `terminal state "locked" has an outgoing transition on "power_lost": a terminal state may only ignore or reject`},

		// Timers.
		{name: "timer left armed", src: ed("      - stop open_wait\n", ""), at: "- from: opening\n    on: opened\n    guard",
			msg: `(opening, opened) -> open leaves timer open_wait armed, but "open" does not list it in timers: stop it or arm it in the state`},
		{name: "timer not armed", src: ed("      - start open_wait\n", ""), at: "- from: closed\n    on: open_request",
			msg: `(closed, open_request) -> opening does not arm timer open_wait, which "opening" lists in timers: start it in this rule`},
		{name: "internal transition stops a listed timer", src: ed(`    effects: ["core: send door_open_again"]`, "    effects: [stop auto_close]"),
			at:  "- from: open\n    on: open_request",
			msg: `(open, open_request) -> open does not arm timer auto_close, which "open" lists in timers: start it in this rule`},
		{name: "timer expires where it is not armed", src: appendRule("  - from: closed\n    on: auto_close\n    to: broken\n"), at: "- from: closed\n    on: auto_close",
			msg: `timer "auto_close" cannot expire in state "closed", where it is not armed: ignore or reject it there`},
		// Every transition in and out of closed agrees that open_wait is armed
		// there, but New starts in closed without starting it.
		{name: "initial state lists a timer", src: ed(
			"    initial: true\n", "    initial: true\n    timers: [open_wait]\n",
			"    guard: authorized\n    to: locked\n  - from: open", "    guard: authorized\n    to: locked\n    effects: [stop open_wait]\n  - from: open",
			"    on: power_lost\n    to: broken\n  - from: opening", "    on: power_lost\n    to: broken\n    effects: [stop open_wait]\n  - from: opening",
			"    on: auto_close\n    to: closed\n", "    on: auto_close\n    to: closed\n    effects: [start open_wait]\n"),
			at: "- name: closed", msg: `initial state "closed"`},

		// Use.
		{name: "unused guard", src: ed("\nactions:\n", "  - name: unused_check\n    doc: nobody asks\n\nactions:\n"), at: "- name: unused_check",
			msg: `guard "unused_check" is declared but no rule uses it`},
		{name: "more guards than a GuardSet holds", src: ed("\nactions:\n", manyGuards(fsm.MaxGuards-1)+"\nactions:\n"),
			at: fmt.Sprintf("- name: spare_%d\n", fsm.MaxGuards-2), msg: fmt.Sprintf("is one too many: a machine declares at most %d guards", fsm.MaxGuards)},
		{name: "unused action", src: ed("\nrules:\n", "  - name: sweep\n    doc: sweep the floor\n\nrules:\n"), at: "- name: sweep",
			msg: `action "sweep" is declared but no effect performs it`},
		{name: "event that never causes a transition", src: ed("\nguards:\n", "  - name: noise\n    local: core\n    doc: something rattled\n\nguards:\n"), at: "- name: noise",
			msg: `event "noise" never causes a transition: every cell ignores or rejects it`},
		{name: "timer never armed", src: ed("\nguards:\n", "  - name: idle_wait\n    timer: 1m\n    by: core\n    doc: never started\n\nguards:\n"), at: "- name: idle_wait",
			msg: `timer "idle_wait" is never armed: no state lists it in timers`},
	}
}

// manyGuards declares n more guards (the fixture declares two).
func manyGuards(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  - name: spare_%d\n    doc: one more\n", i)
	}
	return b.String()
}

func TestLoadMalformed(t *testing.T) {
	for _, c := range badCases(t) {
		t.Run(c.name, func(t *testing.T) {
			file := c.file
			if file == "" {
				file = "door.yaml"
			}
			line := c.line
			if c.at != "" {
				line = lineOf(t, string(c.inputs()[file]), c.at)
			}
			require.Positive(t, line)

			model, err := Load(c.inputs())
			require.Error(t, err)
			assert.Nil(t, model)
			lines := requireOneLineErrors(t, err)

			want := fmt.Sprintf("%s:%d: ", file, line)
			found := false
			for _, l := range lines {
				if strings.HasPrefix(l, want) && strings.Contains(l, c.msg) {
					found = true
					if c.not != "" {
						assert.NotContains(t, l, c.not)
					}
				}
			}
			assert.Truef(t, found, "want a line %q…%q; got:\n%s", want, c.msg, err)
		})
	}
}

// Independent problems are all reported, one per line, sorted by line.
func TestLoadReportsEveryError(t *testing.T) {
	door := readDoor(t)
	ed := func(pairs ...string) string {
		src := door
		for i := 0; i+1 < len(pairs); i += 2 {
			require.Equalf(t, 1, strings.Count(src, pairs[i]), "edit target %q", pairs[i])
			src = strings.Replace(src, pairs[i], pairs[i+1], 1)
		}
		return src
	}
	type want struct{ at, msg string }
	for _, c := range []struct {
		name string
		src  string
		want []want
	}{
		{
			name: "declarations",
			src: ed(
				"  - name: opening\n", "  - name: Opening\n",
				"terminal: success", "terminal: done",
				"    doc: core locks the door\n", "    doc: core locks the door\n    retries: 3\n",
				"timer: 30s", "timer: soon",
				"    doc: the lock request is authorized\n", "",
				"    on: open_wait\n    to: broken\n", "    on: open_wait\n    to: broken\n    when: later\n",
			),
			want: []want{
				{"- name: Opening", `state name "Opening" must be lower_snake_case`},
				{"terminal: done", `terminal must be success, failure or unknown, found "done"`},
				{"retries: 3", `an event has unknown key "retries"`},
				{"timer: soon", `timer "open_wait" needs a positive duration`},
				{"- name: authorized", `a guard "authorized" has no doc`},
				{"when: later", `a rule has unknown key "when"`},
			},
		},
		{
			name: "references",
			src: ed(
				"  - from: opening\n    on: open_wait\n", "  - from: openin\n    on: open_wait\n",
				"    on: auto_close\n", "    on: auto_clse\n",
				"    guard: authorized\n    to: locked\n    effects", "    guard: authorised\n    to: locked\n    effects",
				"      - do log_open\n", "      - call log_open\n",
				"    ignore: stale or repeated revision\n", "    ignore: stale or repeated revision\n    effects: [do log_open]\n",
			),
			want: []want{
				{"guard: authorised", `rule names unknown guard "authorised" (did you mean authorized?)`},
				{"- call log_open", `unknown verb "call"`},
				{"- from: opening\n    on: opened\n    ignore", "an ignore rule cannot have effects"},
				{"from: openin\n", `rule names unknown state "openin"`},
				{"on: auto_clse", `rule names unknown event "auto_clse"`},
			},
		},
		{
			name: "structure",
			src: ed(
				"  - name: broken\n", "  - name: attic\n    terminal: failure\n    doc: nobody ever gets here\n  - name: broken\n",
				"from: [locked, broken]", "from: [locked, attic, broken]",
				"\nactions:\n", "  - name: unused_check\n    doc: nobody asks\n\nactions:\n",
				"\nrules:\n", "  - name: sweep\n    doc: sweep the floor\n\nrules:\n",
				"      - stop open_wait\n", "",
				"from: [closed, open]\n", "from: [open]\n",
			),
			want: []want{
				{"- name: attic", `state "attic" is unreachable`},
				{"- name: unused_check", `guard "unused_check" is declared but no rule uses it`},
				{"- name: sweep", `action "sweep" is declared but no effect performs it`},
				{"- from: closed\n    on: lock", "cell (closed, lock) has only guarded rules"},
				{"- from: opening\n    on: opened\n    guard", "(opening, opened) -> open leaves timer open_wait armed"},
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(map[string][]byte{"door.yaml": []byte(c.src)})
			require.Error(t, err)
			lines := requireOneLineErrors(t, err)
			require.Lenf(t, lines, len(c.want), "got:\n%s", err)
			prev := 0
			for i, w := range c.want {
				line := lineOf(t, c.src, w.at)
				assert.Truef(t, strings.HasPrefix(lines[i], fmt.Sprintf("door.yaml:%d: ", line)), "line %d: %q, want line %d", i, lines[i], line)
				assert.Contains(t, lines[i], w.msg)
				assert.GreaterOrEqual(t, line, prev, "errors are sorted by line")
				prev = line
			}
		})
	}

	// A malformed timer must be reported once, for what is wrong with it,
	// not also as "unknown" wherever a state arms it.
	t.Run("no cascade from a malformed timer", func(t *testing.T) {
		src := ed("timer: 30s", "timer: 0s")
		_, err := Load(map[string][]byte{"door.yaml": []byte(src)})
		require.Error(t, err)
		lines := requireOneLineErrors(t, err)
		require.Lenf(t, lines, 1, "got:\n%s", err)
		assert.Contains(t, lines[0], fmt.Sprintf("door.yaml:%d: ", lineOf(t, src, "timer: 0s")))
	})

	// Two independent problems in one rule are both reported.
	t.Run("one rule with several problems", func(t *testing.T) {
		src := ed("guard: newer_revision", "guard: newest_revision", "      - do log_open\n", "      - call log_open\n")
		_, err := Load(map[string][]byte{"door.yaml": []byte(src)})
		require.Error(t, err)
		lines := requireOneLineErrors(t, err)
		require.Lenf(t, lines, 2, "got:\n%s", err)
		assert.Contains(t, lines[0], fmt.Sprintf("door.yaml:%d: ", lineOf(t, src, "guard: newest_revision")))
		assert.Contains(t, lines[1], fmt.Sprintf("door.yaml:%d: ", lineOf(t, src, "- call log_open")))
	})

	t.Run("every file", func(t *testing.T) {
		_, err := Load(map[string][]byte{
			"b.yaml": []byte(ed("machine: door", "machine: back_door", "terminal: success", "terminal: done")),
			"a.yaml": []byte(ed("machine: door", "machine: front_door", "doc: door ID}", "doc: [door]}")),
			"c.yaml": []byte(door),
		})
		require.Error(t, err)
		lines := requireOneLineErrors(t, err)
		require.Lenf(t, lines, 2, "got:\n%s", err)
		assert.Contains(t, lines[0], fmt.Sprintf("a.yaml:%d: ", lineOf(t, door, "instance: {identity: door, doc: door ID}")))
		assert.Contains(t, lines[1], fmt.Sprintf("b.yaml:%d: ", lineOf(t, door, "terminal: success")))
	})
}

func TestLoadDirRealSpecs(t *testing.T) {
	model, err := LoadDir(os.DirFS("."), ".", "spec")
	require.NoError(t, err)
	matches, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, matches)
	// Every file but the catalog, the capability list and the invariants is one machine.
	assert.Len(t, model.Machines, len(matches)-3, "one machine per spec file")
	assert.NotEmpty(t, model.Invariants)
	assert.NotNil(t, model.Catalog)
	assert.NotEmpty(t, model.Capabilities)
	for i, m := range model.Machines {
		if i > 0 {
			assert.Less(t, model.Machines[i-1].Name, m.Name, "machines are sorted by name")
		}
		assert.Truef(t, strings.HasPrefix(m.Pos.File, "spec/"), "%s: %s", m.Name, m.Pos)
		require.NotNil(t, m.Initial(), m.Name)
		assert.Len(t, m.Paths(), len(m.States), "%s: every state is reachable", m.Name)
	}
}

func TestLoadDir(t *testing.T) {
	door := readDoor(t)
	t.Run("prefix names the files, other files are skipped", func(t *testing.T) {
		fsys := fstest.MapFS{
			"specs/door.yaml":       {Data: []byte(door)},
			"specs/porch.yaml":      {Data: []byte(strings.Replace(door, "machine: door", "machine: porch", 1))},
			"specs/README.md":       {Data: []byte("# not a spec")},
			"specs/old/attic.yaml":  {Data: []byte("not: [a spec")},
			"specs/sub.yaml/x.yaml": {Data: []byte("not: [a spec")},
			"elsewhere/broken.yaml": {Data: []byte("not: [a spec")},
			"specs/notes.yaml.orig": {Data: []byte("not: [a spec")},
		}
		model, err := LoadDir(fsys, "specs", "spec")
		require.NoError(t, err)
		require.Len(t, model.Machines, 2)
		assert.Equal(t, "door", model.Machines[0].Name)
		assert.Equal(t, "porch", model.Machines[1].Name)
		assert.Equal(t, Pos{File: "spec/door.yaml", Line: 1}, model.Machines[0].Pos)
		assert.Equal(t, "spec/porch.yaml", model.Machines[1].States[0].Pos.File)

		fsys["specs/door.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(door, "terminal: success", "terminal: done", 1))}
		_, err = LoadDir(fsys, "specs", "/abs/spec")
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf(`/abs/spec/door.yaml:%d: terminal must be success, failure or unknown, found "done"`, lineOf(t, door, "terminal: success")), err.Error())
	})
	t.Run("no spec files", func(t *testing.T) {
		_, err := LoadDir(fstest.MapFS{"specs/README.md": {Data: []byte("x")}}, "specs", "spec")
		require.ErrorContains(t, err, "no *.yaml files")
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := LoadDir(fstest.MapFS{}, "nowhere", "spec")
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
}

// fuzzLineRE is what every error line of a fuzzed load must look like; the
// line may be missing only for YAML the parser rejects without a position.
var fuzzLineRE = regexp.MustCompile(`^fuzz\.yaml(:[1-9][0-9]*)?: \S`)

func FuzzLoad(f *testing.F) {
	f.Add([]byte(readDoor(f)))
	f.Add([]byte(readVault(f)))
	for _, c := range badCases(f) {
		for _, src := range c.inputs() {
			f.Add(src)
		}
	}
	specs, err := filepath.Glob("*.yaml")
	require.NoError(f, err)
	for _, p := range specs {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}

	f.Fuzz(func(t *testing.T, src []byte) { checkFuzzedLoad(t, src) })
}

// FuzzLoadEdits explores specs that are still YAML and close to a valid
// machine, which random bytes rarely reach: each 3-byte op deletes,
// duplicates, swaps or cross-wires lines of the valid fixture.
func FuzzLoadEdits(f *testing.F) {
	door := strings.SplitAfter(readDoor(f), "\n")
	f.Add([]byte{})
	for i := range len(door) {
		f.Add([]byte{0, byte(i), 0})
		f.Add([]byte{3, byte(i), byte(i + 7)})
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		lines := append([]string(nil), door...)
		for i := 0; i+2 < len(ops) && len(lines) > 1; i += 3 {
			a, b := int(ops[i+1])%len(lines), int(ops[i+2])%len(lines)
			switch ops[i] % 4 {
			case 0: // delete a
				lines = append(lines[:a], lines[a+1:]...)
			case 1: // copy a before b
				lines = append(lines[:b], append([]string{lines[a]}, lines[b:]...)...)
			case 2: // swap a and b
				lines[a], lines[b] = lines[b], lines[a]
			case 3: // give a the value of b
				ka, _, okA := strings.Cut(lines[a], ": ")
				_, vb, okB := strings.Cut(lines[b], ": ")
				if okA && okB {
					lines[a] = ka + ": " + vb
				}
			}
		}
		checkFuzzedLoad(t, []byte(strings.Join(lines, "")))
	})
}

// checkFuzzedLoad loads src and checks the loader's promises: it never
// panics, every error line is positioned, and a model that loads satisfies
// every rule of spec/README.md, since the generator trusts it blindly.
func checkFuzzedLoad(t *testing.T, src []byte) {
	model, err := Load(map[string][]byte{"fuzz.yaml": src})
	if err != nil {
		require.Nil(t, model)
		for _, l := range strings.Split(err.Error(), "\n") {
			require.Regexp(t, fuzzLineRE, l)
		}
		specErrors(t, err)
		return
	}
	require.Len(t, model.Machines, 1)
	m := model.Machines[0]
	init := m.Initial()
	require.NotNil(t, init)
	require.False(t, init.Terminal())
	paths := m.Paths()
	require.Len(t, paths, len(m.States), "every state is reachable")
	for _, s := range m.States {
		exit := s.Terminal()
		for _, e := range m.Events {
			c := m.Cell(s, e)
			require.NotEmpty(t, c, "every cell is declared")
			for i, r := range c {
				require.Equal(t, i == len(c)-1, r.Guard == nil, "guarded candidates first, one fallback last")
				if r.Kind == RuleGoto {
					require.NotNil(t, r.To)
					require.False(t, s.Terminal(), "a terminal state has no goto")
					exit = exit || r.To != s
					if e.Kind == EventTimer {
						require.True(t, s.Armed(e), "a timer fires only where it is armed")
					}
				} else {
					require.NotEmpty(t, strings.TrimSpace(r.Reason))
					require.Empty(t, r.Effects)
				}
			}
			require.Same(t, c[len(c)-1], m.Select(s, e, func(*Guard) bool { return false }))
		}
		require.Truef(t, exit, "non-terminal state %q has a way out", s.Name)
	}
}

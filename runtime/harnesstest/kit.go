package harnesstest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Run runs the kit against cfg.Adapter: every declared capability's
// acceptance scenario, every undeclared one's refusal, the shared text
// assertions, then the run through the real daemon. It reports what ran
// with t.Log and returns the report; a failed or unserved scenario fails t.
func Run(t *testing.T, cfg Config) *Report {
	t.Helper()
	require.NotNil(t, cfg.Adapter, "harnesstest: Config.Adapter is required")
	decl := cfg.Adapter.Declaration()
	require.NoError(t, decl.Validate(), "harnesstest: the declaration is validated whole (daemon-protocol.txt:23)")
	require.True(t, decl.Available, "harnesstest: the kind must be available to be tested")
	k := newKit(cfg, decl)
	t.Run("harness", func(t *testing.T) { k.harnessLevel(t) })
	if !cfg.NoDaemon {
		t.Run("daemon", func(t *testing.T) { k.daemonLevel(t) })
	}
	k.report.unrun(k)
	t.Log("\n" + k.report.String())
	for _, o := range k.report.Scenarios {
		if !o.Passed {
			t.Errorf("harnesstest: %s (%s) did not pass: %s", o.Name, o.Capability, o.Note)
		}
	}
	return k.report
}

// kit is one run.
type kit struct {
	cfg     Config
	decl    harness.Declaration
	caps    wire.AgentKindCapabilities
	timeout time.Duration
	report  *Report

	mu        sync.Mutex
	n         int
	questions map[string]string // interaction ID → the scenario that asked it
	reused    []string          // interaction IDs asked twice
	results   []*Result
	closeErrs []error
}

func newKit(cfg Config, decl harness.Declaration) *kit {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	k := &kit{cfg: cfg, decl: decl, caps: decl.Capabilities, timeout: timeout, questions: map[string]string{}}
	k.report = &Report{Kind: decl.Kind, Version: decl.Version}
	for _, f := range wire.CapabilityFields() {
		if f.Of(&k.caps).Supports() {
			k.report.Declared = append(k.report.Declared, f.Name)
		} else {
			k.report.Undeclared = append(k.report.Undeclared, f.Name)
		}
	}
	return k
}

// declared reports whether the capability (JSON name) is declared true.
func (k *kit) declared(name string) bool {
	f, ok := wire.CapabilityFieldByName(name)
	if !ok {
		panic("harnesstest: unknown capability " + name)
	}
	return f.Of(&k.caps).Supports()
}

// newID returns an ID unique within the run.
func (k *kit) newID(prefix string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	return fmt.Sprintf("kit-%s-%d", prefix, k.n)
}

// newSession returns a canonical Session ID unique within the run.
func (k *kit) newSession() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	return fmt.Sprintf("6b1f0c2e-3d4a-4b5c-9d6e-%012d", k.n)
}

// asked records a question's interaction ID: one connection carries every
// Turn, so an ID asked twice would collide (daemon-protocol.txt:76).
func (k *kit) asked(q wire.Payload) {
	var id string
	switch v := q.(type) {
	case wire.PermissionRequest:
		id = v.RequestID
	case wire.PromptForUserChoice:
		id = v.AskID
	default:
		return // call IDs are scoped by the Run
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, dup := k.questions[id]; dup {
		k.reused = append(k.reused, id)
		return
	}
	k.questions[id] = "asked"
}

func (k *kit) collect(r *Result) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.results = append(k.results, r)
}

// all returns every Turn the run made so far.
func (k *kit) all() []*Result {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*Result(nil), k.results...)
}

// environmentID is the Environment the kit's Turns are bound to when the
// Harness runs in a local Environment.
const environmentID = "7f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b"

// base is the configuration of a Turn as Core builds it for this
// declaration (wire.ApplyOptIns, daemon-protocol.txt:51-60): an Environment
// of type none when the Harness declares environment_none, else a
// self_hosted one bound to dir.
func (k *kit) base(t *testing.T, s *Scenario) {
	sc := wire.SessionConfig{Environment: wire.EnvironmentTypeNone, Capabilities: k.caps}
	if !k.declared("environment_none") && k.declared("local_environment") {
		sc.Environment, sc.Binding = wire.EnvironmentTypeSelfHosted, &wire.LocalEnvironment{ID: environmentID}
		s.WorkspaceDir = t.TempDir()
	}
	cfg := wire.PromptRequest{AgentKind: k.decl.Kind, AgentStateKey: wire.AgentStateKey(s.SessionID)}
	require.NoError(t, wire.ApplyOptIns(&cfg, sc))
	if k.cfg.Configure != nil {
		k.cfg.Configure(&cfg)
	}
	s.Config = cfg
}

// scenario builds a scenario's Turn: Core's configuration, the
// scenario's own settings (set), then the hook.
func (k *kit) scenario(t *testing.T, name, capability string, plan Plan, input wire.MessageInput, set func(*Scenario)) *Scenario {
	t.Helper()
	if input == nil {
		input = text("Please answer.")
	}
	s := &Scenario{Name: name, Capability: capability, Plan: plan, Input: input, SessionID: k.newSession()}
	k.base(t, s)
	if set != nil {
		set(s)
	}
	hook := k.cfg.Hooks[capability]
	if hook == nil {
		hook = k.cfg.Default
	}
	if hook == nil {
		t.Fatalf("harnesstest: no hook serves scenario %s (%s): a scenario that cannot run fails", name, capability)
	}
	hook(t, s)
	return s
}

// verify runs the hook's native check; required says the scenario's
// effect is native only, so a missing check fails.
func verify(t *testing.T, r *Result, required bool) {
	t.Helper()
	if r.Scenario.Verify != nil {
		r.Scenario.Verify(t, r)
		return
	}
	if required {
		t.Errorf("harnesstest: %s has only a native effect: its hook must set Scenario.Verify", r.Scenario.Name)
	}
}

// returned fails t unless the Turn ran and Run returned.
func returned(t *testing.T, r *Result) {
	t.Helper()
	require.NoError(t, r.Prepared, "the preparation failed")
	require.True(t, r.Returned, "Run did not return within the timeout: the native work never settled")
	require.Empty(t, r.Late, "events emitted after Run returned")
}

// completed fails t unless the Turn ran to a normal end without error.
func completed(t *testing.T, r *Result) {
	t.Helper()
	returned(t, r)
	require.NoError(t, r.Err, "Run failed")
	require.Empty(t, r.Errors(), "the Turn reported errors")
}

func text(parts ...string) wire.MessageInput {
	m := wire.InputMessage{}
	for _, p := range parts {
		m.Content = append(m.Content, wire.InputContent{Type: wire.ContentText, Text: p})
	}
	return wire.MessageInput{m}
}

// Report is what a run declared, ran and passed.
type Report struct {
	Kind, Version string
	// Declared and Undeclared are the capability fields declared true and
	// false.
	Declared, Undeclared []string
	// Scenarios are the scenarios run, in order.
	Scenarios []Outcome
}

// Outcome is one scenario's result.
type Outcome struct {
	Name       string
	Capability string
	// Level is "harness" (the adapter's interfaces) or "daemon" (the real
	// daemon against a scripted Core).
	Level  string
	Passed bool
	Note   string
}

// Passed counts the scenarios that passed.
func (r *Report) Passed() int {
	n := 0
	for _, o := range r.Scenarios {
		if o.Passed {
			n++
		}
	}
	return n
}

func (r *Report) add(o Outcome) { r.Scenarios = append(r.Scenarios, o) }

// unrun adds a failing outcome for every declared capability no scenario
// covered: a capability declared true is proven, or the run fails.
func (r *Report) unrun(k *kit) {
	covered := map[string]bool{}
	for _, o := range r.Scenarios {
		covered[o.Capability] = true
	}
	for _, c := range r.Declared {
		if !covered[c] {
			r.add(Outcome{Name: c, Capability: c, Level: "-", Note: "declared true, but no scenario ran for it"})
		}
	}
	for _, c := range r.Undeclared {
		if !covered[c] {
			r.add(Outcome{Name: c + "/refused", Capability: c, Level: "-", Note: "declared false, but its refusal was not checked"})
		}
	}
}

// String is the report as the kit logs it.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "harnesstest: kind %s (%s)\n", r.Kind, r.Version)
	fmt.Fprintf(&b, "  declared (%d): %s\n", len(r.Declared), strings.Join(r.Declared, ", "))
	fmt.Fprintf(&b, "  not declared (%d): %s\n", len(r.Undeclared), strings.Join(r.Undeclared, ", "))
	fmt.Fprintf(&b, "  scenarios: %d run, %d passed\n", len(r.Scenarios), r.Passed())
	list := append([]Outcome(nil), r.Scenarios...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Level < list[j].Level })
	for _, o := range list {
		mark := "pass"
		if !o.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "    %s  %-7s %-34s %s", mark, o.Level, o.Name, o.Capability)
		if o.Note != "" {
			fmt.Fprintf(&b, "  (%s)", o.Note)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// run runs one scenario as a subtest and records its outcome.
//
// A skipped subtest counts as failed: t.Run reports a skip as success, but
// a scenario that did not run proved nothing about the capability (issue
// 17 §1: a scenario that cannot run is a failing test, never a skip).
func (k *kit) run(t *testing.T, level, name, capability string, f func(t *testing.T)) {
	t.Helper()
	skipped := false
	passed := t.Run(name, func(t *testing.T) {
		// t.Skip ends the subtest with runtime.Goexit, which still runs
		// this deferred call, after Skipped is already true.
		defer func() { skipped = t.Skipped() }()
		f(t)
	})
	o := Outcome{Name: name, Capability: capability, Level: level, Passed: passed && !skipped}
	switch {
	case skipped:
		o.Note = "the scenario was skipped, so it did not run"
	case !passed:
		o.Note = "see the subtest's failure"
	}
	k.report.add(o)
}

package modelcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/spec"
)

// specFiles reads the real spec directory as spec.Load takes it.
func specFiles(t testing.TB) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	matches, err := filepath.Glob("../../spec/*.yaml")
	require.NoError(t, err)
	for _, m := range matches {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		files["spec/"+filepath.Base(m)] = b
	}
	return files
}

func loadSpec(t testing.TB) *spec.Model {
	t.Helper()
	m, err := spec.Load(specFiles(t))
	require.NoError(t, err)
	return m
}

// broken loads the spec with one edit to a copy of one table.
func broken(t *testing.T, file, old, new string) *spec.Model {
	t.Helper()
	files := specFiles(t)
	src := string(files["spec/"+file])
	require.Equal(t, 1, strings.Count(src, old), "the edit must match the table exactly once")
	files["spec/"+file] = []byte(strings.Replace(src, old, new, 1))
	m, err := spec.Load(files)
	require.NoError(t, err)
	return m
}

// small is a bound the counterexample tests reach their traces within.
var small = Bounds{Depth: 10, Runs: 1, Inputs: 1, Faults: 0, Reconnects: 0, Revisions: 3}

// violated checks m for one invariant and returns its counterexample.
func violated(t *testing.T, m *spec.Model, inv string, b Bounds, machines ...string) *Violation {
	t.Helper()
	if len(machines) == 0 {
		machines = []string{"preparation", "run", "input"}
	}
	rep, err := Check(Config{Model: m, Machines: machines, Bounds: b, Invariants: []string{inv}, StopAtFirst: true})
	require.NoError(t, err)
	require.Len(t, rep.Violations, 1, "the broken table must violate %s", inv)
	v := rep.Violations[0]
	require.Equal(t, inv, v.Invariant)
	t.Logf("%v\n%s", v, Mermaid(v))
	return v
}

func TestRealTablesHoldEveryInvariant(t *testing.T) {
	b := Bounds{Depth: 9, Runs: 1, Inputs: 1, Faults: 1, Reconnects: 1, Revisions: 3, ReadOnly: true}
	least := 1000 // what depth 9 reaches is well above it; a pruned search is not
	if testing.Short() {
		b.Depth, least = 7, 500
	}
	rep, err := Check(Config{Model: loadSpec(t), Machines: []string{"preparation", "run", "input"}, Bounds: b})
	require.NoError(t, err)
	for _, v := range rep.Violations {
		t.Errorf("%v\n%s", v, Mermaid(v))
	}
	assert.Greater(t, rep.States, least)
}

// An unknown input turned into a success without a receipt: Core marks it
// accepted when it sees the Run settle.
func TestEvidenceCounterexample(t *testing.T) {
	m := broken(t, "input.yaml", `  - from: [sent, write_complete]
    on: run_settled
    to: unknown`, `  - from: [sent, write_complete]
    on: run_settled
    to: accepted`)
	v := violated(t, m, "terminal_needs_evidence", small)
	assert.Contains(t, v.Msg, "settled accepted (success) on its own local event run_settled, with no frame from the runtime proving it")
	assert.Contains(t, Mermaid(v), "C->>R: prompt_steer run-1")
}

// A table that queued an input again after a lost connection would have
// Core send it on the next connection.
func TestNoReplayCounterexample(t *testing.T) {
	m := broken(t, "input.yaml", `    to: unknown
    # decision: a connection lost after dispatch leaves the effect unknown`, `    to: pending
    # decision: a connection lost after dispatch leaves the effect unknown`)
	m = broken(t, "input.yaml", `    to: unknown
    # decision: a connection lost after dispatch leaves the effect unknown unless a receipt proved it
    # (daemon-protocol.txt:158), and no receipt can arrive on another connection (line 19); nothing is resent (line 160).
    effects:
      - "core: stop written_wait"
      - "runtime: stop native_write"
      - "runtime: stop receipt_send"
      - "runtime: stop drain_wait"
      - "core: do mark_unknown"`, `    to: pending
    effects:
      - "core: stop written_wait"
      - "runtime: stop native_write"
      - "runtime: stop receipt_send"
      - "runtime: stop drain_wait"
      - "core: do keep_for_retry"`)
	b := small
	b.Faults, b.Reconnects = 1, 1
	v := violated(t, m, "no_replay_after_reconnect", b)
	assert.Contains(t, v.Msg, "Core sends prompt_steer for input/run-1")
	assert.Contains(t, v.Msg, "on connection 2; it was dispatched on connection 1")
	kinds := map[ActionKind]bool{}
	for _, a := range v.Trace {
		kinds[a.Kind] = true
	}
	assert.True(t, kinds[ActReconnect], "the trace drops the connection")
}

// Advancing the cursor on written claims consumption the receipt never
// confirmed.
func TestCursorCounterexample(t *testing.T) {
	m := broken(t, "input.yaml", `    to: written
    effects: ["core: stop written_wait", "runtime: stop native_write", "runtime: stop receipt_send"]`,
		`    to: written
    effects: ["core: stop written_wait", "runtime: stop native_write", "runtime: stop receipt_send", "core: do advance_cursor"]`)
	v := violated(t, m, "cursor_advances_on_accepted", small)
	assert.Contains(t, v.Msg, "core performed advance_cursor")
	assert.Contains(t, v.Msg, "on ack_written")
}

// The read-only handle before the fix: the preparation accepted
// execution_start as an internal transition, so the driver went on to the
// Run, which started native work.
func TestRejectedStartCounterexample(t *testing.T) {
	m := broken(t, "preparation.yaml", `    reject: "read_only_preparation: a read-only handle can never be started"`, `    to: ready
    effects: ["runtime: send preparation_status"]`)
	b := small
	b.ReadOnly = true
	v := violated(t, m, "rejected_start_starts_nothing", b)
	assert.Contains(t, v.Msg, "runtime performed start_native for run/run-1 on execution_start while preparation/prepare-1 was ready")
	assert.Contains(t, v.Trace[0].Payload, `"workspace_read_only":true`)
}

// A resource nobody releases: the Run's native work as a slot the Runtime
// takes and never gives back (the loader's static check would refuse this
// table, so the model is edited in memory).
func TestResourcesCounterexample(t *testing.T) {
	m := loadSpec(t)
	run, ok := m.Machine("run")
	require.True(t, ok)
	slot := &spec.Resource{Name: "native_slot", HeldBy: fsm.RoleRuntime, Doc: "test"}
	run.Resources = append(run.Resources, slot)
	for _, a := range run.Actions {
		if a.Name == "start_native" {
			a.Acquires = slot
		}
	}
	v := violated(t, m, "resources_released", small)
	assert.Contains(t, v.Msg, "runtime's run/run-1 settled")
	assert.Contains(t, v.Msg, "still holding native_slot")
}

// Core's subscription overflow claiming the Run completed leaves the two
// copies apart while nothing is in flight.
func TestProjectionCounterexample(t *testing.T) {
	m := broken(t, "run.yaml", `  - from: [requested, streaming, errored]
    on: [connection_lost, subscription_overflow]
    to: incomplete`, `  - from: [requested, streaming, errored]
    on: subscription_overflow
    to: completed
    effects: ["core: stop stall_wait"]
  - from: [requested, streaming, errored]
    on: connection_lost
    to: incomplete`)
	v := violated(t, m, "run_projection", small)
	assert.Contains(t, v.Msg, "Core's run/run-1 is completed and the Runtime's is")
	assert.Equal(t, "subscription_overflow", v.Trace[len(v.Trace)-1].Event)
}

// The release that crossed the Runtime's expiry, before the fix: Core
// waited in releasing for a close the Runtime would never publish.
func TestSettlesCounterexample(t *testing.T) {
	m := broken(t, "preparation.yaml", `  - from: releasing
    on: status_expired
    guard: newer_revision
    to: expired
`, "")
	b := small
	b.Depth = 18
	rep, err := Check(Config{Model: m, Machines: []string{"preparation"}, Bounds: b, Invariants: []string{"lifecycles_settle"}})
	require.NoError(t, err)
	require.Len(t, rep.Violations, 1)
	v := rep.Violations[0]
	t.Logf("%v\n%s", v, Mermaid(v))
	assert.Contains(t, v.Msg, "no settled state can be reached")
	assert.Contains(t, v.Msg, "core's preparation/prepare-1 is releasing")
}

// A counterexample found with synchronous delivery replays through the
// scenario runner with real drivers over a real pipe, step for step.
func TestCounterexampleReplays(t *testing.T) {
	m := broken(t, "preparation.yaml", `    reject: "read_only_preparation: a read-only handle can never be started"`, `    to: ready
    effects: ["runtime: send preparation_status"]`)
	b := small
	b.ReadOnly = true
	cfg := Config{Model: m, Machines: []string{"preparation", "run", "input"}, Bounds: b, Invariants: []string{"rejected_start_starts_nothing"}, Sync: true, StopAtFirst: true}
	rep, err := Check(cfg)
	require.NoError(t, err)
	require.Len(t, rep.Violations, 1)
	sc, err := Scenario(cfg, rep.Violations[0])
	require.NoError(t, err)
	t.Log(sc)
	assert.Contains(t, sc, "runtime:   runtime: do start_native")
	replay(t, m, cfg.Machines, sc)
}

// A write table whose begin no longer waits for the owner: the next write
// takes the owner while an earlier one (unsettled, or ended unknown with the
// owner kept, daemon-protocol.txt:185) still holds it. The rule's guard is
// swapped in memory for one that always holds in the model (the file would
// no longer load with owner_free unused).
func TestSuccessorBlockedCounterexample(t *testing.T) {
	m := loadSpec(t)
	ww, ok := m.Machine("workspace_write")
	require.True(t, ok)
	var always *spec.Guard
	for _, g := range ww.Guards {
		if g.Name == "chunk_in_bounds" {
			always = g
		}
	}
	require.NotNil(t, always)
	swapped := false
	for _, r := range ww.Rules {
		if r.Guard != nil && r.Guard.Name == "owner_free" {
			r.Guard, swapped = always, true
		}
	}
	require.True(t, swapped)
	b := Bounds{Depth: 10, Writes: 2, Faults: 1, Reconnects: 1}
	v := violated(t, m, "resources_released", b, "workspace_write")
	assert.Contains(t, v.Msg, "core's workspace_write/00000000-0000-4000-8000-000000000002 takes mutation_owner while workspace_write/00000000-0000-4000-8000-000000000001")
}

// A permission request on a Run started with prompt_request (no admission
// machine in the composition): decisions, receipts, withdrawal, the Run's end.
func TestRealInteractionHoldsEveryInvariant(t *testing.T) {
	rep, err := Check(Config{Model: loadSpec(t), Machines: []string{"run", "interaction"}, Bounds: Bounds{Depth: 11, Runs: 1, Asks: 1, Faults: 1, Reconnects: 1}})
	require.NoError(t, err)
	for _, v := range rep.Violations {
		t.Errorf("%v\n%s", v, Mermaid(v))
	}
	assert.Greater(t, rep.States, 1000)
}

func TestRealWorkspaceWriteHoldsEveryInvariant(t *testing.T) {
	rep, err := Check(Config{Model: loadSpec(t), Machines: []string{"workspace_write"}, Bounds: Bounds{Depth: 12, Writes: 2, Faults: 2, Reconnects: 1}})
	require.NoError(t, err)
	for _, v := range rep.Violations {
		t.Errorf("%v\n%s", v, Mermaid(v))
	}
}

// The suspension machine on a live connection: every attempt settles (an
// unanswered quiesce is rolled back, an unanswered rollback expires and a
// late answer still settles it), and a refusal proves no fence is held.
// (With faults, the Runtime's copy that reopened admission and then lost
// its reply's connection is left uncertain: docs/model-check.md.)
func TestRealSuspensionHoldsEveryInvariantWhileConnected(t *testing.T) {
	rep, err := Check(Config{Model: loadSpec(t), Machines: []string{"suspension"}, Bounds: Bounds{Depth: 20, Faults: 0, Reconnects: 1}})
	require.NoError(t, err)
	for _, v := range rep.Violations {
		t.Errorf("%v\n%s", v, Mermaid(v))
	}
	assert.Greater(t, rep.States, 300)
}

// The crossing release again, with the repeated release refused as well:
// now nothing at all can move (no frame, no timer, no local event), yet
// Core's handle is not settled.
func TestStuckCounterexample(t *testing.T) {
	files := specFiles(t)
	src := string(files["spec/preparation.yaml"])
	for _, e := range [][2]string{
		{"  - from: releasing\n    on: status_expired\n    guard: newer_revision\n    to: expired\n", ""},
		{"  - from: [releasing, cleanup_unconfirmed]\n    on: execution_release\n    to: same\n    effects: [\"runtime: send preparation_status\"]\n",
			"  - from: [releasing, cleanup_unconfirmed]\n    on: execution_release\n    reject: \"invalid_release: a release is already in flight\"\n"},
	} {
		require.Equal(t, 1, strings.Count(src, e[0]))
		src = strings.Replace(src, e[0], e[1], 1)
	}
	files["spec/preparation.yaml"] = []byte(src)
	m, err := spec.Load(files)
	require.NoError(t, err)
	v := violated(t, m, "lifecycles_settle", Bounds{Depth: 12, Runs: 1, Revisions: 3}, "preparation")
	assert.Contains(t, v.Msg, "stuck: neither side can move and no timer is armed, yet core's preparation/prepare-1 is releasing")
}

// Core's turn machine follows the composition: a preparation table that
// left the Turn unclaimed when the Runtime refused its start would have
// Core requeue a running Turn, which the turn table refuses.
func TestTurnFollowsCounterexample(t *testing.T) {
	m := broken(t, "preparation.yaml", `    to: ready
    # decision: a rejected start leaves the handle's revision, and so its ready state, unchanged
    # (daemon-protocol.txt:114); Core may still release it (daemon-protocol.txt:112) or start it again.
    effects: [do record_rejection]`, `    to: ready
    effects: [do record_rejection, "core: do leave_turn_unclaimed"]`)
	v := violated(t, m, "turn_follows_its_run", small, "preparation", "run", "turn")
	assert.Contains(t, v.Msg, "Core's turn 1 got requeue in running, which the turn table refuses")
}

// The real tables with Core's turn machine: every order of events the
// composition produces is one the turn table accepts, and a Turn settles
// with its Run.
func TestTurnFollowsTheRealTables(t *testing.T) {
	b := Bounds{Depth: 10, Runs: 1, Inputs: 1, Faults: 1, Reconnects: 1, Revisions: 3}
	if testing.Short() {
		b.Depth = 8
	}
	rep, err := Check(Config{Model: loadSpec(t), Machines: []string{"preparation", "run", "turn"}, Bounds: b})
	require.NoError(t, err)
	for _, v := range rep.Violations {
		t.Errorf("%v\n%s", v, Mermaid(v))
	}
	assert.Contains(t, rep.Machines, "turn (Core's own)")
	assert.Greater(t, rep.States, 1000)
}

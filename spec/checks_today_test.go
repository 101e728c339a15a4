package spec

import (
	"fmt"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tables as they were before the protocol review of issue 6 are kept
// under testdata/today*: verbatim in today/, and with only the new
// declarations added in today_declared/ and today_answers/. The checks
// that review turned into rules must reject each of them, at the line of
// each finding.

type finding struct {
	file string // base name in the directory
	at   string // the reported line starts with this text
	msg  string
}

func requireFindings(t *testing.T, dir string, want []finding) {
	t.Helper()
	model, err := LoadDir(os.DirFS(path.Join("testdata", dir)), ".", "spec/testdata/"+dir)
	require.Error(t, err)
	require.Nil(t, model)
	lines := requireOneLineErrors(t, err)
	for _, f := range want {
		src, rerr := os.ReadFile(path.Join("testdata", dir, f.file))
		require.NoError(t, rerr)
		prefix := fmt.Sprintf("spec/testdata/%s/%s:%d: ", dir, f.file, lineOf(t, string(src), f.at))
		found := false
		for _, l := range lines {
			found = found || (strings.HasPrefix(l, prefix) && strings.Contains(l, f.msg))
		}
		assert.Truef(t, found, "want a line %q…%q; got:\n%s", prefix, f.msg, err)
	}
}

func TestTodaysTablesFailTheWireObligations(t *testing.T) {
	requireFindings(t, "today", []finding{
		// Core's copy could never leave shutting_down: its only way out was the Runtime's cleanup_settled.
		{"connection.yaml", "  - name: shutting_down", `core can reach state "shutting_down" but never settle from it: every way out is an event only the other peer fires (cleanup_settled)`},
		// No machine said what a failed send means.
		{"input.yaml", "  - name: prompt_steer\n", `message event "prompt_steer" declares no failed_send`},
		{"workspace_write.yaml", "  - name: commit\n", `message event "commit" declares no failed_send`},
		{"interaction.yaml", "  - name: ack_applied\n", `message event "ack_applied" declares no failed_send`},
		// Nor which request's effect an unknown outcome leaves open.
		{"preparation.yaml", "machine: preparation", `machine "preparation" has an unknown terminal but no dispatch event`},
		{"transfer.yaml", "machine: transfer", `machine "transfer" has an unknown terminal but no dispatch event`},
	})
}

func TestTodaysTablesFailTheProtocolChecks(t *testing.T) {
	requireFindings(t, "today_declared", []finding{
		// Item 1: the drain (the write and send budgets) was followed by a receipt send of its own: 20 s, not 15.
		{"input.yaml", "  - from: draining\n    on: drain_wait", `(draining, drain_wait) starts timer receipt_send when budget drain_wait expires`},
		{"input.yaml", "  - from: draining\n    on: [native_accepted, input_refused]", `(draining, native_accepted) starts timer receipt_send while budget drain_wait runs`},
		// A failed prompt_steer write was refused as impossible.
		{"input.yaml", "  - from: pending\n    on: \"*\"", `(pending, send_failed) rejects a failed send, but prompt_steer can be sent in "pending"`},
		// Item 2: the aborted terminal ended without releasing the owner, and
		// unknown was reachable without any commit attempt.
		{"workspace_write.yaml", "  - from: staging\n    on: chunk\n    to: aborted", `(staging, chunk) -> aborted ends the lifecycle with mutation_owner still held by core`},
		{"workspace_write.yaml", "  - from: [beginning, staging, chunk_sent, committing, unconfirmed]\n    on: process_exit", `(beginning, process_exit) -> unknown ends unknown, but "beginning" is reachable before any dispatch (event commit)`},
		{"workspace_write.yaml", "  - from: [committing, unconfirmed]\n    on: connection_lost", `(unconfirmed, connection_lost) -> unknown ends unknown, but "unconfirmed" is reachable before any dispatch`},
		// Item 3 (transfer side): unknown before commit.
		{"transfer.yaml", "  - from: [beginning, staging, chunk_sent, committing]\n    on: result_unknown", `(beginning, result_unknown) -> unknown ends unknown, but "beginning" is reachable before any dispatch (event commit)`},
		// Unknown ends where nothing was dispatched.
		{"preparation.yaml", "  - from: idle\n    on: connection_lost", `(idle, connection_lost) -> abandoned ends unknown, but "idle" is reachable before any dispatch`},
		{"interaction.yaml", "  - from: [pending, deciding, unconfirmed]\n    on: run_closed", `(pending, run_closed) -> orphaned ends unknown, but "pending" is reachable before any dispatch`},
	})
}

func TestTodaysTransferFailsTheAnswersTable(t *testing.T) {
	// Item 3: the table accepted failed (and unknown) before commit, which the
	// wire validator refused; the catalog's answers table now binds both.
	requireFindings(t, "today_answers", []finding{
		{"transfer.yaml", "  - from: [beginning, staging, chunk_sent, committing]\n    on: result_failed", `(staging, result_failed) accepts runtime_prepare_result outcome "failed", but "staging" is reachable before any runtime_prepare step it answers (commit`},
		{"transfer.yaml", "  - from: [beginning, staging, chunk_sent, committing]\n    on: result_unknown", `(chunk_sent, result_unknown) accepts runtime_prepare_result outcome "unknown"`},
	})
}

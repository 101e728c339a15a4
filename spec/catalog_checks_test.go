package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCatalogIdentitiesAndAnswers(t *testing.T) {
	model, err := Load(realSpec(t))
	require.NoError(t, err)
	c := model.Catalog

	ack, ok := c.Message("interaction_decision_ack")
	require.True(t, ok)
	require.Len(t, ack.IDs, 2)
	assert.Equal(t, "interaction", ack.IDs[0].Name)
	assert.Equal(t, "run", ack.IDs[1].Name)
	assert.Same(t, ack.IDs[0], ack.ID)
	routes := map[string][]string{}
	for _, dr := range ack.Drives {
		for _, id := range dr.IDs {
			routes[dr.Machine.Name] = append(routes[dr.Machine.Name], id.Name)
		}
	}
	assert.Equal(t, map[string][]string{"interaction": {"interaction", "run"}, "run": {"run"}}, routes)
	delta, _ := c.Message("delta")
	assert.Len(t, delta.IDs, 1)
	assert.Nil(t, delta.Drives[0].IDs, "a single-identity type routes no identity per drive")

	res, ok := c.Message("runtime_prepare_result")
	require.True(t, ok)
	req, _ := c.Message("runtime_prepare")
	assert.Same(t, req, res.RepliesTo)
	assert.True(t, res.MayAnswer("failed", "commit"))
	assert.False(t, res.MayAnswer("failed", "chunk"))
	assert.False(t, res.MayAnswer("unknown", "begin"))
	assert.True(t, res.MayAnswer("rejected", "begin"))
	assert.False(t, delta.MayAnswer("rejected", "begin"))
}

// TestWireAndCatalogChecks edits the real spec one finding at a time.
func TestWireAndCatalogChecks(t *testing.T) {
	cases := []struct {
		name, file, from, to string
		at                   string // the error's line starts with this text, in the edited file
		want                 string
	}{
		// wire obligations
		{"message event without failed_send", "run.yaml", "    failed_send: connection_lost\n    doc: reasoning text\n", "    doc: reasoning text\n", "  - name: thinking\n",
			`message event "thinking" declares no failed_send: name the local event its sender (runtime) fires when the write of thinking fails`},
		{"send of a type the machine has no event for", "workspace_read.yaml", `effects: ["core: do detach_observer"]`, `effects: ["core: do detach_observer", "core: send workspace_write"]`, "  - from: dispatched\n    on: observer_cancelled",
			`effect "core: send workspace_write" sends workspace_write, but workspace_read declares no event for it`},
		{"unknown terminal without a dispatch", "workspace_read.yaml", "    dispatch: true\n", "", "machine: workspace_read",
			`machine "workspace_read" has an unknown terminal but no dispatch event`},

		// instances
		{"drive without the machine's identity", CatalogFile, "      - {machine: run, event: execution_start, instance: {field: run_id}, registers: [{alias: start}]}",
			"      - {machine: run, event: execution_start, registers: [{alias: start}]}", "      - {machine: run, event: execution_start, registers",
			`message "execution_start" carries no run ID in its envelope, but run's instances are keyed by one`},
		{"alias nobody registers", CatalogFile, "registers: [{alias: start}]}", "}", "      - machine: run\n        by: state",
			`message "preparation_status" looks run up by alias "start", which no drive of run registers`},
		{"delivery nobody registers", CatalogFile, "      - {machine: run, event: prompt_cancel, registers: [{delivery: delivery_id}]}",
			"      - {machine: run, event: prompt_cancel}", "      - machine: run\n        id: run\n        by: applied",
			`message "interaction_decision_ack" looks run up by delivery ID, but no drive of run registers one`},
		{"connection machine addressed by id", CatalogFile, "      - {machine: connection, event: heartbeat, instance: connection}",
			"      - {machine: connection, event: heartbeat}", "      - {machine: connection, event: heartbeat}",
			`message "heartbeat" drives connection, whose one instance is the connection`},

		// identities
		{"drive without id on a multi-identity type", CatalogFile, "        id: run\n        by: applied\n        instance: {delivery: delivery_id}\n        events: {applied: cancel_ack_applied", "        by: applied\n        instance: {delivery: delivery_id}\n        events: {applied: cancel_ack_applied", "      - machine: run\n        by: applied",
			`message "interaction_decision_ack" carries several identities, so each drive names the ones it routes (id:)`},
		{"drive routes an identity the type lacks", CatalogFile, "        id: run\n        by: applied\n        instance: {delivery: delivery_id}\n        events: {applied: cancel_ack_applied", "        id: transfer\n        by: applied\n        instance: {delivery: delivery_id}\n        events: {applied: cancel_ack_applied", "        id: transfer",
			`drive of "interaction_decision_ack" routes identity "transfer", which the message does not carry`},
		{"identities of different forms", CatalogFile, "registered.\n    id: [interaction, run]\n", "registered.\n    id: [interaction, transfer]\n", "    id: [interaction, transfer]",
			`message "interaction_decision_ack" lists identities "interaction" and "transfer", which differ in form (uuid)`},
		{"identity no drive routes", CatalogFile, "registered.\n    id: [interaction, run]\n", "registered.\n    id: [interaction, run, operation]\n", "    id: [interaction, run, operation]",
			`message "interaction_decision_ack" may carry identity "operation", but no drive routes it to a machine`},
		{"drive id on a single-identity type", CatalogFile, "      - {machine: run, event: delta}", "      - {machine: run, id: run, event: delta}", "      - {machine: run, id: run, event: delta}",
			`message "delta" carries one identity, so its drives name none`},

		// answers
		{"outcome missing from answers", CatalogFile, "      unknown: [commit]\n    drives:\n      - machine: transfer", "    drives:\n      - machine: transfer", "      - machine: transfer\n        by: outcome",
			`runtime_prepare_result drives transfer on outcome "unknown", which answers of runtime_prepare_result does not list`},
		{"answers names a step the request lacks", CatalogFile, "      failed: [commit]\n", "      failed: [apply]\n", "  - type: runtime_prepare_result",
			`answers of runtime_prepare_result: outcome "failed" answers step "apply", which runtime_prepare does not drive transfer with`},
		{"replies_to an unknown type", CatalogFile, "    replies_to: runtime_prepare\n", "    replies_to: runtime_prep\n", "    replies_to: runtime_prep",
			`message "runtime_prepare_result" replies to unknown message type "runtime_prep"`},
		{"replies_to a type of the same sender", CatalogFile, "    replies_to: runtime_prepare\n", "    replies_to: preparation_status\n", "    replies_to: preparation_status",
			`message "runtime_prepare_result" replies to "preparation_status", which the same peer (runtime) sends`},
		{"answers without replies_to", CatalogFile, "    replies_to: runtime_prepare\n", "", "  - type: runtime_prepare_result",
			`message "runtime_prepare_result": replies_to and answers go together`},
		{"a machine accepts an outcome before the step it answers", "transfer.yaml",
			"  - from: [beginning, staging, chunk_sent]\n    on: [result_completed, result_failed, result_unknown]\n",
			"  - from: [beginning, staging, chunk_sent]\n    on: result_failed\n    to: failed\n    effects: [\"stop transfer_budget\", \"core: do release_slot\"]\n  - from: [beginning, staging, chunk_sent]\n    on: [result_completed, result_unknown]\n",
			"  - from: [beginning, staging, chunk_sent]\n    on: result_failed",
			`(beginning, result_failed) accepts runtime_prepare_result outcome "failed", but "beginning" is reachable before any runtime_prepare step it answers (commit, per spec/catalog.yaml answers) was sent`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := realSpec(t)
			key := "spec/" + c.file
			src := string(files[key])
			require.Equal(t, 1, strings.Count(src, c.from), "the edit must match exactly once")
			src = strings.Replace(src, c.from, c.to, 1)
			files[key] = []byte(src)
			_, err := Load(files)
			require.Error(t, err)
			want := fmt.Sprintf("%s:%d: ", key, lineOf(t, src, c.at))
			found := false
			for _, line := range strings.Split(err.Error(), "\n") {
				require.Regexp(t, `^spec/\S+\.yaml:\d+: `, line)
				found = found || (strings.HasPrefix(line, want) && strings.Contains(line, c.want))
			}
			assert.Truef(t, found, "want a line %q…%q; got:\n%s", want, c.want, err)
		})
	}
}

package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// realSpec reads every file of the real spec directory, keyed as LoadDir
// would name them.
func realSpec(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	matches, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	for _, m := range matches {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		files["spec/"+m] = b
	}
	return files
}

func TestCatalogLoadsAndCoversEveryMachineMessage(t *testing.T) {
	model, err := Load(realSpec(t))
	require.NoError(t, err)
	require.NotNil(t, model.Catalog)
	require.Regexp(t, `^\d+\.\d+\.\d+$`, model.Catalog.Version)
	require.NotEmpty(t, model.Capabilities)

	// Every message event of every machine is fired by a drive of its type.
	driven := map[*Event]bool{}
	for _, msg := range model.Catalog.Messages {
		for _, dr := range msg.Drives {
			if dr.Event != nil {
				driven[dr.Event] = true
			}
			for _, k := range dr.Keyed {
				driven[k.Event] = true
				require.Equal(t, msg.Type, k.Event.Message)
			}
		}
	}
	for _, m := range model.Machines {
		for _, e := range m.Events {
			if e.Kind == EventMessage {
				require.True(t, driven[e], "%s.%s", m.Name, e.Name)
			}
		}
	}
}

func TestCatalogErrors(t *testing.T) {
	cases := []struct {
		name     string
		file     string // which file to edit
		from, to string
		want     string
	}{
		{"unknown machine", CatalogFile, "      - {machine: run, event: delta}", "      - {machine: runn, event: delta}", `drives unknown machine "runn"`},
		{"unknown event", CatalogFile, "      - {machine: run, event: delta}", "      - {machine: run, event: deltaa}", `drives unknown run event "deltaa" (did you mean delta?)`},
		{"event of another type", CatalogFile, "      - {machine: run, event: delta}", "      - {machine: run, event: thinking}", `which the machine declares for "thinking"`},
		{"undriven machine event", CatalogFile, "      - {machine: run, event: delta}\n", "", `event "delta" is never fired: no drive of "delta"`},
		{"wrong sender", CatalogFile, "  - type: delta\n    from: runtime", "  - type: delta\n    from: core", `"delta" is sent by core, but run event "delta" says runtime sends it`},
		{"duplicate type", CatalogFile, "  - type: thinking\n", "  - type: delta\n", `message type "delta" is already declared`},
		{"duplicate payload", CatalogFile, "    payload: Thinking\n", "    payload: Delta\n", "payload type Delta already belongs to"},
		{"bad version", CatalogFile, `version: "0.11.0"`, `version: "0.11"`, `version "0.11" must be major.minor.patch`},
		{"unknown family", CatalogFile, "    family: suspension\n    id: suspension_request\n    payload: EnvironmentQuiesce\n", "    family: suspend\n    id: suspension_request\n    payload: EnvironmentQuiesce\n", `unknown family "suspend"`},
		{"machine names an undeclared type", "preparation.yaml", "    message: execution_release\n", "    message: execution_relinquish\n", `names wire type "execution_relinquish", which spec/catalog.yaml does not declare`},
		{"settled state unknown", CatalogFile, "{one_in_flight: input, settled: [unconfirmed]}", "{one_in_flight: input, settled: [unconfirmd]}", `settled names unknown input state "unconfirmd"`},
		{"settled state terminal", CatalogFile, "{one_in_flight: input, settled: [unconfirmed]}", "{one_in_flight: input, settled: [accepted]}", `input state "accepted" is terminal, so it is settled already`},
		{"settled on a state requirement", CatalogFile, "      - {machine: connection, states: [live]}\n    drives:\n      - {machine: preparation, event: execution_prepare}", "      - {machine: connection, states: [live], settled: [live]}\n    drives:\n      - {machine: preparation, event: execution_prepare}", `a requirement is either`},
		{"duplicate capability", CapabilitiesFile, "  - name: usage\n", "  - name: streaming\n", `capability "streaming" is already declared`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := realSpec(t)
			key := "spec/" + c.file
			src := string(files[key])
			require.Equal(t, 1, strings.Count(src, c.from), "the edit must match exactly once")
			files[key] = []byte(strings.Replace(src, c.from, c.to, 1))
			_, err := Load(files)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			for _, line := range strings.Split(err.Error(), "\n") {
				require.Regexp(t, `^spec/\S+\.yaml:\d+: `, line)
			}
		})
	}
}

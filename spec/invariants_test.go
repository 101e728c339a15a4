package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInvariantsLoad(t *testing.T) {
	model, err := Load(realSpec(t))
	require.NoError(t, err)
	kinds := map[InvariantKind]bool{}
	for _, inv := range model.Invariants {
		kinds[inv.Kind] = true
		assert.NotEmpty(t, inv.Doc, inv.Name)
	}
	for _, k := range invariantKinds {
		assert.True(t, kinds[k], "the real spec declares no %s invariant", k)
	}
	var ev *Invariant
	for _, inv := range model.Invariants {
		if inv.Kind == KindEffectRequires {
			ev = inv
		}
	}
	require.NotNil(t, ev)
	assert.Equal(t, RoleRuntime, ev.Role)
	assert.Equal(t, "preparation", ev.Requires.Machine)
}

// TestInvariantsErrors breaks invariants.yaml one way at a time and checks
// each mistake is reported at its line.
func TestInvariantsErrors(t *testing.T) {
	const src = `invariants:
  - name: a
    kind: evidence
    role: core
    machines: [run]
    doc: d
  - name: b
    kind: projection
    machine: input
    alone: {runtime: [draining]}
    doc: d
`
	for _, tc := range []struct {
		name, old, new, needle, want string
	}{
		{"unknown kind", "kind: evidence", "kind: evidenc", "kind: evidenc", `unknown kind "evidenc"`},
		{"unknown machine", "machines: [run]", "machines: [runn]", "machines: [runn]", `no machine "runn"`},
		{"unknown state", "[draining]", "[drainin]", "alone: {runtime: [drainin]}", `machine input has no state "drainin"`},
		{"key of another kind", "    machine: input\n", "    machine: input\n    types: [done]\n", "    types: [done]\n", `key "types" does not apply to kind projection`},
		{"missing parameter", "    machines: [run]\n", "", "  - name: a", `kind evidence needs "machines"`},
		{"bad role", "role: core", "role: both", "role: both", "role must be core or runtime"},
		{"duplicate name", "name: b", "name: a", "  - name: a\n    kind: projection", `invariant "a" is already declared`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := realSpec(t)
			bad := strings.Replace(src, tc.old, tc.new, 1)
			require.NotEqual(t, src, bad)
			files["spec/"+InvariantsFile] = []byte(bad)
			_, err := Load(files)
			require.Error(t, err)
			lines := requireOneLineErrors(t, err)
			require.Len(t, lines, 1, "got:\n%s", err)
			line := lineOf(t, bad, tc.needle)
			assert.Contains(t, lines[0], fmt.Sprintf("spec/invariants.yaml:%d: ", line))
			assert.Contains(t, lines[0], tc.want)
		})
	}
}

package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// interaction_decision_ack carries the interaction ID or the Run ID
// (daemon-protocol.txt:80); the catalog says which machine each reaches.
func TestDecisionAckIdentities(t *testing.T) {
	e, ok := Lookup(TypeInteractionDecisionAck)
	require.True(t, ok)
	require.Equal(t, []Identity{IdentityInteraction, IdentityRun}, e.Identities)
	require.Equal(t, IdentityInteraction, e.Identity)
	routes := map[string][]Identity{}
	for _, d := range e.Drives {
		routes[d.Machine] = d.Identities
	}
	require.Equal(t, map[string][]Identity{
		"interaction": {IdentityInteraction, IdentityRun},
		"run":         {IdentityRun},
	}, routes)
	for _, id := range []string{"perm_1a2b3c4d", "6f1c2b8e-3d4a-4e5f-9a0b-1c2d3e4f5a6b"} {
		require.NoError(t, CheckID(e, id), "either identity's form is accepted")
	}
}

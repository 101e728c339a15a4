package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnvelopeMatchesEncodingJSON pins the hand-written envelope to the
// bytes encoding/json writes for the same envelope.
func TestEnvelopeMatchesEncodingJSON(t *testing.T) {
	for _, id := range []string{"run-1", "a\"b\\c", "tab\tnl\nx", "<&>", "\u2028x\u2029", "é", "\x01\x1f", "", "bad\xff"} {
		for _, trace := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "<x>"} {
			p := Delta{Delta: "hi", Sequence: 1}
			got, err := marshalEnvelope(id, p, trace)
			require.NoError(t, err)
			raw, err := json.Marshal(p)
			require.NoError(t, err)
			want, err := json.Marshal(Envelope{Type: "delta", ID: id, Payload: raw, Trace: trace})
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "id %q trace %q", id, trace)
		}
	}
}

package wire

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSelfEncodersMatchEncodingJSON: a self-encoding payload's bytes are
// those of encoding/json, escapes included (HTML characters, control
// characters, U+2028 and U+2029), and Encode's frame is the one the
// general path writes.
func TestSelfEncodersMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "é", "\u2028", "\u2029", "<", ">", "&", "\"", "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "😀", " ", "words "}
	text := func() string {
		var s string
		for range rng.IntN(12) + 1 {
			s += pieces[rng.IntN(len(pieces))]
		}
		return s
	}
	for i := range 5000 {
		d := Delta{Delta: text(), Sequence: rng.Uint64() >> rng.IntN(64)}
		if i%2 == 0 {
			d.ItemID = "item " + text()
		}
		want, err := json.Marshal(d)
		require.NoError(t, err)
		if got, ok := d.appendJSON(nil); ok {
			require.Equal(t, string(want), string(got))
		} else {
			require.True(t, lineSeparators(d.Delta) || lineSeparators(d.ItemID), "%q declined", d.Delta)
		}

		frame, err := Encode("run-1", d, "")
		require.NoError(t, err)
		env, err := json.Marshal(Envelope{Type: TypeDelta, ID: "run-1", Payload: want})
		require.NoError(t, err)
		require.JSONEq(t, string(env), string(frame))
		m, err := Decode(frame, RuntimeToCore)
		require.NoError(t, err)
		require.Equal(t, d, m.Payload)
	}
}

func TestSelfEncoderRefusesInvalidUTF8(t *testing.T) {
	_, err := Encode("run-1", Delta{Delta: "ok\xff"}, "")
	require.ErrorContains(t, err, "payload.delta")
	_, err = Encode("run-1", Delta{Delta: "ok", ItemID: "\xc3"}, "")
	require.ErrorContains(t, err, "payload.item_id")
}

package wire

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// appendJSONString escapes as encoding/json does, U+2028 and U+2029
// wherever they stand (they were missed before an escaped byte).
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 4))
	parts := []string{"a", "é", "\u2028", "\u2029", "\u2027", "\t", "\x00", "\x1f", `"`, `\`, "<", ">", "&", "\u00e2", "€", "\U0001F600", " "}
	for range 2000 {
		var s string
		for range rng.IntN(8) {
			s += parts[rng.IntN(len(parts))]
		}
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendJSONString(nil, s)), "%q", s)
	}
}

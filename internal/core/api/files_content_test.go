package api

import (
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeContent writes exactly writeJSON's bytes, for random data of every
// size class (empty, below and across pieces, padding) and paths that
// need escaping.
func TestWriteContentIsWriteJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 5))
	paths := []string{"a.txt", `dir/<b>&"c"` + "\u2028\t.bin", "é/ü"}
	for i := range 60 {
		n := []int{0, 1, 2, 3, contentPiece - 1, contentPiece, contentPiece + 1, 3*contentPiece + 2, 1 << 20}[i%9]
		if i >= 9 {
			n = rng.IntN(1 << 20)
		}
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		c := FilesContent{SessionID: "ses-" + paths[i%3], Path: paths[i%3], Data: data, SizeBytes: n, Truncated: i%2 == 0}
		want := httptest.NewRecorder()
		writeJSON(want, 200, c)
		got := httptest.NewRecorder()
		require.NoError(t, writeContent(got, c))
		require.Equal(t, want.Code, got.Code)
		require.Equal(t, want.Header(), got.Header())
		require.Equal(t, want.Body.String(), got.Body.String(), "%d bytes", n)
		var back FilesContent
		require.NoError(t, json.Unmarshal(got.Body.Bytes(), &back))
		require.Equal(t, data, back.Data)
	}
}

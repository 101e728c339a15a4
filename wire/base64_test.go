package wire

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The AVX2 coder must be encoding/base64 byte for byte: same text out,
// same bytes in, the same inputs refused. Long inputs matter here, since
// the vector loop only runs on blocks of 32 characters and more and every
// position inside a block takes another lane.

func TestAppendBase64MatchesEncodingBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 3, 23, 24, 25, 47, 48, 95, 96, 97, 1000, ChunkBytes, ChunkBytes + 1, 1 << 20} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rng.UintN(256))
		}
		prefix := []byte(`"data":"`)
		got := appendBase64(bytes.Clone(prefix), src)
		require.Equal(t, string(prefix)+base64.StdEncoding.EncodeToString(src), string(got), "n=%d", n)
		require.Equal(t, base64.StdEncoding.EncodedLen(n), base64Len(n))
	}
}

func TestDecodeBase64StrictLongInputsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	raw := make([]byte, ChunkBytes)
	for i := range raw {
		raw[i] = byte(rng.UintN(256))
	}
	enc := []byte(base64.StdEncoding.EncodeToString(raw))
	// dst of exactly DecodedLen plus a guard: nothing may be written past it.
	dst := make([]byte, base64.StdEncoding.DecodedLen(len(enc))+16)
	for i := range dst {
		dst[i] = 0xA5
	}
	n, ok := decodeBase64Strict(dst[:base64.StdEncoding.DecodedLen(len(enc))], enc)
	require.True(t, ok)
	require.Equal(t, raw, dst[:n])
	require.Equal(t, bytes.Repeat([]byte{0xA5}, 16), dst[len(dst)-16:], "wrote past dst")

	for range 3000 {
		mut := bytes.Clone(enc)
		pos := rng.IntN(len(mut))
		mut[pos] = byte(rng.UintN(256))
		n, ok := decodeBase64Strict(dst, mut)
		want, err := base64.StdEncoding.Strict().DecodeString(string(mut))
		switch {
		case mut[pos] == '\n' || mut[pos] == '\r':
			require.False(t, ok, "line break at %d accepted", pos)
		case ok:
			require.NoError(t, err, "byte %#x at %d accepted", mut[pos], pos)
			require.Equal(t, want, dst[:n])
		default:
			require.Error(t, err, "byte %#x at %d refused", mut[pos], pos)
		}
	}
	// Padding and junk inside a vector block, never only at the end.
	for _, pos := range []int{0, 5, 31, 32, 33, 63, 4096, len(enc) / 2} {
		for _, c := range []byte{'=', '-', '_', ' ', 0, 0x80, 0xff, '"', '\\'} {
			mut := bytes.Clone(enc)
			mut[pos] = c
			_, ok := decodeBase64Strict(dst, mut)
			require.False(t, ok, "%q at %d accepted", c, pos)
		}
	}
}

func FuzzDecodeBase64Strict(f *testing.F) {
	f.Add([]byte("QUJD"))
	f.Add([]byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("agentwire"), 20))))
	f.Add([]byte("QQ=="))
	f.Fuzz(func(t *testing.T, src []byte) {
		dst := make([]byte, base64.StdEncoding.DecodedLen(len(src))+2)
		n, ok := decodeBase64Strict(dst, src)
		want, err := base64.StdEncoding.Strict().DecodeString(string(src))
		hasBreak := bytes.ContainsAny(src, "\r\n")
		if ok {
			require.False(t, hasBreak)
			require.NoError(t, err)
			require.Equal(t, want, dst[:n])
			return
		}
		if !hasBreak {
			require.Error(t, err, "%q refused", src)
		}
	})
}

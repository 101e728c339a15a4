package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hand-written chunk encoder writes exactly Encode's bytes (issue 25):
// random sizes (1 byte to a full chunk, every base64 padding), offsets
// (0 is omitted) and IDs, with and without a trace, into a dirty buffer
// that already holds other bytes.
func TestAppendWriteChunkIsEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	traces := []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-<&>\u2028-x"}
	for i := range 300 {
		n := 1 + rng.IntN(ChunkBytes)
		switch i % 5 {
		case 0:
			n = ChunkBytes
		case 1:
			n = 1 + rng.IntN(4)
		}
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		offset := int64(rng.IntN(MaxTransferBytes - n))
		if i%7 == 0 {
			offset = 0
		}
		id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Uint64()&(1<<48-1))
		trace := traces[i%len(traces)]
		p := WorkspaceWrite{Step: StepChunk, Offset: offset, Data: data}
		want, err := Encode(id, p, trace)
		require.NoError(t, err)

		prefix := []byte("dirty")
		buf := make([]byte, len(prefix), len(prefix)+ChunkFrameCap(n, id))
		copy(buf, prefix)
		got, err := AppendWriteChunk(buf, id, offset, data)
		require.NoError(t, err)
		require.Equal(t, prefix, got[:len(prefix)], "appends")
		frame, err := WithTrace(got[len(prefix):], TypeWorkspaceWrite, trace)
		require.NoError(t, err)
		require.Equal(t, string(want), string(frame), "chunk %d: %d bytes at %d, trace %q", i, n, offset, trace)
		if trace == traces[1] {
			require.Equal(t, &buf[:1][0], &got[:1][0], "a traceparent fits the capacity ChunkFrameCap leaves")
		}
		_, err = Decode(frame, CoreToRuntime)
		require.NoError(t, err)
	}
}

// It refuses what Encode refuses, with Encode's error.
func TestAppendWriteChunkRefusesAsEncode(t *testing.T) {
	const id = "00000000-0000-4000-8000-000000000001"
	for name, c := range map[string]struct {
		id     string
		offset int64
		data   []byte
	}{
		"empty":    {id, 0, nil},
		"too big":  {id, 0, make([]byte, ChunkBytes+1)},
		"bad id":   {"not-a-uuid", 0, []byte{1}},
		"no id":    {"", 0, []byte{1}},
		"negative": {id, -1, []byte{1}},
		"past end": {id, MaxTransferBytes, []byte{1}},
	} {
		_, want := Encode(c.id, WorkspaceWrite{Step: StepChunk, Offset: c.offset, Data: c.data}, "")
		require.Error(t, want, name)
		got, err := AppendWriteChunk(nil, c.id, c.offset, c.data)
		require.Equal(t, want, err, name)
		require.Empty(t, got, name)
	}
	_, err := WithTrace([]byte(`{}`), TypeWorkspaceWrite, "\xff")
	requireFieldError(t, err, "trace", RuleFormat, "an invalid trace is refused as Encode refuses it")
}

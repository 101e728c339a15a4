package wire

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// genericFrame is the frame encoding/json writes for p: the payload, then
// the envelope around it.
func genericFrame(t *testing.T, id string, p Payload, trace string) string {
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	f, err := json.Marshal(Envelope{Type: p.MessageType(), ID: id, Payload: raw, Trace: trace})
	require.NoError(t, err)
	return string(f)
}

// The hand-written read and export result encoders write exactly
// encoding/json's bytes, for random data, flags, codes and traces.
func TestPayloadAppendersAreEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 3))
	const id = "00000000-0000-4000-8000-000000000001"
	traces := []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	codes := []string{"", "not_found", "read_unconfirmed", `q"<&>` + "\u2028\t\x01é"}
	for i := range 200 {
		data := make([]byte, rng.IntN(3)*rng.IntN(ChunkBytes)+i%4)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		if i%9 == 0 {
			data = nil
		}
		code, trace := codes[i%len(codes)], traces[i%len(traces)]
		off := int64(rng.IntN(MaxExportBytes))
		payloads := []payloadAppender{
			WorkspaceReadResult{Outcome: "completed", Data: data, Truncated: i%3 == 0, CloseAcknowledged: i%2 == 0, ErrorCode: code},
			WorkspaceExportResult{Outcome: "chunk", Offset: &off, Data: data, ErrorCode: code},
			WorkspaceExportResult{Outcome: "failed", ErrorCode: code},
		}
		for _, a := range payloads {
			p := a.(Payload)
			got, ok := appendEnvelope(id, p, a, trace)
			require.True(t, ok)
			require.Equal(t, genericFrame(t, id, p, trace), string(got), "%T %d", p, i)
			require.LessOrEqual(t, len(got), a.jsonSize()+2*(len(p.MessageType())+len(id)+len(trace))+48, "sized up front")
		}
	}
	// A directory listing is left to encoding/json, and Encode still
	// writes it.
	tr := false
	dir := WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Directory: &WorkspaceDirectory{Entries: []WorkspaceDirectoryEntry{{Name: "a", Kind: EntryDirectory}}, Truncated: &tr}}
	_, ok := appendEnvelope(id, dir, dir, "")
	require.False(t, ok)
	f, err := Encode(id, dir, "")
	require.NoError(t, err)
	require.Equal(t, genericFrame(t, id, dir, ""), string(f))
}

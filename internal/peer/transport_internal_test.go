package peer

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

// wsPair is a loopback WebSocket: the server side wrapped as a Transport,
// the client side raw.
func wsPair(t *testing.T) (*wsTransport, *websocket.Conn) {
	s, c := RawWebSocketPair(t)
	return WebSocket(s).(*wsTransport), c
}

// Frames of every size class come back whole: small ones at their exact
// size, chunk-sized ones in a pooled buffer that Recycle takes back, larger
// ones at their exact size; the edges of the pooled buffer included.
func TestWebSocketReadHandsOverPooledChunkFrames(t *testing.T) {
	tr, c := wsPair(t)
	ctx := context.Background()
	for _, n := range []int{2, smallFrame, smallFrame + 1, 87_600, frameBufBytes - 1, frameBufBytes, frameBufBytes + 1, 3 * frameBufBytes} {
		frame := bytes.Repeat([]byte{'a'}, n)
		frame[0], frame[n-1] = '"', '"'
		require.NoError(t, c.Write(ctx, websocket.MessageText, frame))
		got, err := tr.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, frame, got, "n=%d", n)
		if n > smallFrame && n < frameBufBytes {
			require.Equal(t, frameBufBytes, cap(got), "a chunk-sized frame is handed over in the pooled buffer (n=%d)", n)
		} else if n <= smallFrame {
			require.Less(t, cap(got), frameBufBytes, "a copy of its own (n=%d)", n)
		}
		tr.Recycle(got)
	}
}

// After recycleFrame gives a bulk frame back, the decoded message keeps
// nothing of it: the frame's bytes overwritten, the message decodes to the
// same values as one decoded from a frame nobody touched.
func TestRecycledFrameLeavesTheMessageIntact(t *testing.T) {
	data := make([]byte, wire.ChunkBytes)
	_, _ = rand.Read(data)
	size := int64(len(data))
	transfer := "0f8fad5b-d9cb-469f-a165-70867728950e"
	mutation := "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	offset := int64(0)
	frames := []struct {
		id      string
		payload wire.Payload
		dir     wire.Direction
	}{
		{mutation, wire.WorkspaceWrite{Step: wire.StepChunk, Offset: 65536, Data: data}, wire.CoreToRuntime},
		{mutation, wire.WorkspaceWrite{Step: wire.StepBegin, EnvironmentID: "3f2504e0-4f89-41d3-9a0c-0305e82c3301", SessionID: "6ba7b810-9dad-41d1-80b4-00c04fd430c8", Path: "src/a.txt", SizeBytes: &size, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}, wire.CoreToRuntime},
		{transfer, wire.RuntimePrepare{Step: wire.StepChunk, Offset: 131072, Data: data}, wire.CoreToRuntime},
		{mutation, wire.WorkspaceReadResult{Outcome: "completed", Data: data[:40000], Truncated: true, CloseAcknowledged: true}, wire.RuntimeToCore},
		{mutation, wire.WorkspaceExportResult{Outcome: "chunk", Offset: &offset, Data: data}, wire.RuntimeToCore},
	}
	for _, f := range frames {
		frame, err := wire.Encode(f.id, f.payload, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		require.NoError(t, err)
		want, err := wire.Decode(bytes.Clone(frame), f.dir)
		require.NoError(t, err, "%T", f.payload)

		buf := new([frameBufBytes]byte)
		pooled := append(buf[:0], frame...)
		got, err := wire.Decode(pooled, f.dir)
		require.NoError(t, err)
		tr := &countingRecycler{}
		recycleFrame(tr, pooled, &got, nil)
		require.Equal(t, 1, tr.n, "%T frames are given back", f.payload)
		for i := range buf {
			buf[i] = 'X'
		}
		require.Nil(t, got.Envelope.Payload)
		require.Equal(t, want.Type, got.Type)
		require.Equal(t, want.ID, got.ID)
		require.Equal(t, want.Trace, got.Trace)
		require.Equal(t, want.Payload, got.Payload, "%T", f.payload)
	}
	// Anything else keeps its frame: a delta's arrived bytes are what Core
	// journals.
	frame, err := wire.Encode("run-1", wire.Delta{Delta: "hi", Sequence: 1}, "")
	require.NoError(t, err)
	m, err := wire.Decode(frame, wire.RuntimeToCore)
	require.NoError(t, err)
	tr := &countingRecycler{}
	recycleFrame(tr, frame, &m, nil)
	require.Zero(t, tr.n)
	require.NotNil(t, m.Envelope.Payload)
}

type countingRecycler struct {
	Transport
	n int
}

func (r *countingRecycler) Recycle([]byte) { r.n++ }

package wire

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func genericExportResult(data []byte) (WorkspaceExportResult, error) {
	type plain WorkspaceExportResult
	var r WorkspaceExportResult
	err := decodeBounded(TypeWorkspaceExportResult, data, (*plain)(&r))
	return r, err
}

// The direct decoder gives the generic decoder's value, and (by falling
// back to it) its error, for random chunks and malformed results.
func TestExportResultDecodeIsGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 6))
	var docs []string
	for i := range 200 {
		data := make([]byte, 1+rng.IntN(ChunkBytes))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		off := int64(rng.IntN(MaxExportBytes))
		r := WorkspaceExportResult{Outcome: "chunk", Offset: &off, Data: data}
		if i%5 == 0 {
			r = WorkspaceExportResult{Outcome: "failed", Offset: &off, ErrorCode: "export_failed"}
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		docs = append(docs, string(b))
	}
	enc := base64.StdEncoding.EncodeToString([]byte("hello"))
	docs = append(docs,
		`{}`, `{"outcome":"chunk","offset":0,"data":"`+enc+`"}`, `{"offset":-0}`, `{"offset":-1}`,
		`{"offset":01}`, `{"offset":1.0}`, `{"offset":1e3}`, `{"offset":-}`, `{"offset":null}`, `{"offset":"1"}`,
		`{"offset":99999999999999999999}`, `{"offset":1,"offset":2}`, `{"offset":1 }`, `{"offset":1x}`,
		`{"outcome":"chunk","data":"aGVsbG8"}`, `{"data":"aGVs\nbG8="}`, `{"data":"aGVs\\bG8="}`, `{"data":null}`,
		`{"outcome":"a\u0000"}`, "{\"outcome\":\"a\x01\"}", `{"outcome":"\xff"}`, `{"extra":1}`, `{"outcome":"chunk",}`,
		`{"outcome":"chunk"} {}`, `[]`, `null`, `{"data":""}`, `{"error_code":"x","outcome":"failed","offset":3}`,
	)
	for _, doc := range docs {
		want, wantErr := genericExportResult([]byte(doc))
		var got WorkspaceExportResult
		err := got.UnmarshalJSON([]byte(doc))
		require.Equal(t, wantErr, err, "%.200s", doc)
		if wantErr == nil {
			require.Equal(t, want, got, "%.200s", doc)
		}
	}
	_, ok := decodeExportResultDirect([]byte(docs[1]))
	require.True(t, ok, "a chunk takes the direct path")
}

func FuzzExportResultDecodeDirect(f *testing.F) {
	f.Add([]byte(`{"outcome":"chunk","offset":65536,"data":"aGVsbG8="}`))
	f.Add([]byte(`{"outcome":"failed","offset":0,"error_code":"export_failed"}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := decodeExportResultDirect(doc)
		if !ok {
			return
		}
		want, err := genericExportResult(doc)
		require.NoError(t, err, "%q", doc)
		require.Equal(t, want, got, "%q", doc)
	})
}

// One export chunk's payload decoded the checked way and directly (issue
// 25): go test -run '^$' -bench ExportResultDecode ./wire/
func BenchmarkExportResultDecode(b *testing.B) {
	data := make([]byte, ChunkBytes)
	for i := range data {
		data[i] = byte(i * 7)
	}
	off := int64(ChunkBytes)
	doc, err := json.Marshal(WorkspaceExportResult{Outcome: "chunk", Offset: &off, Data: data})
	require.NoError(b, err)
	b.Run("checked", func(b *testing.B) {
		b.SetBytes(ChunkBytes)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := genericExportResult(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(ChunkBytes)
		b.ReportAllocs()
		for b.Loop() {
			var r WorkspaceExportResult
			if err := r.UnmarshalJSON(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package wire

import (
	"encoding/base64"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// generalWrite decodes a workspace_write payload the general way, as
// before decodeChunkStep existed.
func generalWrite(data []byte) (WorkspaceWrite, error) {
	type plain WorkspaceWrite
	var p WorkspaceWrite
	err := decodeBounded(TypeWorkspaceWrite, data, (*plain)(&p))
	return p, err
}

func generalPrepare(data []byte) (RuntimePrepare, error) {
	type plain RuntimePrepare
	var p RuntimePrepare
	err := decodeBounded(TypeRuntimePrepare, data, (*plain)(&p))
	return p, err
}

// checkChunkStep: whatever the fast path accepts, the general path accepts
// too, with the same step, offset and bytes.
func checkChunkStep(t *testing.T, payload []byte) bool {
	t.Helper()
	off, d, ok := decodeChunkStep(payload)
	if !ok {
		return false
	}
	defer ReleaseChunk(d)
	w, err := generalWrite(payload)
	require.NoError(t, err, "fast path accepted %.200q", payload)
	require.Equal(t, StepChunk, w.Step)
	require.Equal(t, w.Offset, off)
	require.Equal(t, []byte(w.Data), d)
	rp, err := generalPrepare(payload)
	require.NoError(t, err)
	require.Equal(t, []byte(rp.Data), d)
	return true
}

func TestDecodeBase64StrictMatchesEncodingBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dst := make([]byte, 1<<12)
	for range 20000 {
		raw := make([]byte, rng.IntN(300))
		for i := range raw {
			raw[i] = byte(rng.UintN(256))
		}
		enc := []byte(base64.StdEncoding.EncodeToString(raw))
		n, ok := decodeBase64Strict(dst, enc)
		require.True(t, ok, "%q", enc)
		require.Equal(t, raw, dst[:n])
		// One byte changed, anywhere: the fast decoder accepts it only if
		// the strict standard decoder does, and then decodes the same bytes.
		if len(enc) > 0 {
			mut := []byte(string(enc))
			mut[rng.IntN(len(mut))] = byte(rng.UintN(256))
			n, ok := decodeBase64Strict(dst, mut)
			want, err := base64.StdEncoding.Strict().DecodeString(string(mut))
			if ok {
				require.NoError(t, err, "%q", mut)
				require.Equal(t, want, dst[:n])
			} else if !strings.ContainsAny(string(mut), "\r\n") {
				require.Error(t, err, "%q was refused", mut)
			}
		}
	}
	for _, bad := range []string{"QQ=", "QQ=A", "Q===", "QR==", "QUI=QUJD", "QUJ=", "QUJD\n", "QU\\D"} {
		_, ok := decodeBase64Strict(dst, []byte(bad))
		require.False(t, ok, bad)
	}
}

func TestDecodeChunkStepAgreesWithTheGeneralPath(t *testing.T) {
	body := make([]byte, ChunkBytes)
	for i := range body {
		body[i] = byte(i * 31)
	}
	data := base64.StdEncoding.EncodeToString(body)
	small := base64.StdEncoding.EncodeToString([]byte("hello, world"))
	for _, p := range []string{
		`{"step":"chunk","offset":65536,"data":"` + data + `"}`,
		`{"data":"` + small + `","offset":0,"step":"chunk"}`,
		` { "step" : "chunk" , "data" : "` + small + `" } `,
		`{"step":"chunk","offset":-0,"data":"` + small + `"}`,
	} {
		require.True(t, checkChunkStep(t, []byte(p)), "%.100s", p)
	}
	// Each of these goes to the general path, which words its error or
	// decodes what the fast path does not read.
	for _, p := range []string{
		`{"step":"chunk","offset":1.0,"data":"` + small + `"}`,
		`{"step":"chunk","offset":1e3,"data":"` + small + `"}`,
		`{"step":"chunk","offset":99999999999999999999,"data":"` + small + `"}`,
		`{"step":"chunk","step":"chunk","data":"` + small + `"}`,
		`{"step":"chunk","data":"` + small + `","data":"` + small + `"}`,
		`{"step":"chunk","data":""}`,
		`{"step":"chunk","data":null}`,
		`{"step":"chunk"}`,
		`{"offset":0,"data":"` + small + `"}`,
		`{"step":"begin","data":"` + small + `"}`,
		`{"step":"chunkx","data":"` + small + `"}`,
		`{"st\u0065p":"chunk","data":"` + small + `"}`,
		`{"step":"chunk","data":"aGVsbG8s\/IHdvcmxk"}`,
		`{"step":"chunk","data":"aGVsbG8sIHdvcmxk\n"}`,
		`{"step":"chunk","data":"aGVsbG8sIHdvcmxk","path":"a"}`,
		`{"step":"chunk","data":"aGVsbG8sIHdvcmxk"}x`,
		`{"step":"chunk","data":"aGVsbG8sIHdvcmxk",}`,
		`{"step":"chunk","data":"` + data + `QUJD"}`,
		`["step","chunk"]`,
	} {
		_, _, ok := decodeChunkStep([]byte(p))
		require.False(t, ok, "%.200s", p)
	}
}

func FuzzDecodeChunkStep(f *testing.F) {
	f.Add([]byte(`{"step":"chunk","offset":3,"data":"aGVsbG8="}`))
	f.Add([]byte(`{"data":"aGk=","step":"chunk"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkChunkStep(t, payload)
	})
}

func TestReleaseChunkTakesOnlyPoolBuffers(t *testing.T) {
	ReleaseChunk(nil)
	ReleaseChunk(make([]byte, 10))
	_, d, ok := decodeChunkStep([]byte(`{"step":"chunk","data":"aGk="}`))
	require.True(t, ok)
	require.Equal(t, []byte("hi"), d)
	require.Equal(t, chunkBufBytes, cap(d))
	ReleaseChunk(d)
}

// BenchmarkChunkBase64: one op decodes one 64 KiB chunk's text.
//
//	go test -run '^$' -bench ChunkBase64 ./wire/
func BenchmarkChunkBase64(b *testing.B) {
	body := make([]byte, ChunkBytes)
	for i := range body {
		body[i] = byte(i * 7)
	}
	enc := []byte(base64.StdEncoding.EncodeToString(body))
	dst := make([]byte, chunkBufBytes)
	b.Run("encoding-base64", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := base64.StdEncoding.Strict().Decode(dst, enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict-quartets", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, ok := decodeBase64Strict(dst, enc); !ok {
				b.Fatal("refused")
			}
		}
	})
}

type plainWriteForBench WorkspaceWrite

var reflectTypeOfPlainWrite = reflect.TypeFor[plainWriteForBench]()

// BenchmarkChunkStepDecode: one op decodes one 64 KiB workspace_write
// chunk payload, the general way or by decodeChunkStep.
func BenchmarkChunkStepDecode(b *testing.B) {
	body := make([]byte, ChunkBytes)
	for i := range body {
		body[i] = byte(i * 7)
	}
	payload := []byte(`{"step":"chunk","offset":65536,"data":"` + base64.StdEncoding.EncodeToString(body) + `"}`)
	b.Run("general", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			var p WorkspaceWrite
			if checkJSON(payload, schemaFor(reflectTypeOfPlainWrite)) != nil {
				b.Fatal("refused")
			}
			p, _ = decodeWriteStep(payload)
			_ = p
		}
	})
	b.Run("chunk-step", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			_, d, ok := decodeChunkStep(payload)
			if !ok {
				b.Fatal("refused")
			}
			ReleaseChunk(d)
		}
	})
}
